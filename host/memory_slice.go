//go:build !unix

package host

import "github.com/tetratelabs/wazero/experimental"

// Without mmap (Windows, wasm) linear memory is a Go slice of the whole
// limit, allocated once (see memory_unix.go for why growth must not copy).
var memoryAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
	return &sliceMemory{max: max}
})

// reclaim does nothing without mmap (see memory_unix.go).
func reclaim([]byte) {}
