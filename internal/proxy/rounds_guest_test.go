package proxy

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// Regression tests from the review of the input-round path
// (2026-12-02) whose fixes are in the guard core.

// TestReaskedRoundReachesUpstreamOnce: the proxy's own re-ask seals a new
// round (round+1) of the same upstream round; the ledger key is
// op/round, so the superseded round-1 state, still valid, forwards the
// same upstream requestState a second time.
func TestReaskedRoundReachesUpstreamOnce(t *testing.T) {
	var finals atomic.Int64
	up := confirmUpstream(t, &finals)
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, up.URL))

	first, _ := callTool(t, base, "act", `{"n":1}`, "")
	s1 := sealedState(t, first)
	// Round 1 answered without the required field: the proxy re-asks itself.
	re, _ := callTool(t, base, "act", `{"n":1}`, `,"inputResponses":{"confirm":{"action":"accept","content":{}}},"requestState":"`+s1+`"`)
	s2 := sealedState(t, re)
	ok := `,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":"`
	m2, _ := callTool(t, base, "act", `{"n":1}`, ok+s2+`"`)
	m1, _ := callTool(t, base, "act", `{"n":1}`, ok+s1+`"`)
	t.Logf("round 2: %s %+v", m2.Result, m2.Error)
	t.Logf("round 1 replay: %s %+v", m1.Result, m1.Error)
	if n := finals.Load(); n != 1 {
		t.Fatalf("the upstream got its round (requestState step=1) %d times, want 1", n)
	}
	if !strings.Contains(string(m1.Result), "done 1") {
		t.Fatalf("replay of round 1 got %s", m1.Result)
	}
}

// twoFormUpstream asks "a" (an integer 1..10) and "b" (a boolean), and
// records the body of the retry it gets.
func twoFormUpstream(t *testing.T, got *atomic.Value) string {
	up := rpcServer(t, func(w http.ResponseWriter, body []byte) {
		switch {
		case isToolsList(body):
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[],"ttlMs":60000}}`)
		case bytes.Contains(body, []byte(`"inputResponses"`)):
			got.Store(string(body))
			writeJSON(w, okResult(body))
		default:
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"resultType":"input_required","inputRequests":{`+
				`"a":{"method":"elicitation/create","params":{"message":"How many seats?","requestedSchema":{"type":"object","properties":{"seats":{"type":"integer","minimum":1,"maximum":10}},"required":["seats"]}}},`+
				`"b":{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}},"requestState":"u1"}}`)
		}
	})
	return up.URL
}

// TestAnswerKeptFromReaskCannotBeReplaced: an answer accepted in an
// earlier round and sealed is replaced, in the forward, by whatever the
// client sends for that key again; the core never checks it (it only
// checks the keys still pending), and the ledger digest is of the sealed
// answer, not of what is forwarded.
func TestAnswerKeptFromReaskCannotBeReplaced(t *testing.T) {
	var got atomic.Value
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, twoFormUpstream(t, &got)))
	first, _ := callTool(t, base, "book", `{}`, "")
	s1 := sealedState(t, first)
	// a valid, b missing: the proxy re-asks b only, a is sealed.
	re, _ := callTool(t, base, "book", `{}`, `,"inputResponses":{"a":{"action":"accept","content":{"seats":2}},"b":{"action":"accept","content":{}}},"requestState":"`+s1+`"`)
	s2 := sealedState(t, re)
	if bytes.Contains(re.Result, []byte(`"a":{`)) {
		t.Fatalf("a was asked again: %s", re.Result)
	}
	m, _ := callTool(t, base, "book", `{}`, `,"inputResponses":{"a":{"action":"accept","content":{"seats":100000,"extra":"x"}},"b":{"action":"accept","content":{"ok":true}}},"requestState":"`+s2+`"`)
	body, _ := got.Load().(string)
	t.Logf("client got %s %+v\nupstream got %s", m.Result, m.Error, body)
	if strings.Contains(body, "100000") {
		t.Fatal("an answer that breaks the sealed schema (seats 1..10) reached the upstream unchecked")
	}
}

// TestDeclineForwardsOnlyCheckedAnswers: when one request is
// declined, the other keys' answers go upstream as sent, unchecked.
func TestDeclineForwardsOnlyCheckedAnswers(t *testing.T) {
	var got atomic.Value
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, twoFormUpstream(t, &got)))
	first, _ := callTool(t, base, "book", `{}`, "")
	s1 := sealedState(t, first)
	m, _ := callTool(t, base, "book", `{}`, `,"inputResponses":{"a":{"action":"accept","content":{"seats":100000}},"b":{"action":"decline"},"zz":{"action":"accept","content":{"anything":1}}},"requestState":"`+s1+`"`)
	body, _ := got.Load().(string)
	t.Logf("client got %s %+v\nupstream got %s", m.Result, m.Error, body)
	if strings.Contains(body, "100000") || strings.Contains(body, `"zz"`) || !strings.Contains(body, `"b":{"action":"decline"}`) {
		t.Fatal("want only the decline forwarded: an invalid accept and a key no one asked must not reach the upstream")
	}
}

// TestInexactNumberArgumentRefused: arguments are bound
// through their RFC 8785 form, whose numbers are doubles, but the
// upstream gets the client's bytes: an integer beyond 2^53 can be changed
// between the round and its retry (a server decoding into int64, or
// Python's int, sees another account).
func TestInexactNumberArgumentRefused(t *testing.T) {
	var got atomic.Value
	up := rpcServer(t, func(w http.ResponseWriter, body []byte) {
		switch {
		case isToolsList(body):
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[],"ttlMs":60000}}`)
		case bytes.Contains(body, []byte(`"inputResponses"`)):
			got.Store(string(body))
			writeJSON(w, okResult(body))
		default:
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"Close this account?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}},"requestState":"u"}}`)
		}
	})
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, up.URL))
	first, _ := callTool(t, base, "close_account", `{"account":9007199254740992}`, "")
	st := sealedState(t, first)
	m, _ := callTool(t, base, "close_account", `{"account":9007199254740993}`, `,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":"`+st+`"`)
	body, _ := got.Load().(string)
	t.Logf("client got %s %+v\nupstream got %s", m.Result, m.Error, body)
	if strings.Contains(body, "9007199254740993") {
		t.Fatal("a retry with changed arguments reached the upstream")
	}
}

// TestURLCredentialAfterSemicolonRefused: through guard.wasm, a URL-mode
// request whose credential hides behind a ';' is sealed and shown.
func TestURLCredentialAfterSemicolonRefused(t *testing.T) {
	up := rpcServer(t, func(w http.ResponseWriter, body []byte) {
		if isToolsList(body) {
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[],"ttlMs":60000}}`)
			return
		}
		writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"resultType":"input_required","inputRequests":{"login":{"method":"elicitation/create","params":{"mode":"url","message":"Sign in","url":"https://login.example/cb?x=1;access_token=s3cr3t"}}},"requestState":"u"}}`)
	})
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, up.URL))
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}}}}}}`
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "t")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if bytes.Contains(b, []byte("access_token=s3cr3t")) {
		t.Fatalf("a pre-authenticated URL reached the client: %s", b)
	}
}

// TestDeclineWithOtherAnswersConflicts: a declined round is keyed by all
// it forwards, so the same state sent again with the same decline but
// another accepted answer beside it is a conflict, not a replay of the
// first forward's result (which would tell the client its second answer
// went through).
func TestDeclineWithOtherAnswersConflicts(t *testing.T) {
	var got atomic.Value
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, twoFormUpstream(t, &got)))
	first, _ := callTool(t, base, "book", `{}`, "")
	s1 := sealedState(t, first)
	m1, _ := callTool(t, base, "book", `{}`, `,"inputResponses":{"a":{"action":"accept","content":{"seats":2}},"b":{"action":"decline"}},"requestState":"`+s1+`"`)
	if m1.Error != nil {
		t.Fatalf("first: %+v", m1.Error)
	}
	m2, _ := callTool(t, base, "book", `{}`, `,"inputResponses":{"a":{"action":"accept","content":{"seats":9}},"b":{"action":"decline"}},"requestState":"`+s1+`"`)
	if m2.Error == nil || !strings.Contains(m2.Error.Message, "other answers") {
		t.Fatalf("another answer beside the same decline: want a conflict, got %s %+v", m2.Result, m2.Error)
	}
	m3, _ := callTool(t, base, "book", `{}`, ` ,"inputResponses":{ "a":{"action":"accept","content":{"seats":2}},"b":{"action":"decline"}},"requestState":"`+s1+`"`)
	if m3.Error != nil || string(m3.Result) != string(m1.Result) {
		t.Fatalf("the same answers again: want the stored result, got %s %+v", m3.Result, m3.Error)
	}
}
