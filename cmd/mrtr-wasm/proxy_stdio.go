package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
)

// openStdioUpstream starts and supervises the stdio child after "--", with
// a clean environment built from --upstream-env and --upstream-env-pass,
// and waits for its answer to server/discover (within --upstream-timeout,
// which also bounds each call).
func openStdioUpstream(ctx context.Context, o *proxyOptions, log *slog.Logger) (upstream.Upstream, error) {
	env, err := upstream.StdioEnv(o.upstreamEnv, o.upstreamEnvPass, os.LookupEnv)
	if err != nil {
		return nil, usageError{err}
	}
	return upstream.NewStdio(ctx, upstream.StdioConfig{
		Command: o.command[0], Args: o.command[1:], Env: env, Logger: log, Version: version(),
		StartTimeout: o.upstreamTimeout, CallTimeout: o.upstreamTimeout, MaxMessage: int(min(o.upstreamMaxBody, 64<<20)),
	})
}
