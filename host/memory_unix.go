//go:build unix

package host

import (
	"os"
	"unsafe"

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

// reclaim gives b's resident pages back to the kernel without changing
// what b holds: the embedded guard.wasm is read once, to compile it, and
// after that its 7 MB only take room in every process. Its pages are the
// binary's, unmodified, so the kernel drops them and reads them back from
// the file should anything read them again; a page that was written to
// (none should be) has nothing to go back to and stays.
func reclaim(b []byte) {
	if madvReclaim < 0 || len(b) == 0 {
		return
	}
	page := os.Getpagesize()
	// Only whole pages: skip to the first page boundary in b.
	skip := (page - int(uintptr(unsafe.Pointer(unsafe.SliceData(b))))%page) % page
	if skip >= len(b) {
		return
	}
	b = b[skip:]
	if n := len(b) / page * page; n > 0 {
		_ = unix.Madvise(b[:n], madvReclaim)
	}
}
