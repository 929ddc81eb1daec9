package host

import "golang.org/x/sys/unix"

// Linux may refuse a large private mapping under strict overcommit unless
// it is marked as never needing swap.
const mapNoReserve = unix.MAP_NORESERVE

// madvReclaim asks the kernel to reclaim pages now (Linux 5.4 and later;
// older kernels refuse it, and nothing changes).
const madvReclaim = unix.MADV_PAGEOUT
