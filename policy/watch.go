package policy

import (
	"context"
	"os"
	"time"
)

// Watch reloads the policy when its files change (and then stay the same
// for one more interval), checking every interval until ctx ends. onReload (may be nil) hears every reload
// attempt: nil after a swap, or why the files were refused (the policy
// in use stays).
func (e *Engine) Watch(ctx context.Context, interval time.Duration, onReload func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var pending, failed string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// Compare with what is loaded, not with what was on disk when
		// Watch started: a change just before would be missed.
		d := e.digest()
		if d == "" || d == e.cur.Load().revision || d == failed {
			pending = ""
			continue
		}
		// Reload only files that stayed the same for a whole interval: an
		// editor or a deploy may be half-way through writing them.
		if d != pending {
			pending = d
			continue
		}
		pending = ""
		err := e.Reload(ctx)
		failed = ""
		if err != nil {
			failed = d // report broken files once, not every interval
		}
		if onReload != nil {
			onReload(err)
		}
	}
}

// digest is the revision the files on disk would load as, "" when they
// cannot be read.
func (e *Engine) digest() string {
	sources, err := e.src.regoFiles(false)
	if err != nil {
		return ""
	}
	_, raw, err := e.src.readData()
	if err != nil {
		return ""
	}
	return revision(sources, raw)
}

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
