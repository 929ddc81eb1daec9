package server_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/crm"
	"github.com/mrtr-wasm/mrtr-wasm/internal/identity"
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

// Under --auth-tokens the link is the capability: a page on another site
// that holds a link must not submit a key to it from the visitor's
// browser. A POST that the browser marks cross-site or same-site (another
// subdomain), or whose Origin is another site's, is refused and stores
// nothing; the page's own POST, and a POST from no browser at all, are
// taken.
func TestConnectRefusesCrossSitePOST(t *testing.T) {
	tokens, err := identity.NewTokens(map[string]string{"tok-alice-0123456789": "alice"})
	if err != nil {
		t.Fatal(err)
	}
	ts, store := newTestServer(t, identity.NewTokenAuthenticator(tokens, nil))
	ctx := context.Background()
	link := func() string {
		id, err := store.NewConnect(ctx, "alice", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return ts.URL + "/connect/" + id
	}
	submit := func(u string, h map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", u, strings.NewReader(url.Values{"api_key": {"cal-key-0123"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	u := link()
	for _, h := range []map[string]string{
		{"Origin": "http://evil.example"},
		{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
		{"Origin": "http://cal.127.0.0.1.nip.io", "Sec-Fetch-Site": "same-site"},
		{"Sec-Fetch-Site": "cross-site"},
	} {
		if code, body := submit(u, h); code != http.StatusForbidden || !strings.Contains(body, "another site") {
			t.Errorf("%v: want 403, got %d %.300s", h, code, body)
		}
	}
	// Nothing was stored: the link is still good for the page itself.
	if code, body := submit(u, map[string]string{"Origin": ts.URL, "Sec-Fetch-Site": "same-origin"}); code != http.StatusOK || !strings.Contains(body, "connected") {
		t.Fatalf("the page's own POST: %d %.300s", code, body)
	}
	if code, body := submit(link(), nil); code != http.StatusOK {
		t.Fatalf("a POST from no browser: %d %.300s", code, body)
	}
}
