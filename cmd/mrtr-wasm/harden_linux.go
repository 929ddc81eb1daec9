package main

import "golang.org/x/sys/unix"

// undumpable makes this process not dumpable: its /proc/PID/environ and
// mem become readable by root only, and processes of the same user (a
// stdio child among them) can no longer ptrace it. The keys it holds in
// memory, and MRTR_KEYS in the environment it started with (which
// os.Unsetenv does not erase from /proc/PID/environ), stay its own. It
// also turns core dumps off, which would hold the keys too.
func undumpable() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
