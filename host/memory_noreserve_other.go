//go:build unix && !linux

package host

// Other Unix kernels reserve anonymous pages lazily without a flag.
const mapNoReserve = 0

// madvReclaim: no advice that reclaims pages without changing them.
const madvReclaim = -1
