package testseam

import (
	"io"
	"time"
)

// Set by package host's init: they return a host.Option.
var (
	clock  func(now func() time.Time) any
	random func(r io.Reader) any
)

// Register is called by package host; nothing else should call it.
func Register(withClock func(now func() time.Time) any, withRandom func(r io.Reader) any) {
	clock, random = withClock, withRandom
}

// Clock returns the option that makes the guard read the time from now.
func Clock[O any](now func() time.Time) O { return clock(now).(O) }

// Random returns the option that makes the guard draw nonces and
// operation ids from r.
func Random[O any](r io.Reader) O { return random(r).(O) }
