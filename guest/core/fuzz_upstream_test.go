package core

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// --- FuzzUpstream: a hostile upstream's result, then the client's answers --

// The client's request a proxy relays in FuzzUpstream, per method.
var upstreamFuzzCalls = [3]struct{ method, params string }{
	{"tools/call", `{"name":"book_demo_call","arguments":{"topic":"pricing"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + tAllCaps + `}}`},
	{"prompts/get", `{"name":"summary","arguments":{"account":"acme"},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}`},
	{"resources/read", `{"uri":"crm://accounts/acme","_meta":{"io.modelcontextprotocol/clientCapabilities":` + tAllCaps + `}}`},
}

func upstreamFuzzEnv(op, principal, params string, mode int, more string) string {
	c := upstreamFuzzCalls[mode%len(upstreamFuzzCalls)]
	return `{"v":1,"op":"` + op + `","now":` + itoa(int(tNowMs)) + `,"rand":"` + tRand(op) + `","principal":` + tJSON(principal) +
		`,"upstream":"http://127.0.0.1:9000/mcp","request":{"jsonrpc":"2.0","id":7,"method":"` + c.method + `","params":` + params + `}` + more + `}`
}

// withRetry is the client's params with inputResponses (the raw bytes
// answers, when they are not empty) and the sealed requestState added.
func withRetry(params string, answers []byte, token string) string {
	r := params[:len(params)-1]
	if len(answers) > 0 {
		r += `,"inputResponses":` + string(answers)
	}
	return r + `,"requestState":` + tJSON(token) + `}`
}

// FuzzUpstream puts an upstream's result (any bytes) into upstream.ask and
// the client's answers (any bytes) into the retry's upstream.resume, and
// holds the proxy's promises: what reaches the client passes the linter,
// the upstream's state never reaches the client, the state opens only for
// its principal, and a forward carries the upstream's state and the
// client's answers exactly as they were sent.
func FuzzUpstream(f *testing.F) {
	for _, s := range []struct{ result, answers string }{
		{`{"resultType":"input_required","inputRequests":{"contact":` + tContactForm + `},"requestState":"round=1"}`, tContactOK},
		{`{"resultType":"input_required","inputRequests":{"contact":` + tContactForm + `},"requestState":"round=1"}`, `{"contact":{"action":"accept","content":{"name":"Ann","email":"nope"}}}`},
		{`{"resultType":"input_required","inputRequests":{"contact":` + tContactForm + `,"confirm":` + tConfirmForm + `}}`, `{ "contact" : {"action":"decline"}, "x":1 }`},
		{`{"resultType":"input_required","inputRequests":{"confirm":` + tConfirmForm + `},"requestState":""}`, `{"confirm":{"action":"accept","content":{"ok":true}}}`},
		{`{"resultType":"input_required","inputRequests":{"confirm":` + tConfirmForm + `},"requestState":null}`, `{"confirm":{"action":"cancel"}}`},
		{`{"resultType":"input_required","inputRequests":{"seats":` + tSeatsForm + `},"requestState":"s\u00e9\"\\x"}`, `{"seats":{"action":"accept","content":{"seats":2,"slot":"tue-14"}}}`},
		{`{"resultType":"input_required","inputRequests":{"calendar":` + tURLRequest + `,"summary":` + tSampleReq + `,"roots":` + tRootsReq + `}}`, `{"calendar":{"action":"accept"},"summary":{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"},"roots":{"roots":[{"uri":"file:///x"}]}}`},
		{`{"resultType":"input_required","inputRequests":{"pw":{"method":"elicitation/create","params":{"message":"Log in","requestedSchema":{"type":"object","properties":{"password":{"type":"string"}}}}}}}`, `{}`},
		{`{"resultType":"input_required","inputRequests":{"k":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{"pin":{"type":"string","title":"PIN"}}}}}}}`, ``},
		{`{"resultType":"complete","content":[]}`, `{}`},
		{`{"resultType":"input_required","requestState":7}`, `[]`},
		{`{"resultType":"input_required","inputRequests":{"contact":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{"phone":{"type":"string"}}}},"METHOD":"roots/list","PARAMS":null}}}`, `{"contact":{"action":"accept","content":{"phone":"1"}}}`},
		{`{"resultType":"input_required","inputRequests":null,"requestState":"only"}`, `{}`},
		{`{"resultType":"input_required","inputRequests":{"confirm":` + tConfirmForm + `}}`, `{"confirm":{"action":"decline","ACTION":"accept","content":{"ok":"x"}}}`},
		// Mass assignment: fields the form did not ask, nested, and
		// members beside action and content never reach the upstream.
		{`{"resultType":"input_required","inputRequests":{"contact":` + tContactForm + `},"requestState":"r"}`, `{"contact":{"action":"accept","content":{"name":"Bob","email":"bob@example.com","role":"admin","password":"hunter2","profile":{"isAdmin":true,"deep":[{"x":[1,2,3]}]}},"extraTop":{"x":1}},"other":{"action":"accept"}}`},
		{`{"resultType":"input_required","inputRequests":{"contact":` + tContactForm + `}}`, `{"contact":{"action":"decline","content":{"name":"Bob"},"_meta":{}}}`},
		{`{"resultType":"input_required","inputRequests":{"calendar":` + tURLRequest + `,"summary":` + tSampleReq + `,"roots":` + tRootsReq + `}}`, `{"calendar":{"action":"accept","content":{"x":1}},"summary":{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m","stopReason":1,"_meta":{}},"roots":{"roots":[{"uri":"file:///x","name":"x","y":2},{"uri":"file:///z","name":3}],"more":true}}`},
	} {
		for mode := range uint8(3) {
			f.Add(mode, []byte(s.result), []byte(s.answers))
		}
	}
	fx := newFixture(f)
	g := newConfigured(f, "")
	n := 0
	f.Fuzz(func(t *testing.T, mode uint8, result, answers []byte) {
		params := upstreamFuzzCalls[int(mode)%len(upstreamFuzzCalls)].params
		ask := upstreamFuzzEnv("upstream.ask", "alice", params, int(mode), `,"response":{"jsonrpc":"2.0","id":7,"result":`+string(result)+`}`)
		out := run(g, ask)
		resp := checkResponse(t, out)
		if again := run(g, ask); !bytes.Equal(again, out) {
			t.Fatalf("the same ask twice gave different responses:\n%s\n%s", out, again)
		}
		n++
		defer func() { fx.usable(t, g, n%8 == 0) }()
		// upstream.inputs shows the policy exactly what the ask shows the
		// client, and refuses what the ask refuses for the same reason.
		iout := run(g, `{"v":1,"op":"upstream.inputs","response":{"jsonrpc":"2.0","id":7,"result":`+string(result)+`}}`)
		iresp := checkResponse(t, iout)
		if iresp["ok"] != true {
			ie, _ := iresp["error"].(map[string]any)
			if e, _ := resp["error"].(map[string]any); resp["ok"] == true || e["code"] != ie["code"] {
				t.Fatalf("upstream.inputs refused with %v, the ask answered %s", ie["code"], out)
			}
			return
		}
		if resp["ok"] != true {
			return
		}
		var ir, ar struct {
			InputRequests json.RawMessage `json:"inputRequests"`
			Result        struct {
				InputRequests json.RawMessage `json:"inputRequests"`
			} `json:"result"`
		}
		if json.Unmarshal(iout, &ir) != nil || json.Unmarshal(out, &ar) != nil {
			t.Fatal("unreadable outputs")
		}
		if want := ar.Result.InputRequests; !bytes.Equal(ir.InputRequests, want) && !(len(want) == 0 && string(ir.InputRequests) == "{}") {
			t.Fatalf("the policy is shown %s, the client %s", ir.InputRequests, want)
		}
		// Read with exact member names (a map; struct fields would also
		// match "inputReQuests").
		var top map[string]json.RawMessage
		var up struct {
			InputRequests map[string]json.RawMessage
			RequestState  *string
		}
		if err := json.Unmarshal(result, &top); err != nil {
			t.Fatalf("ask sealed a result encoding/json cannot read (%v): %q", err, result)
		}
		if r := top["inputRequests"]; r != nil && json.Unmarshal(r, &up.InputRequests) != nil {
			t.Fatalf("unreadable inputRequests: %s", r)
		}
		if r := top["requestState"]; r != nil && json.Unmarshal(r, &up.RequestState) != nil {
			t.Fatalf("unreadable requestState: %s", r)
		}
		res, _ := resp["result"].(map[string]any)
		token, _ := res["requestState"].(string)
		if !strings.HasPrefix(token, "v4.local.") {
			t.Fatalf("no sealed state in %s", out)
		}
		if ups := up.RequestState; ups != nil && len(*ups) >= 8 && bytes.Contains(out, []byte(tJSON(*ups)[1:len(tJSON(*ups))-1])) {
			t.Fatalf("the upstream's requestState reached the client: %s", out)
		}
		// Every request the client sees is one the upstream asked, and
		// passes the linter on its own: a refused form never reaches the
		// user.
		got, _ := res["inputRequests"].(map[string]any)
		if len(got) != len(up.InputRequests) {
			t.Fatalf("%d requests asked, %d passed on: %s", len(up.InputRequests), len(got), out)
		}
		for k, r := range up.InputRequests {
			if _, ok := got[k]; !ok {
				t.Fatalf("request %q dropped: %s", k, out)
			}
			lout := run(g, `{"v":1,"op":"lint","request":`+string(r)+`}`)
			for _, x := range checkResponse(t, lout)["findings"].([]any) {
				if x.(map[string]any)["severity"] == SeverityError {
					t.Fatalf("request %q reached the client but lint refuses it: %s", k, lout)
				}
			}
		}

		retry := withRetry(params, answers, token)
		other := run(g, upstreamFuzzEnv("upstream.resume", "mallory", retry, int(mode), ""))
		if r := checkResponse(t, other); r["ok"] == true {
			t.Fatalf("another principal's retry was accepted: %s", other)
		}
		rout := run(g, upstreamFuzzEnv("upstream.resume", "alice", retry, int(mode), ""))
		rresp := checkResponse(t, rout)
		if rresp["ok"] != true {
			return
		}
		switch status, _ := rresp["status"].(string); status {
		case "input_required":
			if _, has := rresp["forward"]; has {
				t.Fatalf("a re-ask with a forward: %s", rout)
			}
			return
		case "complete", "declined", "cancelled":
		default:
			t.Fatalf("status %q: %s", status, rout)
		}
		var fw struct {
			Forward struct {
				Params struct {
					InputResponses json.RawMessage `json:"inputResponses"`
					RequestState   *string         `json:"requestState"`
				} `json:"params"`
			} `json:"forward"`
		}
		if err := json.Unmarshal(rout, &fw); err != nil {
			t.Fatal(err)
		}
		p := fw.Forward.Params
		switch {
		case up.RequestState == nil && p.RequestState != nil:
			t.Fatalf("the upstream had no state; the forward carries %q", *p.RequestState)
		case up.RequestState != nil && (p.RequestState == nil || *p.RequestState != *up.RequestState):
			t.Fatalf("the upstream's state %q did not come back: %s", *up.RequestState, rout)
		}
		// Each forwarded answer answers a request that was asked, and
		// holds only what the core checked, each value byte for byte as
		// the client wrote it; the output counts exactly what was left
		// out.
		if len(bytes.TrimSpace(answers)) == 0 {
			if p.InputResponses != nil {
				t.Fatalf("no answers sent, %s forwarded", p.InputResponses)
			}
			return
		}
		var sent, fwd map[string]json.RawMessage
		if json.Unmarshal(answers, &sent) != nil || json.Unmarshal(p.InputResponses, &fwd) != nil {
			t.Fatalf("answers forwarded as %s, sent as %s", p.InputResponses, answers)
		}
		left := 0
		for k := range sent {
			if _, asked := up.InputRequests[k]; !asked {
				left++
			}
		}
		for k, v := range fwd {
			req, asked := up.InputRequests[k]
			if !asked {
				t.Fatalf("answer %q forwarded, but no one asked it: %s", k, p.InputResponses)
			}
			left += forwardedAsChecked(t, k, req, sent[k], v)
		}
		var d struct {
			Dropped *struct{ Fields, Members, Responses int } `json:"dropped"`
		}
		if err := json.Unmarshal(rout, &d); err != nil {
			t.Fatal(err)
		}
		counted := 0
		if d.Dropped != nil {
			counted = d.Dropped.Fields + d.Dropped.Members + d.Dropped.Responses
		}
		if counted != left {
			t.Fatalf("%d names left out of the answers, the output counts %d: %s", left, counted, rout)
		}
	})
}

// forwardedAsChecked fails unless fwd (an answer forwarded for request
// req) holds only members of sent that the core checks, each with the
// client's bytes, and returns how many of sent's names it left out.
func forwardedAsChecked(t *testing.T, key string, req, sent, fwd json.RawMessage) int {
	t.Helper()
	// Read with exact member names (maps), as the core reads them.
	var rq, params, schema, s, f map[string]json.RawMessage
	var props map[string]json.RawMessage
	var method, mode string
	if json.Unmarshal(req, &rq) != nil || json.Unmarshal(sent, &s) != nil || json.Unmarshal(fwd, &f) != nil {
		t.Fatalf("answer %q: unreadable (%s, sent %s)", key, fwd, sent)
	}
	_ = json.Unmarshal(rq["method"], &method)
	_ = json.Unmarshal(rq["params"], &params)
	_ = json.Unmarshal(params["mode"], &mode)
	_ = json.Unmarshal(params["requestedSchema"], &schema)
	_ = json.Unmarshal(schema["properties"], &props)
	// sub checks that f's members are sent's, byte for byte, within keep
	// (nil: any), and counts those of sent it left out.
	sub := func(where string, s, f map[string]json.RawMessage, keep ...string) int {
		for n, v := range f {
			if keep != nil && !slices.Contains(keep, n) {
				t.Fatalf("answer %q: %s%s was forwarded: %s", key, where, n, fwd)
			}
			if n == "action" {
				continue // written as read
			}
			if !bytes.Equal(v, s[n]) {
				t.Fatalf("answer %q: %s%s forwarded as %s, sent as %s", key, where, n, v, s[n])
			}
		}
		left := 0
		for n := range s {
			if _, ok := f[n]; !ok {
				left++
			}
		}
		return left
	}
	var action string
	_ = json.Unmarshal(s["action"], &action)
	switch {
	case method == "elicitation/create" && (action != "accept" || mode == "url"):
		if want := `{"action":"` + action + `"}`; string(fwd) != want {
			t.Fatalf("answer %q: forwarded %s, want %s", key, fwd, want)
		}
		return len(s) - 1
	case method == "elicitation/create":
		var sc, fc map[string]json.RawMessage
		_ = json.Unmarshal(s["content"], &sc)
		if json.Unmarshal(f["content"], &fc) != nil || fc == nil {
			t.Fatalf("answer %q: an accepted form forwarded without content: %s", key, fwd)
		}
		for n := range fc {
			if _, ok := props[n]; !ok {
				t.Fatalf("answer %q: content.%s forwarded, but the form did not ask it", key, n)
			}
		}
		for n := range sc {
			if _, ok := props[n]; ok && fc[n] == nil {
				t.Fatalf("answer %q: the asked field %s was not forwarded: %s", key, n, fwd)
			}
		}
		delete(f, "content")
		left := sub("content.", sc, fc) + sub("", s, f, "action")
		if _, had := s["content"]; had {
			left-- // forwarded, reduced
		}
		return left
	case method == "sampling/createMessage":
		return sub("", s, f, "role", "content", "model", "stopReason")
	default: // roots/list
		var sr, fr []map[string]json.RawMessage
		if json.Unmarshal(s["roots"], &sr) != nil || json.Unmarshal(f["roots"], &fr) != nil || len(sr) != len(fr) {
			t.Fatalf("answer %q: roots forwarded as %s, sent as %s", key, fwd, sent)
		}
		left := len(s) - 1
		for i := range fr {
			left += sub("roots[].", sr[i], fr[i], "uri", "name")
		}
		return left
	}
}
