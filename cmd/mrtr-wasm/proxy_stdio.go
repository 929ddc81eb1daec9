package main

import (
	"context"
	"log/slog"
	"os"

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
	return upstream.NewPerPrincipal(ctx, upstream.StdioConfig{
		Command: o.command[0], Args: o.command[1:], Env: env, Logger: log, Version: version(),
		StartTimeout: o.upstreamTimeout, CallTimeout: o.upstreamTimeout, MaxMessage: int(min(o.upstreamMaxBody, 64<<20)),
		Roots: o.upstreamRoots, Stderr: o.upstreamStderr,
	}, o.maxChildren, o.childIdle)
}
