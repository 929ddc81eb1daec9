package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"

	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
)

// openStdioUpstream starts the stdio child after "--", in a clean
// environment (--upstream-env, --upstream-env-pass), and waits for its
// answer to server/discover (within --upstream-timeout). A child of the
// 2025 era gets a sibling per principal (--max-children, --child-idle).
func openStdioUpstream(ctx context.Context, o *proxyOptions, log *slog.Logger) (upstream.Upstream, error) {
	env, err := upstream.StdioEnv(o.upstreamEnv, o.upstreamEnvPass, os.LookupEnv)
	if err != nil {
		return nil, usageError{err}
	}
	if o.credential == nil && os.Geteuid() == 0 {
		log.Warn("the stdio child runs as root, like the proxy: it can read the proxy's keys and every file; run it as another user with --upstream-user")
	}
	return upstream.NewPerPrincipal(ctx, upstream.StdioConfig{
		Command: o.command[0], Args: o.command[1:], Env: env, Credential: o.credential, Logger: log, Version: version(),
		StartTimeout: o.upstreamTimeout, CallTimeout: o.upstreamTimeout, MaxMessage: int(min(o.upstreamMaxBody, 64<<20)),
		Roots: o.upstreamRoots, Stderr: o.upstreamStderr, MaxQueued: o.upstreamQueued, RoundHold: o.childRoundHold,
	}, o.maxChildren, o.childIdle)
}

// upstreamCredential resolves --upstream-user USER[:GROUP] (names or
// numbers; GROUP defaults to USER's primary group) for a proxy whose
// effective uid is euid. Only root can start a child as another user,
// and a child run as root would be as privileged as the proxy.
func upstreamCredential(spec string, euid int) (*syscall.Credential, error) {
	if euid != 0 {
		return nil, fmt.Errorf("--upstream-user: only a proxy run as root can start the child as another user (this one runs as uid %d); run it as root, or leave the option out", euid)
	}
	name, group, hasGroup := strings.Cut(spec, ":")
	var uid, gid uint64
	u, err := user.Lookup(name)
	if err != nil {
		u, err = user.LookupId(name)
	}
	switch {
	case err == nil:
		uid, _ = strconv.ParseUint(u.Uid, 10, 32)
		gid, _ = strconv.ParseUint(u.Gid, 10, 32)
	case isNumber(name) && hasGroup:
		// A uid with no account, as in containers: the group must be given.
		uid, _ = strconv.ParseUint(name, 10, 32)
	default:
		return nil, fmt.Errorf("--upstream-user: no user %q (give a name or a number, and :GROUP for a number with no account)", name)
	}
	if hasGroup {
		g, err := user.LookupGroup(group)
		if err == nil {
			gid, _ = strconv.ParseUint(g.Gid, 10, 32)
		} else if isNumber(group) {
			gid, _ = strconv.ParseUint(group, 10, 32)
		} else {
			return nil, fmt.Errorf("--upstream-user: no group %q", group)
		}
	}
	if uid == 0 || gid == 0 {
		return nil, fmt.Errorf("--upstream-user %q is root's user or group: the child would be as privileged as the proxy", spec)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

func isNumber(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}
