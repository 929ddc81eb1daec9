package core

// Envelope-level behaviour the shared vectors do not show: key rotation,
// limits at their exact boundaries, answers across rounds, interrupts and
// panics, and that no error ever carries an answer or a key.

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func kidOf(t *testing.T, token string) string {
	t.Helper()
	f, err := v4LocalFooter([]byte(token))
	if err != nil {
		t.Fatal(err)
	}
	var footer struct{ Kid string }
	if err := json.Unmarshal(f, &footer); err != nil {
		t.Fatal(err)
	}
	return footer.Kid
}

func TestConfigureRotatesKeys(t *testing.T) {
	idA, idB := paserkLocalID((*[32]byte)(tKeyABytes)), paserkLocalID((*[32]byte)(tKeyBBytes))
	g := New()
	r := mustOK(t, g, tConfigure([]string{tKeyA}, ""), "")
	if !slices.Equal(strs(r["keyIds"]), []string{idA}) {
		t.Fatalf("keyIds %v", r["keyIds"])
	}
	ask := tAsk("rot", `{"c":`+tConfirmForm+`}`, "")
	tokA := tokenOf(t, mustOK(t, g, ask, "input_required"))
	if kidOf(t, tokA) != idA {
		t.Fatal("sealed under another key")
	}

	// New primary, old key still listed: old states open, new ones use B.
	r = mustOK(t, g, tConfigure([]string{tKeyB, tKeyA}, ""), "")
	if !slices.Equal(strs(r["keyIds"]), []string{idB, idA}) {
		t.Fatalf("keyIds %v", r["keyIds"])
	}
	mustOK(t, g, tOpen(tokA), "open")
	mustOK(t, g, tResume("rot1", tokA, `{"c":{"action":"accept","content":{"ok":true}}}`), "complete")
	tokB := tokenOf(t, mustOK(t, g, ask, "input_required"))
	if kidOf(t, tokB) != idB || tokB == tokA {
		t.Fatal("the new primary does not seal")
	}
	// A re-ask of an old state is sealed under the new primary.
	re := tokenOf(t, mustOK(t, g, tResume("rot2", tokA, `{}`), "input_required"))
	if kidOf(t, re) != idB {
		t.Fatal("a re-ask kept the old key")
	}

	// Old key removed: its states are refused, whatever else is right.
	mustOK(t, g, tConfigure([]string{tKeyB}, ""), "")
	mustReason(t, g, tOpen(tokA), ReasonUnknownKey)
	mustReason(t, g, tResume("rot3", tokA, `{"c":{"action":"accept","content":{"ok":true}}}`), ReasonUnknownKey)
	mustOK(t, g, tOpen(tokB), "open")

	// A failed configure changes nothing.
	mustFail(t, g, tConfigure([]string{tKeyA, "k4.local.AAAA"}, ""), CodeConfigInvalid)
	mustFail(t, g, tConfigure([]string{tKeyA}, `,"ttl":0`), CodeRequestMalformed)
	mustReason(t, g, tOpen(tokA), ReasonUnknownKey)
	mustOK(t, g, tOpen(tokB), "open")

	// Listing A again brings its states back (within their lifetime).
	mustOK(t, g, tConfigure([]string{tKeyA}, ""), "")
	mustOK(t, g, tOpen(tokA), "open")
	mustReason(t, g, tOpen(tokB), ReasonUnknownKey)

	// The same key under another audience opens nothing of the old one.
	mustOK(t, g, `{"v":1,"op":"configure","keys":["`+tKeyA+`"],"audience":"other.example"}`, "")
	mustReason(t, g, tOpen(tokA), ReasonAudience)
}

func TestConfigureRefusals(t *testing.T) {
	g := New()
	for _, c := range []struct{ req, code string }{
		{`{"v":1,"op":"configure","audience":"a"}`, CodeConfigInvalid},
		{`{"v":1,"op":"configure","keys":[],"audience":"a"}`, CodeConfigInvalid},
		{`{"v":1,"op":"configure","keys":"` + tKeyA + `","audience":"a"}`, CodeConfigInvalid},
		{`{"v":1,"op":"configure","keys":[1],"audience":"a"}`, CodeConfigInvalid},
		{tConfigure([]string{tKeyA, tKeyA}, ""), CodeConfigInvalid},
		{tConfigure([]string{tKeyA + "="}, ""), CodeConfigInvalid},
		{tConfigure([]string{strings.Replace(tKeyA, "local", "public", 1)}, ""), CodeConfigInvalid},
		{tConfigure([]string{tKeyA[:len(tKeyA)-1] + "9"}, ""), CodeConfigInvalid}, // non-zero trailing bits
		{`{"v":1,"op":"configure","keys":["` + tKeyA + `"],"audience":""}`, CodeConfigInvalid},
		{tConfigure([]string{tKeyA}, `,"ttl":86401`), CodeRequestMalformed},
		{tConfigure([]string{tKeyA}, `,"ttl":1.5`), CodeRequestMalformed},
		{tConfigure([]string{tKeyA}, `,"maxRounds":0`), CodeRequestMalformed},
		{tConfigure([]string{tKeyA}, `,"maxRounds":101`), CodeRequestMalformed},
		{tConfigure([]string{tKeyA}, `,"maxState":511`), CodeRequestMalformed},
		{tConfigure([]string{tKeyA}, `,"maxState":1048577`), CodeRequestMalformed},
		{tConfigure([]string{tKeyA}, `,"maxRequest":4095`), CodeRequestMalformed},
		{tConfigure([]string{tKeyA}, `,"maxRequest":"4096"`), CodeRequestMalformed},
	} {
		mustFail(t, g, c.req, c.code)
		mustFail(t, g, tAsk("x", `{}`, ""), CodeNotConfigured)
	}
	for _, extra := range []string{`,"ttl":1,"maxRounds":1,"maxState":512,"maxRequest":4096`, `,"ttl":86400,"maxRounds":100,"maxState":1048576,"maxRequest":16777216`, `,"ttl":null`} {
		mustOK(t, g, tConfigure([]string{tKeyA}, extra), "")
	}
}

func TestMaxRequestBoundary(t *testing.T) {
	g := newConfigured(t, `,"maxRequest":4096`)
	pad := func(n int) string {
		base := `{"v":1,"op":"lint","schema":{"type":"object","properties":{}},"x":""}`
		return strings.Replace(base, `"x":""`, `"x":"`+strings.Repeat("a", n-len(base))+`"`, 1)
	}
	mustOK(t, g, pad(4096), "")
	mustFail(t, g, pad(4097), CodeRequestTooLarge)
}

func TestOpenNeverRevealsAnswers(t *testing.T) {
	fx := newFixture(t)
	g := newConfigured(t, "")
	for _, name := range []string{"round2", "after"} {
		tok := fx.named[name]
		if strings.Contains(tok, tMarker) {
			t.Fatal("the state holds an answer in clear")
		}
		for off := 0; off < 3; off++ {
			enc := base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("x", off) + tMarker))
			if strings.Contains(tok, enc[4:len(enc)-4]) {
				t.Fatal("the state holds an answer in base64")
			}
		}
		out := run(g, tOpen(tok))
		resp := checkResponse(t, out)
		if resp["ok"] != true || bytes.Contains(out, []byte(tMarker)) {
			t.Fatalf("open of %s: %s", name, out)
		}
		if len(resp) != 9 || resp["issuedAt"] != "2026-07-28T00:00:00Z" || resp["expiresAt"] != "2026-07-28T00:05:00Z" {
			t.Fatalf("open reports %v", resp)
		}
		// The answers are there: resuming to the end gives them back.
		done := run(g, tResume("reveal", tok, `{"confirm":{"action":"accept","content":{"ok":true}}}`))
		if !bytes.Contains(done, []byte(tMarker)) {
			t.Fatalf("the carried answer is lost: %s", done)
		}
	}
	r := checkResponse(t, run(g, tOpen(fx.named["round2"])))
	if !slices.Equal(strs(r["pending"]), []string{"confirm"}) || !slices.Equal(strs(r["answered"]), []string{"contact"}) {
		t.Fatalf("open reports %v", r)
	}
}

func TestProgressLimit(t *testing.T) {
	g := newConfigured(t, `,"maxState":65536`)
	for _, n := range []int{0, 1, 2, 3, 4095, 4096, 4097, 4098, 4099, 6000} {
		prog := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, n))
		req := tAsk(fmt.Sprint("p", n), `{"c":`+tConfirmForm+`}`, `,"progress":"`+prog+`"`)
		if n > maxProgressLen {
			mustFail(t, g, req, CodeRequestMalformed)
			continue
		}
		tok := tokenOf(t, mustOK(t, g, req, "input_required"))
		done := mustOK(t, g, tResume("pr", tok, `{"c":{"action":"accept","content":{"ok":true}}}`), "complete")
		if got, _ := done["progress"].(string); got != prog {
			t.Fatalf("%d progress bytes came back as %d characters", n, len(got))
		}
	}
}

func TestProgressValidated(t *testing.T) {
	g := newConfigured(t, "")
	for _, p := range []string{`"not base64!"`, `"A"`, `"AAA="`, `"AA\nAA"`, `5`, `{}`, `true`} {
		mustFail(t, g, tAsk("pv", `{}`, `,"progress":`+p), CodeRequestMalformed)
	}
	mustOK(t, g, tAsk("pv", `{}`, `,"progress":null`), "input_required")
}

func TestInputRequestLimit(t *testing.T) {
	g := newConfigured(t, "")
	resp := mustOK(t, g, tAsk("32", manyRoots(maxInputRequests), ""), "input_required")
	result := resp["result"].(map[string]any)
	if n := len(result["inputRequests"].(map[string]any)); n != 32 {
		t.Fatalf("%d input requests sent", n)
	}
	tok := tokenOf(t, resp)
	if o := mustOK(t, g, tOpen(tok), "open"); len(strs(o["pending"])) != 32 {
		t.Fatalf("open: %v", o)
	}
	answers := strings.ReplaceAll(manyRoots(32), tRootsReq, `{"roots":[{"uri":"file:///p"}]}`)
	done := mustOK(t, g, tResume("32r", tok, answers), "complete")
	if n := len(done["answers"].(map[string]any)); n != 32 {
		t.Fatalf("%d answers", n)
	}
	mustFail(t, g, tAsk("33", manyRoots(maxInputRequests+1), ""), CodeRequestMalformed)

	// Keys: 1 to 128 printable characters.
	mustOK(t, g, tAsk("k128", `{"`+strings.Repeat("k", 128)+`":`+tRootsReq+`}`, ""), "input_required")
	for _, k := range []string{strings.Repeat("k", 129), "", `a\u0001`, `a\u007f`} {
		mustFail(t, g, tAsk("kbad", `{"`+k+`":`+tRootsReq+`}`, ""), CodeInputKey)
	}
}

func TestMaxStateBoundary(t *testing.T) {
	ask := tAsk("ms", `{"contact":`+tContactForm+`}`, "")
	g := newConfigured(t, "")
	tok := tokenOf(t, mustOK(t, g, ask, "input_required"))
	n := len(tok)
	if n <= 512 {
		t.Fatalf("token of %d bytes is too short for this test", n)
	}
	g = newConfigured(t, fmt.Sprintf(`,"maxState":%d`, n))
	if got := tokenOf(t, mustOK(t, g, ask, "input_required")); got != tok {
		t.Fatal("the same ask sealed another state")
	}
	mustOK(t, g, tOpen(tok), "open")
	mustOK(t, g, tResume("ms1", tok, tContactOK), "complete")

	g = newConfigured(t, fmt.Sprintf(`,"maxState":%d`, n-1))
	e := mustFail(t, g, ask, CodeRequestTooLarge)
	if msg := e["message"].(string); !strings.Contains(msg, fmt.Sprint(n)) || !strings.Contains(msg, fmt.Sprint(n-1)) {
		t.Fatalf("message does not give the sizes: %q", msg)
	}
	mustReason(t, g, tOpen(tok), ReasonOversize)
	mustReason(t, g, tResume("ms2", tok, tContactOK), ReasonOversize)
}

func TestAnswersUnion(t *testing.T) {
	g := newConfigured(t, "")
	after := `,"after":{"operationId":"T1BYT1BYT1BYT1BYT1BYTw","round":1,"answers":{"contact":{"action":"accept","content":{"name":"Old","email":"old@example.com"}},"note":{"action":"accept","content":{"text":"keep"}}}}`
	resp := mustOK(t, g, tAsk("u1", `{"contact":`+tContactForm+`}`, after), "input_required")
	if resp["operationId"] != "T1BYT1BYT1BYT1BYT1BYTw" || resp["round"] != json.Number("2") {
		t.Fatalf("after: %v", resp)
	}
	tok := tokenOf(t, resp)
	o := mustOK(t, g, tOpen(tok), "open")
	if !slices.Equal(strs(o["answered"]), []string{"contact", "note"}) {
		t.Fatalf("open: %v", o)
	}
	check := func(done map[string]any, round string) {
		t.Helper()
		answers := done["answers"].(map[string]any)
		c := answers["contact"].(map[string]any)["content"].(map[string]any)
		if len(answers) != 2 || c["name"] != "New" || done["round"] != json.Number(round) || done["operationId"] != "T1BYT1BYT1BYT1BYT1BYTw" ||
			answers["note"].(map[string]any)["content"].(map[string]any)["text"] != "keep" {
			t.Fatalf("union: %v", done)
		}
	}
	newAnswer := `{"contact":{"action":"accept","content":{"name":"New","email":"new@example.com"}}}`
	out := run(g, tResume("u2", tok, newAnswer))
	check(checkResponse(t, out), "2")
	if bytes.Contains(out, []byte("Old")) || bytes.Count(out, []byte(`"contact":`)) != 1 {
		t.Fatalf("the old answer survived: %s", out)
	}
	// Through a re-ask: round 3 still carries "note" and takes the new one.
	tok3 := tokenOf(t, mustOK(t, g, tResume("u3", tok, `{"contact":{"action":"accept","content":{"name":"New","email":"x"}}}`), "input_required"))
	check(mustOK(t, g, tResume("u4", tok3, newAnswer), "complete"), "3")

	// An answer accepted in an earlier round cannot be replaced later.
	tm := tokenOf(t, mustOK(t, g, tAsk("u5", `{"contact":`+tContactForm+`,"confirm":`+tConfirmForm+`}`, ""), "input_required"))
	tm2 := tokenOf(t, mustOK(t, g, tResume("u6", tm, `{"contact":{"action":"accept","content":{"name":"First","email":"f@example.com"}}}`), "input_required"))
	done := mustOK(t, g, tResume("u7", tm2, `{"contact":{"action":"accept","content":{"name":"Second","email":"s@example.com"}},"confirm":{"action":"accept","content":{"ok":true}}}`), "complete")
	if done["answers"].(map[string]any)["contact"].(map[string]any)["content"].(map[string]any)["name"] != "First" {
		t.Fatalf("a later round replaced an accepted answer: %v", done)
	}
}

func TestAfterValidation(t *testing.T) {
	g := newConfigured(t, "")
	ask := func(after string) string { return tAsk("af", `{"c":`+tConfirmForm+`}`, `,"after":`+after) }
	for _, a := range []string{
		`{"operationId":"o","round":1,"answers":{}}`, `{"operationId":"AAAAAAAAAAAAAAAAAAAAA=","round":1}`, `{"operationId":"AAAAAAAAAAAAAAAAAAAAAA","round":1,"answers":[]}`, `{"operationId":"AAAAAAAAAAAAAAAAAAAAAA","round":1,"answers":"x"}`,
		`{"operationId":"AAAAAAAAAAAAAAAAAAAAAA","round":1,"answers":1}`, `{"operationId":"AAAAAAAAAAAAAAAAAAAAAA","round":1,"answers":true}`,
		`{"operationId":"AAAAAAAAAAAAAAAAAAAAAA","round":1,"answers":null}`, `{"round":1}`, `{"operationId":5,"round":1}`,
		`{"operationId":"AAAAAAAAAAAAAAAAAAAAAA"}`, `{"operationId":"AAAAAAAAAAAAAAAAAAAAAA","round":0}`, `{"operationId":"AAAAAAAAAAAAAAAAAAAAAA","round":-1}`,
		`{"operationId":"AAAAAAAAAAAAAAAAAAAAAA","round":1.5}`, `{"operationId":"AAAAAAAAAAAAAAAAAAAAAA","round":"1"}`, `"x"`, `[]`, `5`,
	} {
		mustFail(t, g, ask(a), CodeRequestMalformed)
	}
	r := mustOK(t, g, ask(`null`), "input_required")
	if r["round"] != json.Number("1") {
		t.Fatalf("after null: %v", r)
	}
	for _, a := range []string{`{"operationId":"AAAAAAAAAAAAAAAAAAAAAA","round":1}`, `{"operationId":"AAAAAAAAAAAAAAAAAAAAAA","round":1,"answers":{}}`} {
		o := mustOK(t, g, tOpen(tokenOf(t, mustOK(t, g, ask(a), "input_required"))), "open")
		if len(strs(o["answered"])) != 0 || o["round"] != json.Number("2") || o["operationId"] != "AAAAAAAAAAAAAAAAAAAAAA" {
			t.Fatalf("after %s: %v", a, o)
		}
	}
	mustOK(t, g, ask(`{"operationId":"AAAAAAAAAAAAAAAAAAAAAA","round":2,"answers":{}}`), "input_required")
	mustFail(t, g, ask(`{"operationId":"AAAAAAAAAAAAAAAAAAAAAA","round":3,"answers":{}}`), CodeRoundsExceeded)
	mustFail(t, g, ask(`{"operationId":"AAAAAAAAAAAAAAAAAAAAAA","round":9007199254740992,"answers":{}}`), CodeRoundsExceeded)
}

// --- interrupts and panics -------------------------------------------------

const tPanicMarker = "PANICVALUE-5521"

func isInternal(out []byte) bool {
	var resp struct {
		V     int
		OK    *bool
		Error struct{ Code, Message string }
	}
	return json.Unmarshal(out, &resp) == nil && resp.V == 1 && resp.OK != nil && !*resp.OK &&
		resp.Error.Code == CodeInternal && resp.Error.Message != ""
}

// internalOut runs req and asserts the response is exactly mrtr.internal
// (checkResponse refuses that code everywhere else).
func internalOut(t *testing.T, g *Guard, req string) {
	t.Helper()
	out := run(g, req)
	if !isInternal(out) {
		t.Fatalf("want %s, got %s", CodeInternal, out)
	}
	if bytes.Contains(out, []byte(tPanicMarker)) || bytes.Contains(out, []byte("goroutine")) {
		t.Fatalf("the panic value leaked: %s", out)
	}
}

func TestInterruptStopsEveryOp(t *testing.T) {
	fx := newFixture(t)
	g := newConfigured(t, "")
	calls := 0
	g.SetInterrupt(func() bool { calls++; return true })
	for _, req := range []string{fx.goodAsk, fx.goodRes, fx.goodOpen, `{"v":1,"op":"lint","schema":{}}`, tConfigure([]string{tKeyB}, "")} {
		e := mustFail(t, g, req, CodeInterrupted)
		if !strings.Contains(e["message"].(string), "stopped") {
			t.Fatalf("message %q", e["message"])
		}
	}
	if calls < 5 {
		t.Fatalf("the hook was asked %d times", calls)
	}
	g.SetInterrupt(func() bool { return false })
	fx.usable(t, g, true) // also: the interrupted configure changed nothing
	g.SetInterrupt(nil)
	fx.usable(t, g, true)
}

// TestInterruptAtEveryCheckpoint stops a resume at each of its checkpoints
// in turn: every stop is clean and the guard answers the next call exactly.
func TestInterruptAtEveryCheckpoint(t *testing.T) {
	fx := newFixture(t)
	for _, req := range []string{fx.goodAsk, fx.goodRes, tResume("cp", fx.named["multi"], `{"contact":{"action":"accept","content":{"name":"A","email":"bad"}}}`)} {
		g := newConfigured(t, "")
		ref := newConfigured(t, "")
		full := run(ref, req)
		total := 0
		g.SetInterrupt(func() bool { total++; return false })
		if got := run(g, req); !bytes.Equal(got, full) {
			t.Fatal("a hook that never stops changed the result")
		}
		if total < 2 {
			t.Fatalf("only %d checkpoints", total)
		}
		for k := 1; k <= total+1; k++ {
			n := 0
			g.SetInterrupt(func() bool { n++; return n == k })
			out := run(g, req)
			if k <= total {
				if r := checkResponse(t, out); r["ok"] != false || r["error"].(map[string]any)["code"] != CodeInterrupted {
					t.Errorf("stop at checkpoint %d of %d: %s", k, total, out)
				}
			} else if !bytes.Equal(out, full) {
				t.Fatalf("no stop, but another result: %s", out)
			}
			g.SetInterrupt(nil)
			fx.usable(t, g, true)
		}
	}
}

func TestInterruptDuringParse(t *testing.T) {
	g := newConfigured(t, "")
	args := "[" + strings.Repeat("1,", 20000) + "1]"
	n := 0
	g.SetInterrupt(func() bool { n++; return n == 2 })
	mustFail(t, g, tcall{op: "ask", args: args, rest: `,"inputRequests":{}`}.env(), CodeInterrupted)
	if n != 2 {
		t.Fatalf("hook asked %d times", n)
	}
	g.SetInterrupt(nil)
	mustOK(t, g, tcall{op: "ask", args: args, rest: `,"inputRequests":{}`}.env(), "input_required")
}

func TestInterruptHookPanics(t *testing.T) {
	fx := newFixture(t)
	g := newConfigured(t, "")
	g.SetInterrupt(func() bool { panic("hook " + tPanicMarker) })
	for _, req := range []string{fx.goodAsk, fx.goodRes, fx.goodOpen, `{"v":1,"op":"lint","schema":{}}`} {
		internalOut(t, g, req)
	}
	g.SetInterrupt(nil)
	fx.usable(t, g, true)

	// A hook that panics at its k-th question, for every k: each call is
	// mrtr.internal or complete, and the next call is exact.
	for k := 1; k < 12; k++ {
		n, armed := 0, true
		g.SetInterrupt(func() bool {
			n++
			if armed && n == k {
				panic(fmt.Errorf("hook %s", tPanicMarker))
			}
			return false
		})
		out := run(g, fx.goodRes)
		armed = false
		if !bytes.Equal(out, fx.goodResR) && !isInternal(out) {
			t.Fatalf("panic at question %d: %s", k, out)
		}
		if bytes.Contains(out, []byte(tPanicMarker)) {
			t.Fatalf("the panic value leaked: %s", out)
		}
		fx.usable(t, g, true) // the hook is past k: it no longer panics
	}
	// Still configured with the same key after all of that.
	mustOK(t, g, tOpen(fx.named["contact"]), "open")
}

// --- nothing secret in errors ------------------------------------------------

// tNumMarker stands for a numeric answer.
const tNumMarker = "314159265358979323846"

func TestErrorsNeverLeakAnswers(t *testing.T) {
	fx := newFixture(t)
	g := newConfigured(t, "")
	M := tMarker
	contact, seats, mixed, round3 := fx.named["contact"], fx.named["seats"], fx.named["mixed"], fx.named["round3"]
	acc := func(content string) string { return `{"contact":{"action":"accept","content":` + content + `}}` }
	tampered := []byte(contact)
	tampered[30] ^= 1
	for _, c := range []struct{ name, req, code string }{
		{"rounds exceeded", tResume("l1", round3, acc(`{"name":"","email":"`+M+`"}`)), CodeRoundsExceeded},
		{"rounds exceeded by maxRounds", tResume("l2", contact, acc(`{"name":"`+M+`","email":"`+M+`"}`)) + ``, ""},
		{"nested content", tResume("l3", contact, acc(`{"name":{"x":"`+M+`"},"email":"`+M+`"}`)), CodeTooDeep},
		{"multi-select object", tResume("l4", seats, `{"seats":{"action":"accept","content":{"seats":1,"slot":"mon-10","topics":[{"x":"`+M+`"}]}}}`), CodeTooDeep},
		{"multi-select too long", tResume("l5", seats, `{"seats":{"action":"accept","content":{"seats":1,"slot":"mon-10","topics":[`+strings.Repeat(`"`+M+`",`, 1024)+`"`+M+`"]}}}`), CodeResponsesMalformed},
		{"content not an object", tResume("l6", contact, `{"contact":{"action":"accept","content":"`+M+`"}}`), CodeResponsesMalformed},
		{"unknown action", tResume("l7", contact, `{"contact":{"action":"`+M+`"}}`), CodeResponsesMalformed},
		{"response not an object", tResume("l8", contact, `{"contact":"`+M+`"}`), CodeResponsesMalformed},
		{"responses not an object", tResume("l9", contact, `["`+M+`"]`), CodeResponsesMalformed},
		{"case duplicates", tResume("l10", contact, acc(`{"name":"`+M+`","NAME":"`+M+`","email":"`+M+`"}`)), CodeCaseDuplicateKey},
		{"duplicate key", tResume("l11", contact, acc(`{"name":"`+M+`","name":"`+M+`x","email":"e@x.example"}`)), CodeDuplicateKey},
		{"number out of range", tResume("l12", seats, `{"seats":{"action":"accept","content":{"seats":`+tNumMarker+`e999999,"slot":"mon-10"}}}`), CodeNumberOutOfRange},
		{"number out of range (negative)", tResume("l13", seats, `{"seats":{"action":"accept","content":{"seats":-`+tNumMarker+`e999,"slot":"mon-10"}}}`), CodeNumberOutOfRange},
		{"number literal too long", tResume("l14", seats, `{"seats":{"action":"accept","content":{"seats":`+strings.Repeat(tNumMarker, 4)+`,"slot":"mon-10"}}}`), CodeNumberOutOfRange},
		{"invalid UTF-8", tResume("l15", contact, acc(`{"name":"`+M+"\xff"+`","email":"`+M+`"}`)), CodeInvalidUTF8},
		{"control character", tResume("l16", contact, acc(`{"name":"`+M+"\x01"+`","email":"`+M+`"}`)), CodeJSONSyntax},
		{"bad escape", tResume("l17", contact, acc(`{"name":"`+M+`\q","email":"`+M+`"}`)), CodeJSONSyntax},
		{"lone surrogate", tResume("l18", contact, acc(`{"name":"`+M+`\ud800","email":"`+M+`"}`)), CodeInvalidUTF8},
		{"unterminated", tResume("l19", contact, acc(`{"name":"`+M)), CodeJSONSyntax},
		{"too deep", tResume("l20", contact, acc(`{"name":`+strings.Repeat("[", 70)+`"`+M+`"`+strings.Repeat("]", 70)+`}`)), CodeTooDeep},
		{"bad root", tResume("l21", mixed, `{"roots":{"roots":[{"uri":"https://`+M+`"}]}}`), CodeResponsesMalformed},
		{"bad sampling", tResume("l22", mixed, `{"summary":{"role":"assistant","content":{"type":"text","text":"`+M+`"}}}`), CodeResponsesMalformed},
		{"other principal", tcall{op: "resume", principal: "mallory", rest: `,"inputResponses":` + acc(`{"name":"`+M+`","email":"e@x.example"}`) + `,"requestState":` + tJSON(contact)}.env(), CodeStateInvalid},
		{"tampered state", tResume("l24", string(tampered), acc(`{"name":"`+M+`","email":"e@x.example"}`)), CodeStateInvalid},
		{"other arguments", tcall{op: "resume", args: `{"topic":"` + M + `"}`, rest: `,"inputResponses":` + acc(`{"name":"`+M+`","email":"e@x.example"}`) + `,"requestState":` + tJSON(contact)}.env(), CodeStateInvalid},
		{"capability dropped on re-ask", tcall{op: "resume", caps: `{}`, rest: `,"inputResponses":` + acc(`{"name":"`+M+`","email":"bad"}`) + `,"requestState":` + tJSON(contact)}.env(), CodeCapabilityMissing},
		{"after, round limit", tAsk("l27", `{"c":`+tConfirmForm+`}`, `,"after":{"operationId":"AAAAAAAAAAAAAAAAAAAAAA","round":3,"answers":{"x":{"action":"accept","content":{"v":"`+M+`"}}}}`), CodeRoundsExceeded},
		{"after, lint failure", tAsk("l28", `{"c":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{"password":{"type":"string"}}}}}}`, `,"after":{"operationId":"AAAAAAAAAAAAAAAAAAAAAA","round":1,"answers":{"x":{"v":"`+M+`"}}}`), CodeFormSecretField},
		{"after, bad answers", tAsk("l29", `{}`, `,"after":{"operationId":"AAAAAAAAAAAAAAAAAAAAAA","round":1,"answers":["`+M+`"]}`), CodeRequestMalformed},
		{"too large", tResume("l30", contact, acc(`{"name":"`+M+strings.Repeat("a", 1<<20)+`","email":"e"}`)), CodeRequestTooLarge},
	} {
		req := c.req
		if c.code == "" {
			req = strings.TrimSuffix(req, "}") + `,"maxRounds":1}`
			c.code = CodeRoundsExceeded
		}
		out := run(g, req)
		resp := checkResponse(t, out)
		if e, _ := resp["error"].(map[string]any); e == nil || e["code"] != c.code {
			t.Errorf("%s: want %s, got %.300s", c.name, c.code, out)
			continue
		}
		if bytes.Contains(out, []byte(M)) || bytes.Contains(out, []byte(tNumMarker)) {
			t.Errorf("%s: an answer reached the error: %s", c.name, out)
		}
	}
	fx.usable(t, g, true)
}

func TestKeyMaterialNeverInResponses(t *testing.T) {
	g := New()
	hexA := hex.EncodeToString(tKeyABytes)
	tokA := ""
	for _, req := range []string{
		tConfigure([]string{tKeyA, tKeyB}, ""),
		tAsk("km", `{"c":`+tConfirmForm+`}`, ""),
		tConfigure([]string{tKeyA, tKeyA}, ""),
		tConfigure([]string{tKeyB, tKeyA + "A"}, ""),
		tConfigure([]string{"k4.public." + tKeyA[9:]}, ""),
		tConfigure([]string{"k4.local." + base64.RawStdEncoding.EncodeToString(tKeyABytes)}, ""),
		`{"v":1,"op":"configure","keys":[{"k":"` + tKeyA + `"}],"audience":"a"}`,
		`{"v":1,"op":"configure","keys":["` + tKeyA + `"],"audience":5}`,
		`{"v":1,"op":"paseto.seal","key":"` + hexA + `","nonce":"zz","payload":"p"}`,
		`{"v":1,"op":"paseto.seal","key":"` + hexA + `x","nonce":"` + hexA + `","payload":"p"}`,
		`{"v":1,"op":"paseto.open","key":"` + hexA + `","token":"v4.local.AAAA","implicit":""}`,
		`{"v":1,"op":"paseto.seal","key":"` + hexA + `","nonce":"` + hex.EncodeToString(tSeq(0x90, 32)) + `","payload":"p"}`,
	} {
		out := run(g, req)
		checkResponse(t, out)
		if hasKeyMaterial(out) {
			t.Errorf("key material in %s", out)
		}
		if tokA == "" && bytes.Contains(out, []byte("requestState")) {
			tokA = tokenOf(t, checkResponse(t, out))
		}
	}
	mustOK(t, g, tConfigure([]string{tKeyC}, ""), "")
	if out := run(g, tOpen(tokA)); hasKeyMaterial(out) || !bytes.Contains(out, []byte(ReasonUnknownKey)) {
		t.Errorf("open under a removed key: %s", out)
	}
}

// --- states that hold deep JSON ----------------------------------------------

// A sampling request or result may nest its content as deep as the
// envelope allows (64 levels). A state that holds it must open again.
func TestDeepStatesOpen(t *testing.T) {
	g := newConfigured(t, "")
	for _, depth := range []int{8, 10, 11, 14, 30} {
		t.Run(fmt.Sprint("ask/", depth), func(t *testing.T) {
			req := `{"s":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":` + nested(depth) + `}],"maxTokens":1}}}`
			tok := tokenOf(t, mustOK(t, g, tAsk("deep", req, ""), "input_required"))
			if out := run(g, tOpen(tok)); !bytes.Contains(out, []byte(`"ok":true`)) {
				t.Fatalf("a state ask sealed does not open: %s", out)
			}
		})
		t.Run(fmt.Sprint("answer/", depth), func(t *testing.T) {
			tok := tokenOf(t, mustOK(t, g, tAsk("deep2", `{"s":`+tSampleReq+`,"c":`+tConfirmForm+`}`, ""), "input_required"))
			answer := `{"s":{"role":"assistant","model":"m","content":` + nested(depth) + `}}`
			tok2 := tokenOf(t, mustOK(t, g, tResume("deep3", tok, answer), "input_required"))
			if out := run(g, tOpen(tok2)); !bytes.Contains(out, []byte(`"ok":true`)) {
				t.Fatalf("a re-ask carrying a sampling answer does not open: %s", out)
			}
		})
	}
}

// Every refusal of an intact state names the binding that differs, also
// for states whose forms nest deeply (the seats form's multi-select).
func TestStateReasonsForEveryFixtureState(t *testing.T) {
	fx := newFixture(t)
	g := newConfigured(t, "")
	for name, tok := range fx.named {
		for i, v := range openVariants {
			c := v.c
			c.op = "open"
			c.rest = `,"requestState":` + tJSON(tok)
			out := run(g, c.env())
			r := checkResponse(t, out)
			if v.reason == "" {
				if r["ok"] != true {
					t.Errorf("%s, variant %d: %s", name, i, out)
				}
			} else if e, _ := r["error"].(map[string]any); e == nil || e["reason"] != v.reason {
				t.Errorf("%s, variant %d: want reason %s, got %s", name, i, v.reason, out)
			}
		}
	}
}

// BenchmarkResumeWideContent: a form answer with n extra keys, each
// dropped, all checked for case collisions first. ns/key should stay flat.
// BenchmarkResumeWideContent: content is capped at maxContentKeys fields;
// wider content is refused, and the refusal must stay cheap per key.
func BenchmarkResumeWideContent(b *testing.B) {
	fx := newFixture(b)
	g := newConfigured(b, "")
	for _, n := range []int{200, 1000, 4000, 16000} {
		obj := wideObject(n)
		req := []byte(tResume("wide", fx.named["contact"], `{"contact":{"action":"accept","content":`+obj[:len(obj)-1]+`,"name":"A","email":"a@b.example"}}}`))
		b.Run("keys="+itoa(n), func(b *testing.B) {
			for b.Loop() {
				out := g.Call(req)
				want := `"status":"complete"`
				if n > maxContentKeys {
					want = `"code":"` + CodeResponsesMalformed + `"`
				}
				if !bytes.Contains(out, []byte(want)) {
					b.Fatalf("%.300s", out)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
		})
	}
}
