//go:build unix && !linux

package host

// Other Unix kernels reserve anonymous pages lazily without a flag.
const mapNoReserve = 0
