package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mrtr-wasm/mrtr-wasm/internal/server"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var (
	bindingLogged  = regexp.MustCompile(`"reason":"(principal|audience|method|target|arguments)"`)
	bindingCounted = regexp.MustCompile(`reason="(principal|audience|method|target|arguments)"`)
)

// TestEditedStatesAreTamperedOverTheWire: 300 random one-character edits
// of a real requestState, each sent as a retry over HTTP, all get -32602,
// and none is logged or counted as a binding mismatch: a client cannot
// choose the reason operators see. The same state presented by another
// principal is still counted as "principal".
func TestEditedStatesAreTamperedOverTheWire(t *testing.T) {
	tokens, err := server.NewTokens(map[string]string{"tok-alice-0123456789": "alice", "tok-bob-0123456789ab": "bob"})
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	ts, _ := newTestServerWith(t, server.Config{Tokens: tokens, Registry: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	u := ts.URL + "/mcp"
	as := func(tok string) map[string]string {
		h := std("tools/call", "book_demo_call")
		h["Authorization"] = "Bearer " + tok
		return h
	}
	state := stateOf(t, post(t, u, as("tok-alice-0123456789"), firstCall))
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	r := rand.New(rand.NewPCG(14, 300))
	for i := 0; i < 300; i++ {
		b := []byte(state)
		at := len("v4.local.") + r.IntN(len(b)-len("v4.local."))
		for c := b[at]; c == b[at] || c == '.'; {
			if b[at] == '.' {
				at++
				continue
			}
			c = alphabet[r.IntN(len(alphabet))]
			if c != b[at] {
				b[at] = c
				break
			}
		}
		resp := post(t, u, as("tok-alice-0123456789"), retryBody(1000+i, string(b), `"arguments":{},"inputResponses":`+contactOK))
		if resp.Error == nil || resp.Error.Code != -32602 || string(resp.ID) != itoa(1000+i) {
			t.Fatalf("edit %d at %d: want -32602, got %s", i, at, resp.raw)
		}
	}
	if m := bindingLogged.FindString(logs.String()); m != "" {
		t.Fatalf("an edited state was logged as a binding mismatch: %s", m)
	}
	metrics := get(t, ts.URL+"/metrics")
	var rejected float64
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "mrtr_rejected_states_total{") {
			if bindingCounted.MatchString(line) {
				t.Fatalf("an edited state was counted as a binding mismatch: %s", line)
			}
			var v float64
			_ = json.Unmarshal([]byte(line[strings.LastIndexByte(line, ' ')+1:]), &v)
			rejected += v
		}
	}
	if rejected != 300 {
		t.Fatalf("%v states counted as rejected, want 300:\n%s", rejected, metrics)
	}
	// The intact state, presented by bob: a genuine rebinding.
	resp := post(t, u, as("tok-bob-0123456789ab"), retryBody(2, state, `"arguments":{},"inputResponses":`+contactOK))
	if resp.Error == nil || resp.Error.Code != -32602 {
		t.Fatalf("bob with alice's state: %s", resp.raw)
	}
	if !strings.Contains(get(t, ts.URL+"/metrics"), `mrtr_rejected_states_total{reason="principal"} 1`) || !bindingLogged.MatchString(logs.String()) {
		t.Fatal(`alice's state presented by bob was not counted as "principal"`)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
