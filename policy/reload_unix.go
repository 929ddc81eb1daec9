//go:build unix

package policy

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// ReloadOnSIGHUP reloads the policy on every SIGHUP until ctx ends or
// stop is called.
func (e *Engine) ReloadOnSIGHUP(ctx context.Context, onReload func(error)) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.ReloadOn(ctx, ch, onReload)
	}()
	return func() {
		signal.Stop(ch)
		cancel()
		<-done
	}
}
