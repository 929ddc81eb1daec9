package host

import "golang.org/x/sys/unix"

// Linux may refuse a large private mapping under strict overcommit unless
// it is marked as never needing swap.
const mapNoReserve = unix.MAP_NORESERVE
