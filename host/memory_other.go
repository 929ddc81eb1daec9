//go:build !linux

package host

import "github.com/tetratelabs/wazero/experimental"

// Elsewhere linear memory is a Go slice of the whole limit, allocated once
// (see memory_linux.go for why growth must not copy).
var memoryAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
	return &sliceMemory{max: max}
})
