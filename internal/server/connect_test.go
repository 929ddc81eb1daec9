package server_test

import (
	"database/sql"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/crm"
	"github.com/mrtr-wasm/mrtr-wasm/internal/server"
)

// connectCaller calls connect_calendar on a test server: the first round
// without a state, a retry with the state and the user's consent.
func connectCaller(t *testing.T, base string) func(state string) rpcResp {
	good := meta("2026-07-28", caps)
	return func(state string) rpcResp {
		t.Helper()
		params := `"_meta":` + good + `,"name":"connect_calendar","arguments":{}`
		if state != "" {
			st, _ := json.Marshal(state)
			params += `,"requestState":` + string(st) + `,"inputResponses":{"calendar":{"action":"accept"}}`
		}
		return post(t, base+"/mcp", std("tools/call", "connect_calendar"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+params+`}}`)
	}
}

// urlRound reads a URL round: its requestState and the page's URL.
func urlRound(t *testing.T, r rpcResp) (state, url string) {
	t.Helper()
	var res struct {
		ResultType    string `json:"resultType"`
		RequestState  string `json:"requestState"`
		InputRequests map[string]struct {
			Params struct {
				URL string `json:"url"`
			} `json:"params"`
		} `json:"inputRequests"`
	}
	b, _ := json.Marshal(r.Result)
	if err := json.Unmarshal(b, &res); err != nil || res.ResultType != "input_required" || res.InputRequests["calendar"].Params.URL == "" {
		t.Fatalf("want a URL round: %s", r.raw)
	}
	return res.RequestState, res.InputRequests["calendar"].Params.URL
}

// wantRoundLimit checks the error of a round past the limit.
func wantRoundLimit(t *testing.T, r rpcResp) {
	t.Helper()
	if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "rounds") {
		t.Fatalf("a round past the policy's limit of 2: want -32602 on rounds, got %s", r.raw)
	}
}

// A page that is never submitted: each retry asks again as the next round
// of the same request, so the round limit (2 for connect_calendar in
// policies/data/demo.json) ends the loop, and every round reuses the one
// connect session.
func TestConnectLoopStopsAtRoundLimit(t *testing.T) {
	ts, store := newTestServer(t, nil)
	call := connectCaller(t, ts.URL)
	state1, url1 := urlRound(t, call(""))
	state2, url2 := urlRound(t, call(state1))
	if url2 != url1 {
		t.Fatalf("round 2 sends another page: %s, first %s", url2, url1)
	}
	wantRoundLimit(t, call(state2))
	if n := sessions(t, store); n != 1 {
		t.Fatalf("%d connect sessions, want 1", n)
	}
}

// Links that expire before they are used: each retry gets a new link as
// the next round of the same request (so the round limit ends it), a link
// already deleted as expired counts as expired (not as an internal
// error), and expired sessions do not pile up.
func TestConnectExpiredLinks(t *testing.T) {
	ts, store := newTestServer(t, nil, func(c *server.Config) { c.ConnectTTL = time.Millisecond })
	call := connectCaller(t, ts.URL)
	expire := func() { time.Sleep(5 * time.Millisecond) } // the links live 1 ms

	state1, url1 := urlRound(t, call(""))
	expire()
	urlRound(t, call("")) // another request's link: deletes the first, which expired
	expire()
	if n := sessions(t, store); n != 1 {
		t.Fatalf("%d connect sessions, want 1 (the expired one deleted)", n)
	}
	state2, url2 := urlRound(t, call(state1))
	if url2 == url1 {
		t.Fatal("the retry of an expired link got the same link")
	}
	if n := sessions(t, store); n != 1 {
		t.Fatalf("%d connect sessions, want 1", n)
	}
	expire()
	wantRoundLimit(t, call(state2))
}

func sessions(t *testing.T, store *crm.Store) int {
	t.Helper()
	path := strings.TrimPrefix(store.Where, "sqlite:")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM connect_sessions`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
