package upstream

import (
	"errors"
	"net"
)

// Unsent reports whether a call failed before any byte of its request
// could reach the upstream: the connection was refused or never made, or
// a stdio child died before the request was written. Only such a call may
// be sent again without risking a second effect; any other failure (a
// timeout, a cut or oversized answer, a 5xx) may come after the upstream
// acted.
func Unsent(err error) bool {
	var ns *notSent
	if errors.As(err, &ns) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
