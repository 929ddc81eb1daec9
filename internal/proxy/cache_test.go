package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/internal/identity"
)

// TestScopedCache: the cache keeps what a CacheableResult allows, on
// synctest's exact clock: public is shared, private is per principal,
// ttl 0 is kept by nobody, a value expires at its ttl or at the proxy's
// bound, concurrent misses share one fetch, and the principals kept are
// bounded.
func TestScopedCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var fetches atomic.Int64
		hint := cacheHint{}
		fetch := func(who string) func(context.Context) (string, cacheHint, error) {
			return func(context.Context) (string, cacheHint, error) {
				fetches.Add(1)
				return "list of " + who, hint, nil
			}
		}
		get := func(c *scopedCache[string], who string) string { return c.get(ctx, who, fetch(who)).v }

		// Private (the default): each principal its own.
		c := newScopedCache[string](3, 0, time.Hour)
		hint = cacheHint{ttl: time.Minute}
		if get(c, "alice") != "list of alice" || get(c, "bob") != "list of bob" || get(c, "alice") != "list of alice" {
			t.Fatal("a private value was served to another principal")
		}
		if fetches.Load() != 2 {
			t.Fatalf("%d fetches, want 2 (alice once, bob once)", fetches.Load())
		}
		time.Sleep(time.Minute - time.Millisecond)
		get(c, "alice")
		if fetches.Load() != 2 {
			t.Fatal("refetched before the ttl ran out")
		}
		time.Sleep(time.Millisecond)
		get(c, "alice")
		if fetches.Load() != 3 {
			t.Fatal("not refetched once the ttl ran out")
		}
		// At most 3 principals: the one that expires soonest makes room.
		for _, who := range []string{"carol", "dave", "erin"} {
			get(c, who)
		}
		if n := c.size(); n != 3 {
			t.Fatalf("%d values kept, want at most 3", n)
		}

		// Public: fetched for one, served to all, for its ttl.
		c = newScopedCache[string](3, 0, time.Hour)
		fetches.Store(0)
		hint = cacheHint{public: true, ttl: time.Minute}
		if get(c, "alice") != "list of alice" || get(c, "bob") != "list of alice" || fetches.Load() != 1 {
			t.Fatalf("a public value was not shared (%d fetches)", fetches.Load())
		}
		time.Sleep(time.Minute)
		if get(c, "bob") != "list of bob" || fetches.Load() != 2 {
			t.Fatal("a public value outlived its ttl")
		}

		// ttl 0: stale at once.
		c = newScopedCache[string](3, 0, time.Hour)
		fetches.Store(0)
		hint = cacheHint{public: true}
		get(c, "alice")
		get(c, "alice")
		if fetches.Load() != 2 || c.size() != 0 {
			t.Fatalf("ttl 0: %d fetches and %d kept, want 2 and 0", fetches.Load(), c.size())
		}

		// ttl 0 under the proxy's floor: kept for the floor, per
		// principal when private, and not a moment longer.
		c = newScopedCache[string](3, time.Second, time.Hour)
		fetches.Store(0)
		hint = cacheHint{}
		if get(c, "alice") != "list of alice" || get(c, "alice") != "list of alice" || get(c, "bob") != "list of bob" || fetches.Load() != 2 {
			t.Fatalf("ttl 0 with a 1 s floor: %d fetches, want 2 (alice once, bob once)", fetches.Load())
		}
		time.Sleep(time.Second - time.Millisecond)
		get(c, "alice")
		if fetches.Load() != 2 {
			t.Fatal("refetched within the floor")
		}
		time.Sleep(time.Millisecond)
		get(c, "alice")
		if fetches.Load() != 3 {
			t.Fatal("kept past the floor")
		}

		// The proxy's bound is shorter than the upstream's ttl.
		c = newScopedCache[string](3, 0, time.Second)
		fetches.Store(0)
		hint = cacheHint{ttl: time.Hour}
		get(c, "alice")
		time.Sleep(time.Second)
		get(c, "alice")
		if fetches.Load() != 2 {
			t.Fatal("kept past the proxy's own bound")
		}

		// Concurrent misses share one fetch, even with ttl 0.
		c = newScopedCache[string](3, 0, time.Hour)
		fetches.Store(0)
		hint = cacheHint{}
		release := make(chan struct{})
		slow := func(context.Context) (string, cacheHint, error) {
			fetches.Add(1)
			<-release
			return "slow", hint, nil
		}
		var wg sync.WaitGroup
		got := make([]string, 5)
		for i := range got {
			wg.Go(func() { got[i] = c.get(ctx, "alice", slow).v })
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		if fetches.Load() != 1 || strings.Join(got, ",") != "slow,slow,slow,slow,slow" {
			t.Fatalf("%d fetches for 5 concurrent misses (%q)", fetches.Load(), got)
		}

		// A failure is remembered for failBackoff, for that principal.
		c = newScopedCache[string](3, 0, time.Hour)
		fetches.Store(0)
		boom := func(context.Context) (string, cacheHint, error) {
			fetches.Add(1)
			return "", cacheHint{}, errors.New("down")
		}
		if c.get(ctx, "alice", boom).err == nil || c.get(ctx, "alice", boom).err == nil || fetches.Load() != 1 {
			t.Fatalf("failure not kept: %d fetches", fetches.Load())
		}
		time.Sleep(failBackoff)
		c.get(ctx, "alice", boom)
		if fetches.Load() != 2 {
			t.Fatal("failure kept past failBackoff")
		}
	})
}

// principalUpstream is a 2026-07-28 upstream whose tools/list and
// server/discover depend on who asks (the X-Principal header the proxy
// forwards): alice's "lookup" mirrors its region argument into
// Mcp-Param-Region, bob's does not. scope and ttl are what its results
// say of themselves ("" and -1: left out).
type principalUpstream struct {
	scope string
	ttl   int64
	// tokens, when set, decide who asks by the Authorization header
	// instead (the proxy passes the client's token).
	tokens map[string]string
	mu     sync.Mutex
	lists  map[string]int // tools/list fetches by principal
	discs  map[string]int // server/discover fetches by principal
}

func (u *principalUpstream) serve(t testing.TB) *httptest.Server {
	u.lists, u.discs = map[string]int{}, map[string]int{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &m)
		who := r.Header.Get("X-Principal")
		if u.tokens != nil {
			who = u.tokens[r.Header.Get("Authorization")]
		}
		u.mu.Lock()
		defer u.mu.Unlock()
		cache := ""
		if u.scope != "" {
			cache += `,"cacheScope":"` + u.scope + `"`
		}
		if u.ttl >= 0 {
			cache += `,"ttlMs":` + fmt.Sprint(u.ttl)
		}
		switch m.Method {
		case "tools/list":
			u.lists[who]++
			region := `{"type":"string"}`
			if who == "alice" {
				region = `{"type":"string","x-mcp-header":"Region"}`
			}
			writeJSON(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"resultType":"complete","tools":[{"name":"lookup","inputSchema":{"type":"object","properties":{"region":`+region+`}}},{"name":"only_`+who+`","inputSchema":{"type":"object"}}]`+cache+`}}`)
		case "server/discover":
			u.discs[who]++
			writeJSON(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],`+
				`"capabilities":{"tools":{"listChanged":true},"logging":{},"experimental":{"x":{}},"extensions":{"io.modelcontextprotocol/tasks":{},"com.example/ext":{"a":1}}},`+
				`"instructions":"Ask `+who+`.","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"upstream-for-`+who+`","version":"7"},"com.example/note":"kept"}`+cache+`}}`)
		default:
			writeJSON(w, okResult(body))
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (u *principalUpstream) counts() (lists, discs map[string]int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	l, d := map[string]int{}, map[string]int{}
	for k, v := range u.lists {
		l[k] = v
	}
	for k, v := range u.discs {
		d[k] = v
	}
	return l, d
}

const (
	aliceToken = "tok-alice-0123456789"
	bobToken   = "tok-bob-0123456789ab"
)

// principalProxy serves a proxy with alice's and bob's tokens that
// forwards the principal as X-Principal.
func principalProxy(t testing.TB, upURL string, toolsTTL time.Duration) string {
	t.Helper()
	tokens, err := identity.NewTokens(map[string]string{aliceToken: "alice", bobToken: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := serveProxy(t, Config{Guard: newGuard(t), Upstream: httpUpstream(t, upURL), Auth: identity.NewTokenAuthenticator(tokens, nil),
		ForwardPrincipal: "X-Principal", ToolsTTL: toolsTTL, ToolsMinTTL: -1, Version: "9.9.9"})
	return base
}

// lookupAs calls lookup {"region":"eu"} as tok without the
// Mcp-Param-Region header and returns the JSON-RPC error code (0: none).
func lookupAs(t testing.TB, base, tok string) int64 {
	t.Helper()
	req := toolRequest(base, idSeq.Add(1), "lookup", `{"region":"eu"}`, "")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m rpcMsg
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if m.Error != nil {
		return m.Error.Code
	}
	return 0
}

// TestToolsListCacheScope: the header checks use the tools as the caller
// sees them. A private list (said, or not said) is fetched with each
// principal's identity and never shown to another; a public one is
// fetched once for all; ttlMs 0 or absent is read again for every call;
// a positive ttlMs expires.
func TestToolsListCacheScope(t *testing.T) {
	const missingHeader = -32020
	t.Run("private", func(t *testing.T) {
		u := &principalUpstream{scope: "private", ttl: 3_600_000}
		base := principalProxy(t, u.serve(t).URL, 0)
		if c := lookupAs(t, base, aliceToken); c != missingHeader {
			t.Fatalf("alice without Mcp-Param-Region: code %d, want %d", c, missingHeader)
		}
		if c := lookupAs(t, base, bobToken); c != 0 {
			t.Fatalf("bob (whose lookup mirrors nothing) was checked against alice's list: code %d", c)
		}
		lookupAs(t, base, aliceToken)
		lookupAs(t, base, bobToken)
		if l, _ := u.counts(); l["alice"] != 1 || l["bob"] != 1 || len(l) != 2 {
			t.Fatalf("tools/list fetches %v, want alice 1 and bob 1, each with their X-Principal", l)
		}
	})
	t.Run("public", func(t *testing.T) {
		u := &principalUpstream{scope: "public", ttl: 3_600_000}
		base := principalProxy(t, u.serve(t).URL, 0)
		lookupAs(t, base, aliceToken)
		if c := lookupAs(t, base, bobToken); c != missingHeader {
			t.Fatalf("bob did not get the public list alice fetched: code %d", c)
		}
		if l, _ := u.counts(); l["alice"]+l["bob"] != 1 {
			t.Fatalf("a public list was fetched %v times, want once", l)
		}
	})
	t.Run("unsaid", func(t *testing.T) {
		u := &principalUpstream{ttl: -1} // neither cacheScope nor ttlMs: private, stale at once
		base := principalProxy(t, u.serve(t).URL, 0)
		lookupAs(t, base, aliceToken)
		lookupAs(t, base, aliceToken)
		if c := lookupAs(t, base, bobToken); c != 0 {
			t.Fatalf("bob was checked against alice's list: code %d", c)
		}
		if l, _ := u.counts(); l["alice"] != 2 || l["bob"] != 1 {
			t.Fatalf("tools/list fetches %v, want alice 2 and bob 1", l)
		}
	})
	t.Run("ttl0", func(t *testing.T) {
		u := &principalUpstream{scope: "public", ttl: 0}
		base := principalProxy(t, u.serve(t).URL, 0)
		for range 3 {
			lookupAs(t, base, aliceToken)
		}
		if l, _ := u.counts(); l["alice"] != 3 {
			t.Fatalf("ttlMs 0: %d fetches for 3 calls, want 3", l["alice"])
		}
	})
	t.Run("expiry", func(t *testing.T) {
		u := &principalUpstream{scope: "public", ttl: 200}
		base := principalProxy(t, u.serve(t).URL, 0)
		lookupAs(t, base, aliceToken)
		deadline := time.Now().Add(10 * time.Second)
		for {
			lookupAs(t, base, aliceToken)
			if l, _ := u.counts(); l["alice"] >= 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("a 200 ms ttlMs never expired")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// TestLegacySessionToolsPerPrincipal: a 2025-11-25 client's tools/list is
// its principal's, from a private upstream list.
func TestLegacySessionToolsPerPrincipal(t *testing.T) {
	u := &principalUpstream{scope: "private", ttl: 3_600_000}
	base := principalProxy(t, u.serve(t).URL, 0)
	for _, who := range []struct{ name, tok string }{{"alice", aliceToken}, {"bob", bobToken}} {
		hc := &http.Client{Transport: bearer{who.tok}}
		c := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		tl, err := cs.ListTools(context.Background(), nil)
		cs.Close()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range tl.Tools {
			names = append(names, tool.Name)
		}
		if got, want := strings.Join(names, ","), "lookup,only_"+who.name; got != want {
			t.Fatalf("%s's session lists %q, want %q", who.name, got, want)
		}
	}
}

type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// discoverAs sends server/discover as tok and returns the result.
func discoverAs(t testing.TB, base, tok string) map[string]json.RawMessage {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "server/discover")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || m.Result == nil {
		t.Fatalf("server/discover: %v %+v", err, m)
	}
	return m.Result
}

// TestDiscoverIsTheProxys: server/discover is the proxy's own, built from
// the upstream's (fetched as the caller, cached as it allows).
func TestDiscoverIsTheProxys(t *testing.T) {
	u := &principalUpstream{scope: "private", ttl: 60_000}
	base := principalProxy(t, u.serve(t).URL, 0)
	r := discoverAs(t, base, aliceToken)
	want := map[string]string{
		"resultType":        `"complete"`,
		"supportedVersions": `["2026-07-28","2025-11-25","2025-06-18"]`,
		// the tasks extension is not carried; the rest is
		"capabilities": `{"experimental":{"x":{}},"extensions":{"com.example/ext":{"a":1}},"logging":{},"tools":{"listChanged":true}}`,
		"instructions": `"Ask alice."`,
		"cacheScope":   `"private"`,
		"_meta": `{"com.example/note":"kept","io.modelcontextprotocol/serverInfo":{"name":"upstream-for-alice","version":"7"},` +
			`"mrtr-wasm/proxy":{"name":"mrtr-wasm-proxy","upstreamProtocolVersion":"2026-07-28","version":"9.9.9"}}`,
	}
	for k, v := range want {
		if got := compact(r[k]); got != v {
			t.Errorf("%s = %s, want %s", k, got, v)
		}
	}
	var ttl int64
	if json.Unmarshal(r["ttlMs"], &ttl) != nil || ttl <= 0 || ttl > 60_000 {
		t.Errorf("ttlMs = %s, want what is left of the upstream's 60000", r["ttlMs"])
	}
	discoverAs(t, base, aliceToken)
	if b := discoverAs(t, base, bobToken); compact(b["instructions"]) != `"Ask bob."` {
		t.Errorf("bob got alice's private discover: %s", b["instructions"])
	}
	if _, d := u.counts(); d["alice"] != 1 || d["bob"] != 1 {
		t.Errorf("server/discover fetches %v, want alice 1 and bob 1", d)
	}

	u = &principalUpstream{scope: "public", ttl: 0}
	base = principalProxy(t, u.serve(t).URL, 0)
	r = discoverAs(t, base, aliceToken)
	if compact(r["cacheScope"]) != `"public"` || compact(r["ttlMs"]) != `0` {
		t.Errorf("from a public ttlMs 0 discover: cacheScope %s, ttlMs %s", r["cacheScope"], r["ttlMs"])
	}
}

// TestLegacyDiscover: a 2025 upstream's initialize result becomes the
// same kind of DiscoverResult, without what a 2025 session cannot carry.
func TestLegacyDiscover(t *testing.T) {
	p := &Proxy{cfg: Config{Version: "1.2.3"}}
	init := `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"completions":{},"tasks":{"list":{}}},` +
		`"serverInfo":{"name":"everything","version":"2026.8.31"},"instructions":"Hello."}`
	var r map[string]json.RawMessage
	if err := json.Unmarshal(p.discoverResult(json.RawMessage(init), true, cacheHint{public: true, ttl: legacyDiscoverTTL}, legacyDiscoverTTL), &r); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"capabilities":      `{"completions":{},"resources":{},"tools":{}}`,
		"supportedVersions": `["2026-07-28","2025-11-25","2025-06-18"]`,
		"instructions":      `"Hello."`,
		"cacheScope":        `"public"`,
		"ttlMs":             `60000`,
		"_meta": `{"io.modelcontextprotocol/serverInfo":{"name":"everything","version":"2026.8.31"},` +
			`"mrtr-wasm/proxy":{"name":"mrtr-wasm-proxy","upstreamProtocolVersion":"2025-11-25","version":"1.2.3"}}`,
	}
	for k, v := range want {
		if got := compact(r[k]); got != v {
			t.Errorf("%s = %s, want %s", k, got, v)
		}
	}
}

func compact(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestToolsListCachePerToken: with --upstream-pass-token the upstream
// sees the client's token, and two tokens of one user may carry different
// scopes and so list different tools: a private list is kept per token,
// not only per principal.
func TestToolsListCachePerToken(t *testing.T) {
	const missingHeader = -32020
	const tokWide, tokNarrow = "tok-alice-wide-0123456789", "tok-alice-narrow-012345"
	// The wide token lists alice's lookup (mirrored into a header), the
	// narrow one bob's shape (none).
	u := &principalUpstream{scope: "private", ttl: 3_600_000,
		tokens: map[string]string{"Bearer " + tokWide: "alice", "Bearer " + tokNarrow: "bob"}}
	tokens, err := identity.NewTokens(map[string]string{tokWide: "alice", tokNarrow: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := serveProxy(t, Config{Guard: newGuard(t), Upstream: httpUpstream(t, u.serve(t).URL), Auth: identity.NewTokenAuthenticator(tokens, nil),
		PassToken: true, ToolsMinTTL: -1})
	if c := lookupAs(t, base, tokWide); c != missingHeader {
		t.Fatalf("the wide token without Mcp-Param-Region: code %d, want %d", c, missingHeader)
	}
	if c := lookupAs(t, base, tokNarrow); c != 0 {
		t.Fatalf("the narrow token was checked against the wide token's list: code %d", c)
	}
	if l, _ := u.counts(); l["alice"] != 1 || l["bob"] != 1 {
		t.Fatalf("tools/list fetches %v, want one per token", l)
	}
}
