package upstream

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A call WithRounds (a legacy upstream's, whose requests to the client
// become input rounds) is bounded by the upstream timeout only until the
// child asks: the user's time to answer is the round's, not the call's.
func TestStdioRoundIsNotCutAtTheCallTimeout(t *testing.T) {
	cfg, _ := childConfig(t, "ok")
	cfg.CallTimeout = time.Second // ample for the child to ask, even on a loaded machine
	s := startChild(t, cfg)
	ctx := WithRounds(context.Background())
	raw, err := s.Call(ctx, toolCall("1", "ask", map[string]any{}, ""), nil, func(req []byte) error {
		m, err := parseMessage(req)
		if err != nil || !m.hasID || m.method != "elicitation/create" {
			t.Errorf("not the child's request: %s", req)
			return nil
		}
		time.Sleep(cfg.CallTimeout + 200*time.Millisecond) // the user takes longer than the call timeout
		reply := `{"jsonrpc":"2.0","id":` + string(m.value(m.id)) + `,"result":{"action":"accept","content":{"password":"x"}}}`
		return s.Send(ctx, []byte(reply), nil)
	})
	if err != nil {
		t.Fatalf("a round answered after the call timeout: %v", err)
	}
	if r := decode(t, raw); len(r.Result.Content) != 1 || !strings.HasPrefix(r.Result.Content[0].Text, "the client said: ") {
		t.Fatalf("%s", raw)
	}
}

// Until the child asks, the call timeout still holds for a call WithRounds.
func TestStdioRoundsKeepTheCallTimeoutUntilAsked(t *testing.T) {
	cfg, _ := childConfig(t, "ok")
	cfg.CallTimeout = 200 * time.Millisecond
	s := startChild(t, cfg)
	_, err := s.Call(WithRounds(context.Background()), toolCall("1", "sleep", map[string]any{"ms": 30000}, ""), nil, func([]byte) error { return nil })
	wantCode(t, err, CodeTimeout)
}
