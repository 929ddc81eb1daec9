package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
)

// openStdioUpstream starts the stdio child after "--".
func openStdioUpstream(ctx context.Context, o *proxyOptions, log *slog.Logger) (upstream.Upstream, error) {
	return nil, usageError{errors.New("a stdio upstream (-- CMD ARGS) is not in this build yet: use --upstream URL")}
}
