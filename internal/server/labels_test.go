package server_test

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMetricLabelsAreServesOwn: serve's tool labels are the tools it
// registers itself (the SDK refuses another name before any handler
// counts it), so tools/call, prompts/get and resources/read with names a
// client makes up, with or without a state, add no series to /metrics.
func TestMetricLabelsAreServesOwn(t *testing.T) {
	ts, _ := newTestServer(t, nil)
	metrics := func() string {
		r, err := http.Get(ts.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return string(b)
	}
	before := metrics()
	var names []string
	for i := range 30 {
		b := make([]byte, 2000)
		_, _ = rand.Read(b)
		name := hex.EncodeToString(b)
		names = append(names, name)
		method, member := []string{"tools/call", "prompts/get", "resources/read"}[i%3], `"name"`
		if method == "resources/read" {
			name, member = "file:///"+name, `"uri"`
		}
		state := ""
		if i%2 == 1 {
			state = `"requestState":"v4.local.garbage","inputResponses":{},`
		}
		r := post(t, ts.URL+"/mcp", std(method, name), `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{`+member+`:"`+name+`",`+state+
			`"arguments":{},"_meta":`+meta("2026-07-28", caps)+`}}`)
		if r.Error == nil {
			t.Fatalf("%s of a made-up name was served: %s", method, r.raw)
		}
	}
	after := metrics()
	for _, n := range names {
		if strings.Contains(after, n[:32]) {
			t.Fatal("a made-up name became a label")
		}
	}
	if d := len(after) - len(before); d > 2048 || d < -2048 {
		t.Fatalf("/metrics went from %d to %d bytes", len(before), len(after))
	}
}
