package host

// sliceMemory is linear memory in a Go slice with its whole capacity
// reserved up front, so that growing never copies.
type sliceMemory struct {
	buf []byte
	max uint64
}

func (m *sliceMemory) Reallocate(size uint64) []byte {
	if m.buf == nil {
		m.buf = make([]byte, 0, m.max)
	}
	if size > uint64(cap(m.buf)) {
		return nil
	}
	m.buf = m.buf[:size]
	return m.buf
}

func (m *sliceMemory) Free() { m.buf = nil }
