package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/testseam"
)

// Marker strings: they go into answers, arguments and the calendar key,
// and must never show up in a log line.
const (
	markName   = "Zyxq Markername"
	markEmail  = "zyxq.marker71@example.com"
	markTopic  = "topic-marker-5521"
	markCalKey = "CALKEY-marker-93ab-secret"
	tokAlice   = "tok-alice-4f1e9c2b7d5a"
	tokBob     = "tok-bob-8c3d2e1f0a9b7"
)

// syncBuffer collects the server's log output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// sharedCache keeps wazero's compiled guard.wasm between the tests'
// servers, so each starts in a moment.
var sharedCache = filepath.Join(os.TempDir(), "mrtr-wasm-test-cache")

type served struct {
	base string // http://127.0.0.1:PORT
	logs *syncBuffer
	dir  string
	key  string
}

// startServe runs `serve` in this process on a random port until the test
// ends, and checks that it shuts down cleanly.
func startServe(t *testing.T, extra ...string) *served {
	t.Helper()
	dir := t.TempDir()
	key := host.GenerateKey()
	keys := filepath.Join(dir, "keys")
	if err := os.WriteFile(keys, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokens, []byte(`{"`+tokAlice+`":"alice","`+tokBob+`":"bob"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--addr", "127.0.0.1:0", "--keys", keys, "--auth-tokens", tokens,
		"--data", filepath.Join(dir, "data"), "--wasm-cache", sharedCache, "--log-format", "json", "--log-level", "debug"}, extra...)
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan int, 1)
	go func() { done <- serve(ctx, args, nil, io.Discard, logs, func(a string) { addr <- a }) }()
	var s *served
	select {
	case a := <-addr:
		s = &served{base: "http://" + a, logs: logs, dir: dir, key: key}
	case code := <-done:
		cancel()
		t.Fatalf("serve exited with %d:\n%s", code, logs)
	case <-time.After(3 * time.Minute):
		cancel()
		t.Fatalf("serve did not start:\n%s", logs)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited with %d:\n%s", code, logs)
			}
		case <-time.After(time.Minute):
			t.Errorf("serve did not shut down")
		}
	})
	return s
}

type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

func httpClient(token string) *http.Client {
	return &http.Client{Transport: bearer{token, http.DefaultTransport}, Timeout: 30 * time.Second}
}

// connect opens an official Go SDK client session as the token's
// principal. manual turns off the SDK's automatic MRTR loop, so the test
// drives every round itself.
func connect(t *testing.T, s *served, token string, manual bool, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
	}
	if elicit == nil {
		elicit = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("no elicitation expected")
		}
	}
	opts.ElicitationHandler = elicit
	if manual {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "mrtr-e2e", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp", HTTPClient: httpClient(token)}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func bookings(t *testing.T, cs *mcp.ClientSession) []map[string]any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_bookings", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("list_bookings: %v", err)
	}
	var sc struct {
		Bookings []map[string]any `json:"bookings"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatalf("list_bookings structuredContent %s: %v", b, err)
	}
	return sc.Bookings
}

// firstSlot picks the first titled option of the slot form.
func firstSlot(t *testing.T, schema any) string {
	t.Helper()
	b, _ := json.Marshal(schema)
	var s struct {
		Properties struct {
			Slot struct {
				OneOf []struct {
					Const string `json:"const"`
					Title string `json:"title"`
				} `json:"oneOf"`
			} `json:"slot"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &s); err != nil || len(s.Properties.Slot.OneOf) == 0 {
		t.Fatalf("slot form without a titled enum: %s", b)
	}
	for _, o := range s.Properties.Slot.OneOf {
		if o.Title == "" {
			t.Fatalf("slot option without a title: %s", b)
		}
	}
	return s.Properties.Slot.OneOf[0].Const
}

func accept(content map[string]any) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: content}
}

// call sends one round of book_demo_call.
func call(cs *mcp.ClientSession, args map[string]any, state string, responses mcp.InputResponseMap) (*mcp.CallToolResult, error) {
	return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "book_demo_call", Arguments: args, RequestState: state, InputResponses: responses})
}

func needsInput(t *testing.T, res *mcp.CallToolResult, err error, key string) *mcp.CallToolResult {
	t.Helper()
	if err != nil {
		t.Fatalf("want input_required, got error %v", err)
	}
	if !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("want input_required with a requestState, got %+v", res)
	}
	if _, ok := res.InputRequests[key]; !ok {
		t.Fatalf("want an input request %q, got %v", key, res.InputRequests)
	}
	return res
}

// first sends the first round and expects the contact form.
func first(t *testing.T, cs *mcp.ClientSession, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	r, err := call(cs, args, "", nil)
	return needsInput(t, r, err, "contact")
}

func wantInvalidParams(t *testing.T, what string, err error) {
	t.Helper()
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("%s: want JSON-RPC -32602, got %v", what, err)
	}
}

func TestServeBookingFlowOverHTTP(t *testing.T) {
	var skew atomic.Int64 // the guard's clock runs this far ahead (tests expiry)
	testGuardOptions = []host.Option{testseam.Clock[host.Option](func() time.Time { return time.Now().Add(time.Duration(skew.Load())) })}
	t.Cleanup(func() { testGuardOptions = nil })
	s := startServe(t)
	args := map[string]any{"topic": markTopic}

	// 1. The whole flow, driven by the SDK's own MRTR loop.
	t.Run("automatic", func(t *testing.T) {
		var asked []string
		cs := connect(t, s, tokAlice, false, func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, r.Params.Message)
			if len(asked) == 1 {
				return accept(map[string]any{"name": markName, "email": markEmail}), nil
			}
			return accept(map[string]any{"slot": firstSlot(t, r.Params.RequestedSchema), "confirm": true}), nil
		})
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "book_demo_call", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("book_demo_call: %v %+v", err, res)
		}
		if len(asked) != 2 {
			t.Fatalf("want two rounds, got %d: %q", len(asked), asked)
		}
		bs := bookings(t, cs)
		if len(bs) != 1 || bs[0]["name"] != markName || bs[0]["email"] != markEmail || bs[0]["topic"] != markTopic || bs[0]["id"] == "" || bs[0]["created_at"] == "" {
			t.Fatalf("bookings: %v", bs)
		}
	})

	alice := connect(t, s, tokAlice, true, nil)
	bob := connect(t, s, tokBob, true, nil)
	base := len(bookings(t, alice))
	count := func() int { return len(bookings(t, alice)) }

	// 2. The four answers.
	var final struct {
		state     string
		responses mcp.InputResponseMap
		id        string
	}
	t.Run("valid accept", func(t *testing.T) {
		r1 := first(t, alice, args)
		r2, err := call(alice, args, r1.RequestState, mcp.InputResponseMap{"contact": accept(map[string]any{"name": markName, "email": markEmail})})
		r2 = needsInput(t, r2, err, "slot")
		if count() != base {
			t.Fatal("a booking was written before every answer was in")
		}
		ep := r2.InputRequests["slot"].(*mcp.ElicitParams)
		final.state = r2.RequestState
		final.responses = mcp.InputResponseMap{"slot": accept(map[string]any{"slot": firstSlot(t, ep.RequestedSchema), "confirm": true})}
		r3, err := call(alice, args, final.state, final.responses)
		if err != nil || r3.NeedsInput() || r3.IsError {
			t.Fatalf("final round: %v %+v", err, r3)
		}
		b, _ := json.Marshal(r3.StructuredContent)
		var sc struct {
			Booked  bool
			Booking struct{ ID string }
		}
		_ = json.Unmarshal(b, &sc)
		if !sc.Booked || sc.Booking.ID == "" {
			t.Fatalf("final result: %s", b)
		}
		final.id = sc.Booking.ID
		if count() != base+1 {
			t.Fatalf("want %d bookings, got %d", base+1, count())
		}
	})
	t.Run("accept without email or with an invalid one", func(t *testing.T) {
		for _, content := range []map[string]any{{"name": "No Email"}, {"name": "Bad Email", "email": "not-an-email"}} {
			r1 := first(t, alice, args)
			r2, err := call(alice, args, r1.RequestState, mcp.InputResponseMap{"contact": accept(content)})
			r2 = needsInput(t, r2, err, "contact")
			ep := r2.InputRequests["contact"].(*mcp.ElicitParams)
			if !strings.Contains(strings.ToLower(ep.Message), "email") {
				t.Fatalf("the new form does not name the email field: %q", ep.Message)
			}
		}
		if count() != base+1 {
			t.Fatal("an incomplete answer wrote a booking")
		}
	})
	t.Run("decline and cancel", func(t *testing.T) {
		for action, want := range map[string]string{"decline": "declined", "cancel": "again"} {
			r1 := first(t, alice, args)
			res, err := call(alice, args, r1.RequestState, mcp.InputResponseMap{"contact": &mcp.ElicitResult{Action: action}})
			if err != nil || res.IsError || res.NeedsInput() {
				t.Fatalf("%s: want a normal result, got %v %+v", action, err, res)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if !strings.Contains(text, want) {
				t.Fatalf("%s: %q does not say %q", action, text, want)
			}
		}
		if count() != base+1 {
			t.Fatal("decline or cancel wrote a booking")
		}
	})

	// 3. The same accepted final retry, 50 times at once: one booking.
	t.Run("50 concurrent replays", func(t *testing.T) {
		var wg sync.WaitGroup
		ids := make([]string, 50)
		errs := make([]error, 50)
		for i := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := call(alice, args, final.state, final.responses)
				if err != nil {
					errs[i] = err
					return
				}
				b, _ := json.Marshal(res.StructuredContent)
				var sc struct{ Booking struct{ ID string } }
				_ = json.Unmarshal(b, &sc)
				ids[i] = sc.Booking.ID
			}()
		}
		wg.Wait()
		for i := range 50 {
			if errs[i] != nil {
				t.Errorf("replay %d: %v", i, errs[i])
			} else if ids[i] != final.id {
				t.Errorf("replay %d returned booking %q, want %q", i, ids[i], final.id)
			}
		}
		if n := count(); n != base+1 {
			t.Fatalf("want exactly %d bookings after 50 replays, got %d", base+1, n)
		}
	})

	// 4. Refused retries: -32602, nothing written.
	t.Run("refused retries", func(t *testing.T) {
		fresh := func() (*mcp.CallToolResult, mcp.InputResponseMap) {
			r1 := first(t, alice, args)
			return r1, mcp.InputResponseMap{"contact": accept(map[string]any{"name": markName, "email": markEmail})}
		}
		r, resp := fresh()
		st := []byte(r.RequestState)
		i := len("v4.local.") + 40
		st[i] ^= 0x01 // still base64url: flips one bit of the sealed body
		if st[i] == '.' || st[i] == r.RequestState[i] {
			t.Fatal("bad tamper")
		}
		_, err := call(alice, args, string(st), resp)
		wantInvalidParams(t, "tampered", err)

		r, resp = fresh()
		_, err = call(bob, args, r.RequestState, resp)
		wantInvalidParams(t, "cross-principal", err)

		r, resp = fresh()
		_, err = call(alice, map[string]any{"topic": "something else"}, r.RequestState, resp)
		wantInvalidParams(t, "changed arguments", err)

		r, resp = fresh()
		skew.Store(int64(11 * time.Minute)) // past the policy's 600 s
		_, err = call(alice, args, r.RequestState, resp)
		skew.Store(0)
		wantInvalidParams(t, "expired", err)

		// The final (complete) state too: other principal, other arguments.
		_, err = call(bob, args, final.state, final.responses)
		wantInvalidParams(t, "cross-principal final", err)
		_, err = call(alice, map[string]any{"topic": "x"}, final.state, final.responses)
		wantInvalidParams(t, "changed-arguments final", err)

		if n := count(); n != base+1 {
			t.Fatalf("a refused retry wrote a booking: %d", n)
		}
		if bs := bookings(t, bob); len(bs) != 0 {
			t.Fatalf("bob sees bookings: %v", bs)
		}
		metrics := get(t, s.base+"/metrics", "")
		for _, reason := range []string{"tampered", "principal", "arguments", "expired"} {
			if !strings.Contains(metrics, `mrtr_rejected_states_total{reason="`+reason+`"}`) {
				t.Errorf("/metrics has no rejected state with reason %q", reason)
			}
		}
	})

	t.Run("connect_calendar", func(t *testing.T) {
		ctx := context.Background()
		r1, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "connect_calendar", Arguments: map[string]any{}})
		r1 = needsInput(t, r1, err, "calendar")
		ep := r1.InputRequests["calendar"].(*mcp.ElicitParams)
		if ep.Mode != "url" || !strings.HasPrefix(ep.URL, s.base+"/connect/") {
			t.Fatalf("want URL mode to this server's /connect page, got %+v", ep)
		}
		consent := mcp.InputResponseMap{"calendar": &mcp.ElicitResult{Action: "accept"}}
		// Accepted but not submitted yet: asked again, URL mode.
		r2, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "connect_calendar", Arguments: map[string]any{}, RequestState: r1.RequestState, InputResponses: consent})
		r2 = needsInput(t, r2, err, "calendar")
		if ep2 := r2.InputRequests["calendar"].(*mcp.ElicitParams); ep2.Mode != "url" || ep2.URL != ep.URL {
			t.Fatalf("the re-ask should send the same page: %+v", ep2)
		}
		// Bob opens Alice's link: refused, nothing stored.
		if code, body := postForm(t, ep.URL, url.Values{"token": {tokBob}, "api_key": {markCalKey}}); code != http.StatusForbidden || !strings.Contains(body, "another account") {
			t.Fatalf("bob on alice's link: %d %s", code, body)
		}
		if code, _ := postForm(t, ep.URL, url.Values{"token": {"not-a-token-at-all"}, "api_key": {markCalKey}}); code != http.StatusUnauthorized {
			t.Fatalf("bad token: %d", code)
		}
		// Alice submits: stored. (Round 2 is the policy's last for this
		// tool: internal/server TestConnectLoopStopsAtRoundLimit.)
		if code, body := postForm(t, ep.URL, url.Values{"token": {tokAlice}, "api_key": {markCalKey}}); code != http.StatusOK || !strings.Contains(body, "connected") {
			t.Fatalf("alice: %d %s", code, body)
		}
		r3, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "connect_calendar", Arguments: map[string]any{}, RequestState: r2.RequestState, InputResponses: consent})
		if err != nil || r3.NeedsInput() || r3.IsError {
			t.Fatalf("after the page: %v %+v", err, r3)
		}
		b, _ := json.Marshal(r3)
		if strings.Contains(string(b), markCalKey) {
			t.Fatal("the calendar key reached the MCP client")
		}
		// The link is single-use.
		if code, _ := postForm(t, ep.URL, url.Values{"token": {tokAlice}, "api_key": {"another"}}); code != http.StatusGone {
			t.Fatalf("reused link: %d", code)
		}
	})

	t.Run("401 without a valid bearer token", func(t *testing.T) {
		for _, tok := range []string{"", "wrong-token-0123456789"} {
			req, _ := http.NewRequest("POST", s.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
			req.Header.Set("Content-Type", "application/json")
			if tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("token %q: HTTP %d, want 401", tok, resp.StatusCode)
			}
		}
	})

	t.Run("no secret in any log line", func(t *testing.T) {
		logs := s.logs.String()
		if !strings.Contains(logs, `"tool":"book_demo_call"`) || !strings.Contains(logs, `"reason":"tampered"`) {
			t.Fatalf("the logs miss the tool calls:\n%s", logs)
		}
		secrets := []string{markName, "Markername", markEmail, "zyxq.marker71", markTopic, markCalKey, tokAlice, tokBob, s.key,
			s.key[len("k4.local."):], final.state, final.state[len("v4.local."):60]}
		for _, sec := range secrets {
			if strings.Contains(logs, sec) {
				t.Errorf("a log line contains %q", sec)
			}
		}
		for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
			if !json.Valid([]byte(line)) && !strings.HasPrefix(line, "#") && line != "" {
				t.Errorf("not a structured log line: %q", line)
			}
		}
	})
}

func postForm(t *testing.T, u string, v url.Values) (int, string) {
	t.Helper()
	resp, err := http.PostForm(u, v)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func get(t *testing.T, u, token string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return string(b)
}
