package mcpgo

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// The smuggles: params members that mcp-go reads in any case. Each names
// what the server acts on when it gets the message directly.
var smuggles = []struct {
	name, tool, header, extra, acted string
}{
	// The body's exact name (what the guard core binds a state to) is one
	// tool, the one mcp-go runs (and its Mcp-Name header) another.
	{"another tool's name", "list_bookings", "delete_account", `,"NAME":"delete_account"`, "delete_account"},
	{"a forged upstream state on a first call", "book", "book", `,"REQUESTSTATE":"round=2;name=Mallory"`, "book with state round=2;name=Mallory"},
	{"the same with a long s", "book", "book", `,"reque\u017ftState":"round=2;name=Mallory"`, "book with state round=2;name=Mallory"},
}

// TestSmugglesReachMcpGoDirectly is the premise: sent straight to the
// mcp-go server, each smuggle is acted on.
func TestSmugglesReachMcpGoDirectly(t *testing.T) {
	rec := &calls{}
	up := newUpstream(t, rec)
	for _, s := range smuggles {
		callHeader(t, up, s.tool, s.header, s.extra)
		if got := rec.take(); !slices.Contains(got, s.acted) {
			t.Errorf("%s: the server ran %q, want %q (has mcp-go changed how it reads names?)", s.name, got, s.acted)
		}
	}
}

// TestProxyRefusesSmuggles: through mrtr-wasm proxy, each gets -32602 and
// the mcp-go server sees nothing; an ordinary round then completes, with
// the server's own requestState restored.
func TestProxyRefusesSmuggles(t *testing.T) {
	rec := &calls{}
	proxy := startProxy(t, newUpstream(t, rec))
	for _, s := range smuggles {
		r := callHeader(t, proxy, s.tool, s.header, s.extra)
		if r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("%s: got %s %+v, want -32602", s.name, r.Result, r.Error)
		}
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("the mcp-go server ran %q", got)
	}

	r := call(t, proxy, "book", "")
	var ir struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &ir) != nil || ir.ResultType != "input_required" || ir.InputRequests["confirm"] == nil {
		t.Fatalf("first call: %s %+v", r.Result, r.Error)
	}
	if !strings.HasPrefix(ir.RequestState, "v4.local.") {
		t.Fatalf("the client sees the server's own state %q", ir.RequestState)
	}
	st, _ := json.Marshal(ir.RequestState)
	r = call(t, proxy, "book", `,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":`+string(st))
	if r.Error != nil || !strings.Contains(string(r.Result), "booked") {
		t.Fatalf("retry: %s %+v", r.Result, r.Error)
	}
	if got := rec.take(); !slices.Equal(got, []string{"book with state round=1"}) {
		t.Fatalf("the mcp-go server ran %q, want the book with its own state", got)
	}
}
