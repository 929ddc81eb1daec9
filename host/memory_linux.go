package host

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// mmapAllocator backs each instance's linear memory with one anonymous
// mapping of the whole limit. Pages cost nothing until touched, growing
// never copies (wazero's default grows by copying the whole memory, which
// made an instance's first thousands of calls 3x slower), nothing is
// zeroed by Go, and closing an instance gives the memory back to the OS at
// once instead of leaving a Go heap span of the limit's size behind (whose
// reuse made starting the next instance cost a second of memclr).
var memoryAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
	b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_NORESERVE)
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
		_ = syscall.Munmap(b)
	}
	m.buf = nil
}
