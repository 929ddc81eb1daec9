package ledger

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/redact/redacttest"
)

// A claim's token, a stored result and the answers' fingerprint stay out
// of every printing channel; the token is a real one from a ledger.
func TestRedaction(t *testing.T) {
	ctx := context.Background()
	l := NewMemory()
	defer l.Close()
	fp := Fingerprint(sha256.Sum256([]byte("answers")))
	c, err := l.Claim(ctx, "op-1", fp, time.Minute)
	if err != nil || c.Status != Acquired || len(c.Token) < 16 {
		t.Fatalf("%v %v", c, err)
	}
	const result = `{"booking":"result-secret-5521"}`
	if err := l.Finish(ctx, "op-1", c.Token, fp, []byte(result), time.Minute); err != nil {
		t.Fatal(err)
	}
	e, err := l.Get(ctx, "op-1")
	if err != nil || e.State != Done {
		t.Fatalf("%v %v", e, err)
	}
	done, err := l.Claim(ctx, "op-1", fp, time.Minute)
	if err != nil || done.Status != Finished {
		t.Fatalf("%v %v", done, err)
	}
	fpBytes := string(fp[:])[:8]
	t.Run("Claim acquired", func(t *testing.T) {
		redacttest.Check(t, c, []string{c.Token}, nil, "acquired", "token=redacted")
	})
	t.Run("Claim finished", func(t *testing.T) {
		redacttest.Check(t, done, []string{"result-secret-5521"}, nil, "finished")
	})
	t.Run("Entry", func(t *testing.T) {
		redacttest.Check(t, e, []string{"result-secret-5521", fpBytes}, nil, "done")
	})
	t.Run("Fingerprint", func(t *testing.T) {
		redacttest.Check(t, fp, []string{fpBytes}, nil, "redacted")
	})
}
