//go:build wasip1

// Command guest is the guard core as a WebAssembly reactor (guard.wasm).
// It exports the small ABI described in ABI.md: one buffer to write a
// request into, and one call that returns a response envelope.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"time"
	"unsafe"

	"github.com/mrtr-wasm/mrtr-wasm/guest/core"
)

// The guest's heap is short-lived garbage around a small live set (keys,
// compiled forms; under 3 MiB). Collecting only at a memory limit, not at
// every doubling, saves 10-25 µs per call in wasm (see RATIONALE.md).
// 16 MiB is the ceiling: a host that collects between calls (below) keeps
// the heap near half of it, one that does not, near all of it.
const defaultMemoryLimit = 16 << 20

var (
	guard = core.New()
	in    []byte
	out   []byte
)

func init() {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(defaultMemoryLimit)
	guard.SetInterrupt(func() bool { return interrupted() != 0 })
}

// interrupted asks the host whether to stop the current call (its
// deadline passed or its caller went away). Hosts that never stop a call
// return 0.
//
//go:wasmimport mrtr interrupted
func interrupted() uint32

func main() {}

// guard_abi_version returns the envelope version the module speaks.
//
//go:wasmexport guard_abi_version
func abiVersion() uint32 { return core.ABIVersion }

// guard_alloc returns a buffer of at least size bytes for the next
// request. The buffer is reused: it is valid until the next guard_alloc.
//
//go:wasmexport guard_alloc
func alloc(size uint32) uint32 {
	if uint32(cap(in)) < size {
		in = make([]byte, size)
	}
	in = in[:size]
	if size == 0 {
		in = in[:cap(in)]
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(in))))
}

// guard_call runs the request of size bytes written to the guard_alloc
// buffer and returns the response as ptr<<32 | len. The response stays
// valid until the next guard_call.
//
//go:wasmexport guard_call
func call(size uint32) uint64 {
	if size > uint32(cap(in)) {
		size = 0 // an out-of-bounds size gets a malformed-request answer
	}
	out = guard.Call(in[:size])
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(out))))<<32 | uint64(len(out))
}

// guard_set_memory_limit sets the guest heap limit in MiB (0 keeps it).
// A larger limit means fewer collections and a larger linear memory.
//
//go:wasmexport guard_set_memory_limit
func setMemoryLimit(mib uint32) uint32 {
	if mib > 0 {
		debug.SetMemoryLimit(int64(mib) << 20)
	}
	return uint32(debug.SetMemoryLimit(-1) >> 20)
}

// A collection started by the runtime inside a call spreads its marking
// over the calls that follow (hundreds of them, in a module that runs only
// when called), each slower while it lasts: about a fifth of all calls,
// and 10x the CPU of one collection run straight through (RATIONALE.md).
// A host that has time between calls asks guard_collect_due after a call
// and, when it says so, runs guard_collect off the request path. A host
// that never asks keeps the runtime's own collection at the limit.
var (
	// heapSample: objects (live and not yet swept), the live heap after
	// the last collection, and the runtime's goal.
	heapSample = []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/heap/goal:bytes"},
	}
	dueChecks   uint32
	collections uint64
)

// dueEvery spaces the heap readings (about 2 µs each in wasm): a call
// allocates tens of KiB, so eight calls move the heap little.
const dueEvery = 8

// guard_collect_due returns 1 when the heap has used half its headroom
// since the last collection: a collection run now, while the instance is
// idle, comes before the runtime's own near the limit.
//
//go:wasmexport guard_collect_due
func collectDue() uint32 {
	dueChecks++
	if dueChecks%dueEvery != 0 {
		return 0
	}
	metrics.Read(heapSample)
	objects, live, goal := heapSample[0].Value.Uint64(), heapSample[1].Value.Uint64(), heapSample[2].Value.Uint64()
	if goal > live && objects-min(objects, live) >= (goal-live)/2 {
		return 1
	}
	return 0
}

// guard_collect runs a whole collection now (a few ms) and returns how
// many it has run.
//
//go:wasmexport guard_collect
func collect() uint32 {
	runtime.GC()
	collections++
	dueChecks = 0
	return uint32(collections)
}

var stats []byte

// guard_stats reports the module's runtime view as JSON (ptr<<32 | len):
// 16 bytes from its random source and its wall clock (so a host can prove
// it gave the module real ones), and heap figures for memory tests. The
// core itself never reads either.
//
//go:wasmexport guard_stats
func guardStats() uint64 {
	var r [16]byte
	_, _ = rand.Read(r[:])
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	stats = append(stats[:0], `{"random":"`...)
	stats = append(stats, hex.EncodeToString(r[:])...)
	stats = append(stats, `","nowMs":`...)
	stats = strconv.AppendInt(stats, time.Now().UnixMilli(), 10)
	stats = append(stats, `,"heapAlloc":`...)
	stats = strconv.AppendUint(stats, ms.HeapAlloc, 10)
	stats = append(stats, `,"heapSys":`...)
	stats = strconv.AppendUint(stats, ms.HeapSys, 10)
	stats = append(stats, `,"numGC":`...)
	stats = strconv.AppendUint(stats, uint64(ms.NumGC), 10)
	stats = append(stats, `,"collections":`...)
	stats = strconv.AppendUint(stats, collections, 10)
	stats = append(stats, `,"memoryLimit":`...)
	stats = strconv.AppendInt(stats, debug.SetMemoryLimit(-1), 10)
	stats = append(stats, '}')
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(stats))))<<32 | uint64(len(stats))
}
