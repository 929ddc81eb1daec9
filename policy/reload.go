package policy

import (
	"context"
	"os"
)

// ReloadOn reloads the policy whenever sig receives a signal (use
// signal.Notify with syscall.SIGHUP) until ctx ends.
func (e *Engine) ReloadOn(ctx context.Context, sig <-chan os.Signal, onReload func(error)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
			err := e.Reload(ctx)
			if onReload != nil {
				onReload(err)
			}
		}
	}
}
