package proxy

import (
	"encoding/json"
	"strings"
	"testing"
)

// inputRound reads an input_required result's requestState ("" when the
// result is not one).
func inputRound(t *testing.T, r rpcMsg) string {
	t.Helper()
	var ir struct {
		ResultType   string `json:"resultType"`
		RequestState string `json:"requestState"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &ir) != nil || ir.ResultType != "input_required" {
		return ""
	}
	return ir.RequestState
}

func pendingCount(p *Proxy) int {
	n := 0
	p.pending.m.Range(func(any, any) bool { n++; return true })
	return n
}

// TestRoundLimitReleasesUpstream (finding 8): in front of server-everything
// (a 2025-era stdio child), answers that never fit the form run into the
// guard's round limit. The client gets that error, the child's
// elicitation/create is answered cancel at once, and the same principal's
// next call that elicits is a fresh round, not a -32601 "arrived outside
// any single call" for five minutes.
func TestRoundLimitReleasesUpstream(t *testing.T) {
	p, err := New(Config{Guard: newGuard(t), Upstream: everythingUpstream(t, false)})
	if err != nil {
		t.Fatal(err)
	}
	caps := `{"elicitation":{"form":{}}}`
	state := inputRound(t, handleTool(t, p, "alice", "trigger-elicitation-request", caps, ""))
	if state == "" {
		t.Fatal("the first call did not ask")
	}
	var last rpcMsg
	for try := 0; ; try++ {
		if try > 12 {
			t.Fatal("no round limit after 12 invalid answers")
		}
		sb, _ := json.Marshal(state)
		last = handleTool(t, p, "alice", "trigger-elicitation-request", caps, `,"requestState":`+string(sb)+
			`,"inputResponses":{"elicitation":{"action":"accept","content":{"name":"Ada","integer":500}}}`)
		if state = inputRound(t, last); state == "" {
			break
		}
	}
	if last.Error == nil || !strings.Contains(strings.ToLower(last.Error.Message), "round") {
		t.Fatalf("at the limit: %+v %s", last.Error, last.Result)
	}
	if n := pendingCount(p); n != 0 {
		t.Fatalf("%d rounds still wait upstream after the round limit", n)
	}
	next := handleTool(t, p, "alice", "trigger-elicitation-request", caps, "")
	if inputRound(t, next) == "" {
		t.Fatalf("the next call of the same principal: %+v %s", next.Error, next.Result)
	}
}
