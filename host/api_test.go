package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// engines: every API test runs on both, and both must agree.
var engines = []Engine{EngineNative, EngineWasm}

const (
	capsAll       = `{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}}`
	contactSchema = `{"type":"object","properties":{"name":{"type":"string","title":"Your name","minLength":1},"email":{"type":"string","title":"Work email","format":"email"}},"required":["name","email"]}`
	confirmSchema = `{"type":"object","properties":{"ok":{"type":"boolean","title":"Confirm","default":false}},"required":["ok"]}`
	seatsSchema   = `{"type":"object","properties":{"seats":{"type":"integer","minimum":1,"maximum":10},"size":{"type":"number"},"slot":{"type":"string","title":"Time slot","oneOf":[{"const":"mon-10","title":"Monday 10:00"},{"const":"tue-14","title":"Tuesday 14:00"}]},"topics":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string","enum":["pricing","security","api"]}},"day":{"type":"string","format":"date"}},"required":["seats","slot"]}`

	annValid = `{"contact":{"action":"accept","content":{"name":"Ann Lee","email":"ann@example.com"}}}`
)

func newGuard(t testing.TB, e Engine, opts ...Option) *Guard {
	t.Helper()
	ctx := context.Background()
	base := []Option{WithEngine(e), WithKeys(NewKeyring()), WithAudience("api.example")}
	g, err := New(ctx, append(base, opts...)...)
	if err != nil {
		t.Fatalf("New(%s): %v", e, err)
	}
	t.Cleanup(func() { _ = g.Close(ctx) })
	return g
}

func bookReq(principal string) *Request {
	return &Request{
		Principal:    principal,
		Method:       "tools/call",
		Target:       "book_demo_call",
		Arguments:    json.RawMessage(`{"topic":"pricing","seats":2}`),
		Capabilities: json.RawMessage(capsAll),
	}
}

// retry is the same request coming back with answers and the state.
func retry(req *Request, state, responses string) *Request {
	r := *req
	r.RequestState = state
	r.InputResponses = nil
	if responses != "" {
		r.InputResponses = json.RawMessage(responses)
	}
	return &r
}

func contactInput() InputRequest {
	return Form("contact", "Who should we book?", json.RawMessage(contactSchema))
}
func confirmInput() InputRequest { return Form("confirm", "Book it?", json.RawMessage(confirmSchema)) }

// ask runs Ask and validates the result on the wire.
func ask(t testing.TB, g *Guard, req *Request, inputs []InputRequest, opts ...AskOption) *InputRequiredResult {
	t.Helper()
	res, err := g.Ask(context.Background(), req, inputs, opts...)
	if err != nil {
		t.Fatalf("Ask: %v", err)
	}
	checkWire(t, res)
	if !strings.HasPrefix(res.RequestState, "v4.local.") {
		t.Fatalf("requestState %q is not a PASETO v4.local token", res.RequestState)
	}
	return res
}

// resume runs Resume and validates an input_required outcome on the wire
// and a complete one's answers.
func resume(t testing.TB, g *Guard, req *Request) *Outcome {
	t.Helper()
	out, err := g.Resume(context.Background(), req)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	switch out.Status {
	case InputRequired:
		if out.InputRequired == nil {
			t.Fatal("input_required outcome without a result")
		}
		checkWire(t, out.InputRequired)
	case Complete:
		checkAnswers(t, out.Answers)
	}
	return out
}

// wantErr requires an *Error with the code and returns it.
func wantErr(t testing.TB, err error, code string) *Error {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", code)
	}
	e, ok := AsError(err)
	if !ok {
		t.Fatalf("error %T %v is not an *Error", err, err)
	}
	if e.Code != code {
		t.Fatalf("code %s (%s), want %s", e.Code, e.Message, code)
	}
	return e
}

// wantState requires the uniform requestState error with a reason.
func wantState(t testing.TB, err error, reason string) {
	t.Helper()
	e := wantErr(t, err, CodeStateInvalid)
	if e.Reason != reason {
		t.Errorf("reason %q, want %q", e.Reason, reason)
	}
	if e.Message != "invalid or expired requestState" {
		t.Errorf("message %q: every state error must read the same", e.Message)
	}
	if e.JSONRPCCode() != -32602 {
		t.Errorf("JSON-RPC code %d, want -32602", e.JSONRPCCode())
	}
	if !errors.Is(err, ErrInvalidState) || errors.Is(err, ErrCapabilityMissing) {
		t.Errorf("errors.Is does not match by code")
	}
}

func forEngines(t *testing.T, f func(t *testing.T, eng Engine)) {
	for _, eng := range engines {
		t.Run(eng.String(), func(t *testing.T) { f(t, eng) })
	}
}

func inputParams(t testing.TB, res *InputRequiredResult, key string) map[string]any {
	t.Helper()
	var r struct {
		Method string         `json:"method"`
		Params map[string]any `json:"params"`
	}
	if err := json.Unmarshal(res.InputRequests[key], &r); err != nil {
		t.Fatalf("input request %q: %v", key, err)
	}
	return r.Params
}

func TestAPIAskResumeComplete(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		g := newGuard(t, eng)
		req := bookReq("alice")
		if req.IsRetry() {
			t.Fatal("a first call is not a retry")
		}
		res := ask(t, g, req, []InputRequest{contactInput()})
		if res.ResultType != "input_required" || len(res.InputRequests) != 1 || res.InputRequests["contact"] == nil {
			t.Fatalf("result %+v", res)
		}
		r2 := retry(req, res.RequestState, annValid)
		if !r2.IsRetry() {
			t.Fatal("a request with a state is a retry")
		}
		out := resume(t, g, r2)
		if out.Status != Complete || out.Round != 1 || out.OperationID == "" {
			t.Fatalf("outcome %+v", out)
		}
		var contact struct {
			Name  string `json:"name"`
			Email string `json:"email"`
		}
		if err := out.Content("contact", &contact); err != nil {
			t.Fatal(err)
		}
		if contact.Name != "Ann Lee" || contact.Email != "ann@example.com" {
			t.Errorf("content %+v", contact)
		}
		if err := out.Content("nope", &contact); err == nil {
			t.Error("Content of a key never asked must fail")
		}
		// Accepted content keeps only the fields the form asked.
		out = resume(t, g, retry(req, res.RequestState, `{"contact":{"action":"accept","content":{"name":"Ann","email":"a@example.com","isAdmin":true}}}`))
		if out.Status != Complete || bytes.Contains(out.Answers["contact"], []byte("isAdmin")) {
			t.Errorf("extra field kept: %s", out.Answers["contact"])
		}
	})
}

func TestAPIReask(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		g := newGuard(t, eng)
		req := bookReq("alice")
		res := ask(t, g, req, []InputRequest{contactInput()})
		out := resume(t, g, retry(req, res.RequestState, `{"contact":{"action":"accept","content":{"name":"Ann Lee","email":"not-an-email"}}}`))
		if out.Status != InputRequired || out.Round != 2 || out.OperationID == "" {
			t.Fatalf("outcome %+v", out)
		}
		p := inputParams(t, out.InputRequired, "contact")
		msg, _ := p["message"].(string)
		if !strings.HasPrefix(msg, "Who should we book?") || !strings.Contains(msg, "Work email (email)") || strings.Contains(msg, "(name)") {
			t.Errorf("re-ask message must keep the question and name only the wrong field: %q", msg)
		}
		props := p["requestedSchema"].(map[string]any)["properties"].(map[string]any)
		if d := props["name"].(map[string]any)["default"]; d != "Ann Lee" {
			t.Errorf("the valid answer must come back as the default, got %v", d)
		}
		if d, ok := props["email"].(map[string]any)["default"]; ok {
			t.Errorf("the wrong answer must not become a default, got %v", d)
		}
		op := out.OperationID
		out = resume(t, g, retry(req, out.InputRequired.RequestState, annValid))
		if out.Status != Complete || out.Round != 2 || out.OperationID != op {
			t.Fatalf("outcome %+v", out)
		}

		// No response at all: asked again, unchanged.
		out = resume(t, g, retry(req, res.RequestState, ""))
		if out.Status != InputRequired || out.Round != 2 {
			t.Fatalf("no responses: %+v", out)
		}

		// Past the round limit: an error naming the fields.
		bad := `{"contact":{"action":"accept","content":{"name":"Ann","email":"x"}}}`
		st := res.RequestState
		for round := 2; round <= 3; round++ {
			o := resume(t, g, retry(req, st, bad))
			if o.Status != InputRequired || o.Round != round {
				t.Fatalf("round %d: %+v", round, o)
			}
			st = o.InputRequired.RequestState
		}
		_, err := g.Resume(context.Background(), retry(req, st, bad))
		e := wantErr(t, err, CodeRoundsExceeded)
		if !errors.Is(err, ErrRoundsExceeded) || e.JSONRPCCode() != -32602 || !bytes.Contains(e.Data, []byte(`"contact.email"`)) {
			t.Errorf("rounds exceeded: %v data %s", e, e.Data)
		}
	})
}

func TestAPIDeclinedCancelled(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		g := newGuard(t, eng)
		req := bookReq("alice")
		res := ask(t, g, req, []InputRequest{contactInput(), confirmInput()})
		okContact := `"contact":{"action":"accept","content":{"name":"Ann","email":"ann@example.com"}}`
		cases := []struct {
			responses string
			status    Status
			keys      []string
		}{
			{`{` + okContact + `,"confirm":{"action":"decline"}}`, Declined, []string{"confirm"}},
			{`{` + okContact + `,"confirm":{"action":"cancel"}}`, Cancelled, []string{"confirm"}},
			{`{"contact":{"action":"cancel"},"confirm":{"action":"decline"}}`, Declined, []string{"confirm"}},
			{`{` + okContact + `,"confirm":{"action":"accept","content":{"ok":true}}}`, Complete, nil},
		}
		for _, c := range cases {
			out := resume(t, g, retry(req, res.RequestState, c.responses))
			if out.Status != c.status {
				t.Errorf("%s: status %s, want %s", c.responses, out.Status, c.status)
				continue
			}
			got := out.Declined
			if c.status == Cancelled {
				got = out.Cancelled
			}
			if fmt.Sprint(got) != fmt.Sprint(c.keys) {
				t.Errorf("%s: keys %v, want %v", c.responses, got, c.keys)
			}
			if c.status != Complete && len(out.Answers) != 0 {
				t.Errorf("%s: a %s outcome carries answers %v", c.responses, c.status, out.Answers)
			}
		}
	})
}

func TestAPIAfterSecondRound(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		ctx := context.Background()
		g := newGuard(t, eng)
		req := bookReq("alice")
		res := ask(t, g, req, []InputRequest{contactInput()})
		first := resume(t, g, retry(req, res.RequestState, annValid))
		if first.Status != Complete {
			t.Fatalf("first round: %+v", first)
		}
		res2 := ask(t, g, req, []InputRequest{confirmInput()}, After(first))
		if _, ok := res2.InputRequests["contact"]; ok {
			t.Error("a completed answer must not be asked again")
		}
		out := resume(t, g, retry(req, res2.RequestState, `{"confirm":{"action":"accept","content":{"ok":true}}}`))
		if out.Status != Complete || out.OperationID != first.OperationID || out.Round != 2 {
			t.Fatalf("second round: %+v (first op %s)", out, first.OperationID)
		}
		var contact struct{ Name string }
		var confirm struct{ OK bool }
		if err := out.Content("contact", &contact); err != nil || contact.Name != "Ann Lee" {
			t.Errorf("answers of round 1 lost: %v %+v", err, out.Answers)
		}
		if err := out.Content("confirm", &confirm); err != nil || !confirm.OK {
			t.Errorf("answer of round 2: %v %+v", err, out.Answers)
		}
		// After needs a complete outcome.
		_, err := g.Ask(ctx, req, []InputRequest{confirmInput()}, After(&Outcome{Status: Declined, OperationID: "x", Round: 1}))
		if err == nil {
			t.Error("After a declined outcome must fail")
		}
	})
}

func TestAPIProgress(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		g := newGuard(t, eng)
		req := bookReq("alice")
		progress := []byte{0, 1, 2, 0xff, '"', '}', ',', 'x'}
		res := ask(t, g, req, []InputRequest{contactInput()}, Progress(progress))
		// Through a re-ask and to the end.
		out := resume(t, g, retry(req, res.RequestState, `{"contact":{"action":"accept","content":{"name":"Ann"}}}`))
		if out.Status != InputRequired {
			t.Fatalf("outcome %+v", out)
		}
		out = resume(t, g, retry(req, out.InputRequired.RequestState, annValid))
		if out.Status != Complete || !bytes.Equal(out.Progress, progress) {
			t.Fatalf("progress %q, want %q (status %s)", out.Progress, progress, out.Status)
		}
		// No progress given, none returned.
		res = ask(t, g, req, []InputRequest{contactInput()})
		if out := resume(t, g, retry(req, res.RequestState, annValid)); out.Progress != nil {
			t.Errorf("progress %q from nowhere", out.Progress)
		}
		// Over 4 KiB is refused.
		if _, err := g.Ask(context.Background(), req, []InputRequest{contactInput()}, Progress(make([]byte, 5<<10))); err == nil {
			t.Error("5 KiB of progress was accepted")
		}
	})
}

func TestAPIErrorCodes(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		ctx := context.Background()
		g := newGuard(t, eng)
		req := bookReq("alice")
		req.Capabilities = json.RawMessage(`{"elicitation":{"form":{}}}`)
		_, err := g.Ask(ctx, req, []InputRequest{URL("connect", "Connect.", "https://crm.example.com/c")})
		e := wantErr(t, err, CodeCapabilityMissing)
		if e.JSONRPCCode() != -32021 || !errors.Is(err, ErrCapabilityMissing) || errors.Is(err, ErrInvalidState) {
			t.Errorf("capability error: %d %v", e.JSONRPCCode(), e)
		}
		var data struct {
			RequiredCapabilities map[string]json.RawMessage `json:"requiredCapabilities"`
		}
		if err := json.Unmarshal(e.Data, &data); err != nil || string(data.RequiredCapabilities["elicitation"]) != `{"url":{}}` {
			t.Errorf("data %s, want requiredCapabilities.elicitation.url", e.Data)
		}
		// Capabilities are per request: none declared, none asked.
		req.Capabilities = json.RawMessage(`{}`)
		_, err = g.Ask(ctx, req, []InputRequest{contactInput(), Roots("roots")})
		e = wantErr(t, err, CodeCapabilityMissing)
		if !bytes.Contains(e.Data, []byte(`"form":{}`)) || !bytes.Contains(e.Data, []byte(`"roots":{}`)) {
			t.Errorf("data %s names every missing capability", e.Data)
		}

		// A resume without a state is a host bug, not a state error.
		_, err = g.Resume(ctx, bookReq("alice"))
		wantErr(t, err, "mrtr.request.malformed")

		// Method that may not return input_required.
		r := bookReq("alice")
		r.Method = "tools/list"
		_, err = g.Ask(ctx, r, []InputRequest{contactInput()})
		wantErr(t, err, "mrtr.request.method_not_allowed")

		// Each code maps to its JSON-RPC error.
		for code, want := range map[string]int{
			CodeStateInvalid: -32602, CodeRoundsExceeded: -32602, CodeResponsesMalformed: -32602,
			CodeCapabilityMissing: -32021, CodeInternal: -32603, CodeUnavailable: -32603,
			CodeNotConfigured: -32603, "mrtr.json.syntax": -32602,
		} {
			if got := (&Error{Code: code}).JSONRPCCode(); got != want {
				t.Errorf("%s → %d, want %d", code, got, want)
			}
		}
	})
}

func TestAPIStateBindings(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		ctx := context.Background()
		keys := NewKeyring()
		g := newGuard(t, eng, WithKeys(keys))
		req := bookReq("alice")
		res := ask(t, g, req, []InputRequest{contactInput()})
		st := res.RequestState

		other := func(f func(r *Request)) *Request {
			r := retry(req, st, annValid)
			f(r)
			return r
		}
		cases := map[string]*Request{
			"principal": other(func(r *Request) { r.Principal = "bob" }),
			"arguments": other(func(r *Request) { r.Arguments = json.RawMessage(`{"topic":"security","seats":2}`) }),
			"target":    other(func(r *Request) { r.Target = "cancel_demo_call" }),
			"method":    other(func(r *Request) { r.Method = "prompts/get" }),
		}
		for reason, r := range cases {
			_, err := g.Resume(ctx, r)
			wantState(t, err, reason)
		}
		// Absent arguments are {}, not the sealed ones.
		_, err := g.Resume(ctx, other(func(r *Request) { r.Arguments = nil }))
		wantState(t, err, "arguments")

		// The same arguments in another spelling are the same (RFC 8785).
		same := other(func(r *Request) { r.Arguments = json.RawMessage(` { "seats" : 2.0, "topic" : "pric\u0069ng" } `) })
		if out := resume(t, g, same); out.Status != Complete {
			t.Errorf("canonically equal arguments refused: %+v", out)
		}

		// Another audience under the same keys.
		g2 := newGuard(t, eng, WithKeys(keys), WithAudience("other.example"))
		_, err = g2.Resume(ctx, retry(req, st, annValid))
		wantState(t, err, "audience")

		// Another keyring altogether.
		g3 := newGuard(t, eng)
		_, err = g3.Resume(ctx, retry(req, st, annValid))
		wantState(t, err, "unknown_key")
	})
}

func TestAPIExpiredState(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		ctx := context.Background()
		var now atomic.Int64
		now.Store(time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC).UnixMilli())
		clock := func() time.Time { return time.UnixMilli(now.Load()) }
		g := newGuard(t, eng, withClock(clock), WithTTL(2*time.Minute))
		req := bookReq("alice")
		res := ask(t, g, req, []InputRequest{contactInput()})
		start := now.Load()

		now.Store(start + (2*time.Minute - time.Second).Milliseconds())
		if out := resume(t, g, retry(req, res.RequestState, annValid)); out.Status != Complete {
			t.Fatalf("within the TTL: %+v", out)
		}
		now.Store(start + (2 * time.Minute).Milliseconds())
		_, err := g.Resume(ctx, retry(req, res.RequestState, annValid))
		wantState(t, err, "expired")

		// Issued in the future (beyond the allowed skew).
		now.Store(start - (10 * time.Minute).Milliseconds())
		_, err = g.Resume(ctx, retry(req, res.RequestState, annValid))
		wantState(t, err, "not_yet_valid")
	})
}

func TestAPITamperedState(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		ctx := context.Background()
		g := newGuard(t, eng)
		req := bookReq("alice")
		st := ask(t, g, req, []InputRequest{contactInput()}).RequestState
		parts := strings.Split(st, ".")
		if len(parts) != 4 {
			t.Fatalf("state %q is not v4.local.body.footer", st)
		}
		body := parts[2]
		// Flip one character at several places of the body: nonce,
		// ciphertext, MAC.
		for _, i := range []int{0, 20, len(body) / 2, len(body) - 10} {
			b := []byte(body)
			if b[i] == 'A' {
				b[i] = 'B'
			} else {
				b[i] = 'A'
			}
			tampered := "v4.local." + string(b) + "." + parts[3]
			_, err := g.Resume(ctx, retry(req, tampered, annValid))
			wantState(t, err, "tampered")
		}
		for name, s := range map[string]string{
			"truncated":        st[:len(st)-40],
			"no footer":        "v4.local." + body,
			"other version":    "v3.local." + body + "." + parts[3],
			"json injection":   st + `","maxRounds":100,"x":"`,
			"footer of no key": "v4.local." + body + ".eyJraWQiOiJrNC5saWQuQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUEifQ",
			"empty body":       "v4.local..",
		} {
			_, err := g.Resume(ctx, retry(req, s, annValid))
			if e := wantErr(t, err, CodeStateInvalid); e.Message != "invalid or expired requestState" {
				t.Errorf("%s: message %q", name, e.Message)
			}
		}
		// Oversize states are refused before any crypto.
		_, err := g.Resume(ctx, retry(req, st+strings.Repeat("A", 9000), annValid))
		wantState(t, err, "oversize")
	})
}

func TestAPIRawJSONNeverSplices(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		ctx := context.Background()
		g := newGuard(t, eng)
		ce := countCalls(g)
		req := bookReq("alice")
		st := ask(t, g, req, []InputRequest{contactInput()}).RequestState
		base := ce.calls.Load()

		for _, s := range []string{
			`{}, "maxRounds": 100`,
			`{"contact":{"action":"accept"}}, "requestState": "x"`,
			`{} ,"principal":"mallory"`,
			`{}}`,
			`{"a":1}{"b":2}`,
			` `,
			`{"contact":{"action":"accept","content":{"name":"A","email":"a@example.com"}}},"maxRounds":100,"x":{`,
		} {
			r := retry(req, st, "")
			r.InputResponses = json.RawMessage(s)
			_, err := g.Resume(ctx, r)
			wantErr(t, err, CodeResponsesMalformed)
		}
		for _, s := range []string{`{"topic":"pricing","seats":2}, "principal":"mallory"`, `{"topic":`, `1 2`} {
			r := retry(req, st, annValid)
			r.Arguments = json.RawMessage(s)
			_, err := g.Resume(ctx, r)
			wantErr(t, err, "mrtr.json.syntax")
			r = bookReq("alice")
			r.Arguments = json.RawMessage(s)
			_, err = g.Ask(ctx, r, []InputRequest{contactInput()})
			wantErr(t, err, "mrtr.json.syntax")
		}
		for _, s := range []string{`{"elicitation":{}}, "maxRounds": 100`, `{"elicitation":{}`} {
			r := bookReq("alice")
			r.Capabilities = json.RawMessage(s)
			_, err := g.Ask(ctx, r, []InputRequest{contactInput()})
			wantErr(t, err, "mrtr.json.syntax")
		}
		bad := InputRequest{Key: "x", Method: "elicitation/create", Params: json.RawMessage(`{"message":"m"}, "maxRounds": 100`)}
		_, err := g.Ask(ctx, bookReq("alice"), []InputRequest{bad})
		wantErr(t, err, "mrtr.json.syntax")
		_, err = g.Lint(ctx, bad)
		wantErr(t, err, "mrtr.json.syntax")
		_, err = g.LintSchema(ctx, json.RawMessage(`{"type":"object"}, "op":"ask"`))
		wantErr(t, err, "mrtr.json.syntax")
		if n := ce.calls.Load(); n != base {
			t.Errorf("%d refused requests reached the guest", n-base)
		}

		// Strings are escaped, never spliced: a principal full of JSON
		// is one principal.
		odd := bookReq(`alice","principal":"mallory`)
		st = ask(t, g, odd, []InputRequest{contactInput()}).RequestState
		if out := resume(t, g, retry(odd, st, annValid)); out.Status != Complete {
			t.Errorf("odd principal: %+v", out)
		}
		_, err = g.Resume(ctx, retry(bookReq("mallory"), st, annValid))
		wantState(t, err, "principal")
	})
}

// TestAPIAfterAnswersNeverSplice: the answers of an Outcome given to
// After are raw JSON too (an application may have stored and reloaded
// the outcome).
func TestAPIAfterAnswersNeverSplice(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		ctx := context.Background()
		g := newGuard(t, eng)
		ce := countCalls(g)
		base := ce.calls.Load()
		// Each must be one JSON value, or the ask is refused before the
		// guest. The first splice would otherwise raise the state's TTL
		// to 24 h, the second its round limit to 100.
		for _, splice := range []string{
			`{}}},"ttl":86400,"z":{"a":{"b":{}`,
			`{"action":"accept","content":{}}}},"maxRounds":100,"z":{"a":{"b":{}`,
			`1 2`,
		} {
			forged := &Outcome{Status: Complete, OperationID: "AAAAAAAAAAAAAAAAAAAAAA", Round: 1,
				Answers: map[string]json.RawMessage{"contact": json.RawMessage(splice)}}
			res, err := g.Ask(ctx, bookReq("alice"), []InputRequest{confirmInput()}, After(forged))
			if err == nil {
				t.Errorf("After with answer %s was spliced into the envelope (state %d bytes)", splice, len(res.RequestState))
			}
		}
		if n := ce.calls.Load() - base; n != 0 {
			t.Errorf("%d asks with forged answers reached the guest", n)
		}
	})
}

// TestAPIRequestTooLarge: the 1 MiB request limit holds on both engines
// and is the documented error, not an internal one.
func TestAPIRequestTooLarge(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		ctx := context.Background()
		g := newGuard(t, eng)
		req := bookReq("alice")
		req.Arguments = json.RawMessage(`{"blob":"` + strings.Repeat("x", 2<<20) + `"}`)
		_, err := g.Ask(ctx, req, []InputRequest{contactInput()})
		if e := wantErr(t, err, CodeRequestTooLarge); e.JSONRPCCode() != -32602 {
			t.Errorf("JSON-RPC %d", e.JSONRPCCode())
		}
		res := ask(t, g, bookReq("alice"), []InputRequest{contactInput()})
		r := retry(bookReq("alice"), res.RequestState, `{"contact":{"action":"accept","content":{"name":"`+strings.Repeat("y", 2<<20)+`"}}}`)
		_, err = g.Resume(ctx, r)
		wantErr(t, err, CodeRequestTooLarge)
		// The guard still serves.
		if out := resume(t, g, retry(bookReq("alice"), res.RequestState, annValid)); out.Status != Complete {
			t.Errorf("after refusing a large request: %+v", out)
		}
	})
}

func TestAPILint(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		ctx := context.Background()
		g := newGuard(t, eng)
		secret := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"apiKey":{"type":"string","title":"Your API key"}},"required":["name"]}`)
		hasFinding := func(fs []Finding, code, field string) bool {
			for _, f := range fs {
				if f.Code == code && f.Field == field && f.Severity == "error" && f.Message != "" {
					return true
				}
			}
			return false
		}
		fs, err := g.Lint(ctx, Form("setup", "Set up", secret))
		if err != nil || !hasFinding(fs, CodeFormSecretField, "apiKey") {
			t.Errorf("Lint: %v %+v", err, fs)
		}
		fs, err = g.LintSchema(ctx, secret)
		if err != nil || !hasFinding(fs, CodeFormSecretField, "apiKey") {
			t.Errorf("LintSchema: %v %+v", err, fs)
		}
		for _, s := range []string{
			`{"type":"object","properties":{"password":{"type":"string"}}}`,
			`{"type":"object","properties":{"pin":{"type":"string","title":"PIN"}}}`,
			`{"type":"object","properties":{"contraseña":{"type":"string"}}}`,
		} {
			fs, err := g.LintSchema(ctx, json.RawMessage(s))
			if err != nil || len(fs) == 0 || fs[0].Code != CodeFormSecretField || fs[0].Field == "" || !strings.Contains(s, fs[0].Field) {
				t.Errorf("%s: %v %+v", s, err, fs)
			}
		}
		// Ask refuses it with every finding.
		_, err = g.Ask(ctx, bookReq("alice"), []InputRequest{Form("setup", "Set up", secret)})
		e := wantErr(t, err, CodeFormSecretField)
		if !errors.Is(err, ErrSecretField) || !hasFinding(e.Findings(), CodeFormSecretField, "apiKey") {
			t.Errorf("refused ask: %v %+v", e, e.Findings())
		}
		// Other findings carry their codes.
		fs, _ = g.LintSchema(ctx, json.RawMessage(`{"type":"object","properties":{"addr":{"type":"object","properties":{"city":{"type":"string"}}}}}`))
		if len(fs) == 0 || fs[0].Code != "mrtr.form.not_flat" {
			t.Errorf("nested form: %+v", fs)
		}
		fs, _ = g.Lint(ctx, URL("c", "Connect.", "http://crm.example.com/c"))
		if len(fs) == 0 || fs[0].Code != "mrtr.url.not_https" {
			t.Errorf("http URL: %+v", fs)
		}
		fs, err = g.Lint(ctx, contactInput())
		if err != nil || len(fs) != 0 {
			t.Errorf("clean form: %v %+v", err, fs)
		}
		_, err = g.LintSchema(ctx, json.RawMessage(`{"type":`))
		wantErr(t, err, "mrtr.json.syntax")
	})
}
