//go:build unix

package host

import (
	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// mmapAllocator backs each instance's linear memory with one anonymous
// mapping of the whole limit. Pages cost nothing until touched, growing
// never copies (wazero's default grows by copying the whole memory, which
// made an instance's first thousands of calls 3x slower), nothing is
// zeroed by Go, and closing an instance gives the memory back to the OS at
// once instead of leaving a Go heap span of the limit's size behind (whose
// reuse made starting the next instance cost a second of memclr).
var memoryAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
	b, err := unix.Mmap(-1, 0, int(max), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANON|mapNoReserve)
	if err != nil {
		return &sliceMemory{max: max}
	}
	return &mmapMemory{buf: b[:0]}
})

type mmapMemory struct{ buf []byte }

func (m *mmapMemory) Reallocate(size uint64) []byte {
	if size > uint64(cap(m.buf)) {
		return nil
	}
	m.buf = m.buf[:size]
	return m.buf
}

func (m *mmapMemory) Free() {
	if b := m.buf[:cap(m.buf)]; len(b) > 0 {
		_ = unix.Munmap(b)
	}
	m.buf = nil
}
