package core

// The fuzz targets of the guard core and the harness they share with
// call_test.go and json_test.go: a configured Guard under the fixed test
// key, envelope builders, and a checker that every response must pass.
//
//	go test ./guest/core -run XXX -fuzz FuzzOpen -fuzztime 60s
//
// The seed corpora under testdata/fuzz/ are regenerated with
//
//	go test ./guest/core -run TestFuzzSeedCorpus -update-corpus

import (
	"bytes"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the seed corpora under testdata/fuzz")

// Known bugs in the core, each shown by a failing unit test. The fuzz
// targets tolerate exactly these, so that fuzzing goes on past them; set
// each to false once it is fixed.
const (
	// diagnose parses the payload with depth 8: states with deep forms
	// get reason "tampered" instead of the binding that differs
	// (TestStateReasonsForEveryFixtureState).
	bugDiagnoseDepth = false
	// readPayload parses with depth 16: states holding deeper JSON are
	// sealed but never open (TestDeepStatesOpen).
	bugPayloadDepth = false
)

// jsonDepth is the nesting depth of a JSON text (0 for a scalar or bad JSON).
func jsonDepth(b []byte) int {
	var p parser
	root, err := p.parse(b, 1000)
	if err != nil {
		return 0
	}
	var depth func(i int32) int
	depth = func(i int32) int {
		n := p.node(i)
		if n.kind != jArray && n.kind != jObject {
			return 0
		}
		d := 0
		for _, m := range p.kids(i) {
			d = max(d, depth(m.val))
		}
		return d + 1
	}
	return depth(root)
}

// The bindings of host/vectors_gen_test.go, so that the states recorded in
// testdata/vectors open in these guards too.
const (
	tAudience = "vectors.example"
	tNowMs    = int64(1785196800000) // 2026-07-28T00:00:00Z
	// tMarker stands for a form answer: it must never reach an error.
	tMarker = "QZX7marker31"
	tCaps   = `{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}}`
)

var (
	tKeyABytes = tSeq(0x70, 32) // the PASETO v4 test key 707172…8f
	tKeyBBytes = tSeq(0x20, 32)
	tKeyCBytes = tSeq(0x40, 32)
	tKeyA      = "k4.local." + base64.RawURLEncoding.EncodeToString(tKeyABytes)
	tKeyB      = "k4.local." + base64.RawURLEncoding.EncodeToString(tKeyBBytes)
	tKeyC      = "k4.local." + base64.RawURLEncoding.EncodeToString(tKeyCBytes)
)

const (
	tContactForm = `{"method":"elicitation/create","params":{"mode":"form","message":"Who should we book the demo for?","requestedSchema":{"type":"object","properties":{"name":{"type":"string","title":"Your name","minLength":1},"email":{"type":"string","title":"Work email","format":"email"}},"required":["name","email"]}}}`
	tConfirmForm = `{"method":"elicitation/create","params":{"message":"Book it?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean","title":"Confirm","default":false}},"required":["ok"]}}}`
	tSeatsForm   = `{"method":"elicitation/create","params":{"mode":"form","message":"How many seats?","requestedSchema":{"type":"object","properties":{"seats":{"type":"integer","minimum":1,"maximum":10},"size":{"type":"number"},"slot":{"type":"string","title":"Time slot","oneOf":[{"const":"mon-10","title":"Monday 10:00"},{"const":"tue-14","title":"Tuesday 14:00"}]},"topics":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string","enum":["pricing","security","api"]}},"day":{"type":"string","format":"date"}},"required":["seats","slot"]}}}`
	tURLRequest  = `{"method":"elicitation/create","params":{"mode":"url","message":"Connect your calendar on our site.","url":"https://crm.example.com/connect/7f3a"}}`
	tSampleReq   = `{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"Summarise the account"}}],"maxTokens":200}}`
	tRootsReq    = `{"method":"roots/list"}`

	tContactOK = `{"contact":{"action":"accept","content":{"name":"Ann Lee","email":"ann@example.com"}}}`
)

func tSeq(start byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

// tRand is 48 deterministic "random" bytes per label.
func tRand(label string) string {
	h := sha512.Sum512([]byte(label))
	return base64.RawURLEncoding.EncodeToString(h[:48])
}

func tJSON(s string) string { return string(AppendJSONString(nil, s)) }

func tConfigure(keys []string, extra string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = tJSON(k)
	}
	return `{"v":1,"op":"configure","keys":[` + strings.Join(q, ",") + `],"audience":"` + tAudience + `"` + extra + `}`
}

// tcall is an ask, resume or open envelope; empty fields take the
// defaults of the shared vectors.
type tcall struct {
	op, label, principal, method, target, args, caps string
	nowMs                                            int64
	rest                                             string
}

func (c tcall) env() string {
	if c.principal == "" {
		c.principal = "alice"
	}
	if c.method == "" {
		c.method = "tools/call"
	}
	if c.target == "" {
		c.target = "book_demo_call"
	}
	if c.args == "" {
		c.args = `{"topic":"pricing"}`
	}
	if c.caps == "" {
		c.caps = tCaps
	}
	if c.nowMs == 0 {
		c.nowMs = tNowMs
	}
	if c.label == "" {
		c.label = c.op
	}
	return fmt.Sprintf(`{"v":1,"op":%q,"now":%d,"rand":%q,"principal":%s,"method":%s,"target":%s,"arguments":%s,"capabilities":%s`,
		c.op, c.nowMs, tRand(c.label), tJSON(c.principal), tJSON(c.method), tJSON(c.target), c.args, c.caps) + c.rest + "}"
}

func tAsk(label, reqs, more string) string {
	return tcall{op: "ask", label: label, rest: `,"inputRequests":` + reqs + more}.env()
}

func tResume(label, token, responses string) string {
	r := `,"requestState":` + tJSON(token)
	if responses != "" {
		r = `,"inputResponses":` + responses + r
	}
	return tcall{op: "resume", label: label, rest: r}.env()
}

func tOpen(token string) string {
	return tcall{op: "open", rest: `,"requestState":` + tJSON(token)}.env()
}

// run calls g and returns a copy of the response (Call's slice is reused).
func run(g *Guard, req string) []byte { return bytes.Clone(g.Call([]byte(req))) }

func newConfigured(tb testing.TB, extra string, keys ...string) *Guard {
	tb.Helper()
	if len(keys) == 0 {
		keys = []string{tKeyA}
	}
	g := New()
	mustOK(tb, g, tConfigure(keys, extra), "")
	return g
}

// mustOK runs req, checks the response and its status ("" for none).
func mustOK(tb testing.TB, g *Guard, req, status string) map[string]any {
	tb.Helper()
	out := run(g, req)
	resp := checkResponse(tb, out)
	if resp["ok"] != true {
		tb.Fatalf("want ok (status %q), got %s\nrequest: %.300s", status, out, req)
	}
	if got, _ := resp["status"].(string); got != status {
		tb.Fatalf("want status %q, got %s", status, out)
	}
	return resp
}

// mustFail runs req and returns the error object, checking its code.
func mustFail(tb testing.TB, g *Guard, req, code string) map[string]any {
	tb.Helper()
	out := run(g, req)
	resp := checkResponse(tb, out)
	e, _ := resp["error"].(map[string]any)
	if resp["ok"] != false || e["code"] != code {
		tb.Fatalf("want error %s, got %s\nrequest: %.300s", code, out, req)
	}
	return e
}

func mustReason(tb testing.TB, g *Guard, req, reason string) {
	tb.Helper()
	if e := mustFail(tb, g, req, CodeStateInvalid); e["reason"] != reason {
		tb.Fatalf("want reason %q, got %v", reason, e)
	}
}

func tokenOf(tb testing.TB, resp map[string]any) string {
	tb.Helper()
	r, _ := resp["result"].(map[string]any)
	s, _ := r["requestState"].(string)
	if s == "" {
		tb.Fatalf("no requestState in %v", resp)
	}
	return s
}

func decodeJSON(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("trailing data")
	}
	return v, nil
}

func strs(v any) []string {
	a, _ := v.([]any)
	out := make([]string, 0, len(a))
	for _, x := range a {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// --- the documented error codes (guest/ABI.md) -----------------------------

type abiDoc struct {
	codes    map[string]bool
	prefixes []string // from rows such as `mrtr.form.*`
	reasons  map[string]bool
}

var abiTick = regexp.MustCompile("`([^`]+)`")

// readABI reads the error-code table of ../ABI.md: a code is listed whole,
// as a family wildcard (`mrtr.form.*`) or as a suffix of the family named
// before it on the same row (`mrtr.json.syntax`, `.invalid_utf8`).
func readABI(tb testing.TB) *abiDoc {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "ABI.md"))
	if err != nil {
		tb.Fatal(err)
	}
	text := string(raw)
	i := strings.Index(text, "## Error codes")
	if i < 0 {
		tb.Fatal("ABI.md has no error code table")
	}
	d := &abiDoc{codes: map[string]bool{}, reasons: map[string]bool{}}
	for _, line := range strings.Split(text[i:], "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		family := ""
		for _, m := range abiTick.FindAllStringSubmatch(cells[1], -1) {
			c := m[1]
			switch {
			case strings.HasSuffix(c, ".*"):
				d.prefixes = append(d.prefixes, strings.TrimSuffix(c, "*"))
			case strings.HasPrefix(c, "mrtr."):
				d.codes[c] = true
				family = c[:strings.LastIndexByte(c, '.')]
			case strings.HasPrefix(c, ".") && family != "":
				d.codes[family+c] = true
			}
		}
		if strings.Contains(cells[1], "`mrtr.state.invalid`") {
			for _, m := range abiTick.FindAllStringSubmatch(strings.Join(cells[2:], "|"), -1) {
				d.reasons[m[1]] = true
			}
		}
	}
	return d
}

func (d *abiDoc) documented(code string) bool {
	if d.codes[code] {
		return true
	}
	for _, p := range d.prefixes {
		if strings.HasPrefix(code, p) && len(code) > len(p) {
			return true
		}
	}
	return false
}

var abiCache *abiDoc

func abi(tb testing.TB) *abiDoc {
	if abiCache == nil {
		abiCache = readABI(tb)
	}
	return abiCache
}

// allCodes is every code the core may return. CodeLintFailed is left out:
// nothing returns it (lint failures carry the first finding's code).
var allCodes = []string{
	CodeRequestTooLarge, CodeRequestMalformed, CodeRequestVersion, CodeRequestUnknownOp, CodeRequestNoEntropy,
	CodeNotConfigured, CodeConfigInvalid, CodeInternal, CodeInterrupted, CodeJSONSyntax, CodeInvalidUTF8,
	CodeDuplicateKey, CodeCaseDuplicateKey, CodeTooDeep, CodeNumberOutOfRange, CodeArgumentsMalformed,
	CodeFormSecretField, CodeFormInvalidSchema, CodeFormNotFlat, CodeFormUnsupportedType, CodeFormUnsupportedKey,
	CodeFormBadKeywordValue, CodeFormFormat, CodeFormRequiredUnknown, CodeFormInvalidDefault, CodeFormEnum,
	CodeFormLegacyEnum, CodeFormSchemaDialect, CodeMissingMessage, CodeUnknownParam, CodeURLInvalid,
	CodeURLNotHTTPS, CodeURLCredentials, CodeURLPersonalData, CodeInputUnknownMethod, CodeInputInvalidParams,
	CodeInputKey, CodeInputDeprecated, CodeMethodNotAllowed, CodeCapabilityMissing, CodeStateInvalid,
	CodeResponsesMalformed, CodeRoundsExceeded, CodeUpstreamResult, CodePolicyDenied,
}

var allReasons = []string{
	ReasonMalformed, ReasonOversize, ReasonUnknownKey, ReasonTampered, ReasonExpired, ReasonNotYetValid,
	ReasonPrincipal, ReasonMethod, ReasonTarget, ReasonArguments, ReasonAudience, ReasonVersion, ReasonUpstream, ReasonPolicy,
}

func TestErrorCodesDocumented(t *testing.T) {
	d := abi(t)
	for _, c := range allCodes {
		if !d.documented(c) {
			t.Errorf("code %s is not in guest/ABI.md", c)
		}
	}
	for _, r := range allReasons {
		if !d.reasons[r] {
			t.Errorf("reason %s is not in guest/ABI.md", r)
		}
	}
	if d.documented("mrtr.nope") || d.documented("mrtr.form.") {
		t.Fatal("the ABI reader accepts anything")
	}
}

// checkResponse asserts what every response must be: strict JSON, "v":1,
// a boolean "ok", and on failure an error with a documented code, a
// message, a reason exactly for rejected states, and nothing else. No
// response may be mrtr.internal: that is a recovered panic.
func checkResponse(tb testing.TB, out []byte) map[string]any {
	tb.Helper()
	if !utf8.Valid(out) || !json.Valid(out) {
		tb.Fatalf("response is not valid JSON: %q", out)
	}
	var sp parser
	if _, err := sp.parse(out, 128); err != nil {
		tb.Fatalf("response fails the strict parser (%v): %q", err, out)
	}
	v, err := decodeJSON(out)
	if err != nil {
		tb.Fatalf("response: %v: %q", err, out)
	}
	resp, _ := v.(map[string]any)
	if resp == nil || resp["v"] != json.Number("1") {
		tb.Fatalf("response without \"v\":1: %q", out)
	}
	okv, isBool := resp["ok"].(bool)
	if !isBool {
		tb.Fatalf("response without a boolean \"ok\": %q", out)
	}
	if okv {
		if _, has := resp["error"]; has {
			tb.Fatalf("ok response with an error: %q", out)
		}
		return resp
	}
	e, _ := resp["error"].(map[string]any)
	code, _ := e["code"].(string)
	// "interrupted": true marks exactly the interrupted calls (ABI.md).
	want := 3
	if code == CodeInterrupted {
		want = 4
		if resp["interrupted"] != true {
			tb.Fatalf("interrupted call without \"interrupted\": true: %q", out)
		}
	}
	if len(resp) != want {
		tb.Fatalf("error response with other fields: %q", out)
	}
	msg, _ := e["message"].(string)
	if code == CodeInternal {
		tb.Fatalf("internal error (a recovered panic): %q", out)
	}
	if !abi(tb).documented(code) || !slices.Contains(allCodes, code) {
		tb.Fatalf("undocumented error code %q: %q", code, out)
	}
	if msg == "" {
		tb.Fatalf("error without a message: %q", out)
	}
	reason, hasReason := e["reason"]
	if code == CodeStateInvalid {
		r, _ := reason.(string)
		if !slices.Contains(allReasons, r) || msg != StateInvalidMessage {
			tb.Fatalf("state error with reason %v, message %q", reason, msg)
		}
	} else if code == CodePolicyDenied {
		// The first reason's code (and rule), as data.policy has it.
		r, _ := reason.(string)
		d, _ := e["data"].(map[string]any)
		first, _ := d["policy"].(map[string]any)
		if c, _ := first["code"].(string); r == "" || !strings.HasPrefix(r, c) {
			tb.Fatalf("policy refusal with reason %v and data %v", reason, d)
		}
	} else if hasReason {
		tb.Fatalf("reason outside a state error or a policy refusal: %q", out)
	}
	if d, has := e["data"]; has {
		if _, isObj := d.(map[string]any); !isObj {
			tb.Fatalf("error data is not an object: %q", out)
		}
	}
	for k := range e {
		switch k {
		case "code", "message", "reason", "data":
		default:
			tb.Fatalf("error with an unknown field %q: %q", k, out)
		}
	}
	return resp
}

// keyMaterial is every spelling of the test keys a leak could take.
var keyMaterial = func() [][]byte {
	var out [][]byte
	for _, k := range [][]byte{tKeyABytes, tKeyBBytes, tKeyCBytes} {
		out = append(out,
			[]byte(base64.RawURLEncoding.EncodeToString(k)),
			[]byte(base64.StdEncoding.EncodeToString(k)[:40]),
			[]byte(hex.EncodeToString(k)),
			[]byte(strings.ToUpper(hex.EncodeToString(k))),
			k)
	}
	return out
}()

func hasKeyMaterial(b []byte) bool {
	for _, k := range keyMaterial {
		if bytes.Contains(b, k) {
			return true
		}
	}
	return false
}

// --- the fixture: real states, vector requests, known-good calls ----------

type tokenInfo struct {
	round             int
	pending, answered []string
}

type fixture struct {
	real      map[string]bool       // every token a real seal produced
	setup     map[string]*tokenInfo // the tokens sealed here, default bindings
	named     map[string]string
	vecReqs   [][]byte // every vector request up to 64 KiB
	goodAsk   string
	goodAskR  []byte
	goodRes   string
	goodResR  []byte
	goodOpen  string
	goodOpenR []byte
}

var tokenRE = regexp.MustCompile(`v4\.local\.[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)?`)

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	fx := &fixture{real: map[string]bool{}, setup: map[string]*tokenInfo{}, named: map[string]string{}}
	g := newConfigured(tb, "")
	seal := func(name, req string) string {
		tok := tokenOf(tb, mustOK(tb, g, req, "input_required"))
		fx.named[name] = tok
		return tok
	}
	seal("contact", tAsk("fx1", `{"contact":`+tContactForm+`}`, ""))
	multi := seal("multi", tAsk("fx2", `{"contact":`+tContactForm+`,"confirm":`+tConfirmForm+`}`, ""))
	seal("mixed", tAsk("fx3", `{"calendar":`+tURLRequest+`,"summary":`+tSampleReq+`,"roots":`+tRootsReq+`}`, ""))
	seal("seats", tAsk("fx4", `{"seats":`+tSeatsForm+`}`, ""))
	seal("progress", tAsk("fx5", `{}`, `,"progress":"c3RlcC0y"`))
	seal("round2", tResume("fx6", multi, `{"contact":{"action":"accept","content":{"name":"Ann `+tMarker+`","email":"ann@example.com"}}}`))
	seal("after", tAsk("fx7", `{"confirm":`+tConfirmForm+`}`, `,"after":{"operationId":"AAECAwQFBgcICQoLDA0ODw","round":1,"answers":{"note":{"action":"accept","content":{"text":"`+tMarker+`"}}}}`))
	r2 := seal("bad1", tResume("fx8", fx.named["contact"], `{"contact":{"action":"accept","content":{"name":"Ann","email":"nope"}}}`))
	seal("round3", tResume("fx9", r2, `{"contact":{"action":"accept","content":{"name":"","email":"nope"}}}`))
	for _, tok := range fx.named {
		resp := mustOK(tb, g, tOpen(tok), "open")
		rnd, _ := strconv.Atoi(string(resp["round"].(json.Number)))
		fx.setup[tok] = &tokenInfo{round: rnd, pending: strs(resp["pending"]), answered: strs(resp["answered"])}
		fx.real[tok] = true
	}

	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "vectors", "*.json"))
	if len(files) == 0 {
		tb.Fatal("no vectors under testdata/vectors")
	}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		for _, tok := range tokenRE.FindAllString(string(raw), -1) {
			fx.real[tok] = true
		}
		var vf struct {
			Cases []struct {
				Request       string `json:"request"`
				RequestBase64 string `json:"requestBase64"`
				RequestRepeat *struct {
					Prefix, Fill, Suffix string
					Count                int
				} `json:"requestRepeat"`
			} `json:"cases"`
		}
		if err := json.Unmarshal(raw, &vf); err != nil {
			tb.Fatalf("%s: %v", file, err)
		}
		for _, c := range vf.Cases {
			switch {
			case c.RequestBase64 != "":
				b, err := base64.StdEncoding.DecodeString(c.RequestBase64)
				if err != nil {
					tb.Fatal(err)
				}
				fx.vecReqs = append(fx.vecReqs, b)
			case c.RequestRepeat != nil:
				r := c.RequestRepeat
				if len(r.Fill)*r.Count <= 64<<10 {
					fx.vecReqs = append(fx.vecReqs, []byte(r.Prefix+strings.Repeat(r.Fill, r.Count)+r.Suffix))
				}
			default:
				fx.vecReqs = append(fx.vecReqs, []byte(c.Request))
			}
		}
	}
	if len(fx.vecReqs) < 100 {
		tb.Fatalf("only %d vector requests", len(fx.vecReqs))
	}

	// Known-good calls, answered by a fresh guard: any input that leaves a
	// guard unable to reproduce these bytes broke it.
	fresh := newConfigured(tb, "")
	fx.goodAsk = tAsk("known-good", `{"contact":`+tContactForm+`,"seats":`+tSeatsForm+`}`, "")
	fx.goodAskR = run(fresh, fx.goodAsk)
	fx.goodRes = tResume("known-good-2", fx.named["round2"], `{"confirm":{"action":"accept","content":{"ok":true}}}`)
	fx.goodResR = run(fresh, fx.goodRes)
	fx.goodOpen = tOpen(fx.named["round3"])
	fx.goodOpenR = run(fresh, fx.goodOpen)
	for _, o := range [][]byte{fx.goodAskR, fx.goodResR, fx.goodOpenR} {
		if r := checkResponse(tb, o); r["ok"] != true {
			tb.Fatalf("known-good call failed: %s", o)
		}
	}
	return fx
}

// usable asserts that g still answers the known-good calls byte for byte.
func (fx *fixture) usable(tb testing.TB, g *Guard, full bool) {
	tb.Helper()
	calls := [][2]string{{fx.goodOpen, string(fx.goodOpenR)}}
	if full {
		calls = append(calls, [2]string{fx.goodAsk, string(fx.goodAskR)}, [2]string{fx.goodRes, string(fx.goodResR)})
	}
	for _, c := range calls {
		if got := g.Call([]byte(c[0])); string(got) != c[1] {
			tb.Fatalf("the guard is no longer usable:\nrequest %.200s\nwant %.300s\ngot  %.300s", c[0], c[1], got)
		}
	}
}

// --- FuzzCall: any bytes into Guard.Call -----------------------------------

func callSeeds(fx *fixture) [][]byte {
	seeds := slices.Clone(fx.vecReqs)
	for _, s := range []string{
		fx.goodAsk, fx.goodRes, fx.goodOpen,
		tResume("s1", fx.named["seats"], `{"seats":{"action":"accept","content":{"seats":2,"slot":"tue-14","topics":["api"],"day":"2026-08-03"}}}`),
		tResume("s2", fx.named["mixed"], `{"calendar":{"action":"accept"},"summary":{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"},"roots":{"roots":[{"uri":"file:///x"}]}}`),
		tResume("s3", fx.named["after"], `{"confirm":{"action":"accept","content":{"ok":false}}}`),
		tResume("s4", fx.named["round3"], `{"contact":{"action":"accept","content":{"name":"A","email":"x"}}}`),
		tAsk("s5", `{"k":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"string","enum":["x","y"],"default":"x"},"b":{"type":"array","items":{"anyOf":[{"const":"p","title":"P"}]}}}}}}}`, `,"ttl":10,"maxRounds":5`),
		tAsk("s6", `{"contact":`+tContactForm+`}`, `,"policy":{"allow":false,"code":"policy.x","rule":"tools.t","denials":[{"code":"policy.x","key":"contact","field":"email","message":"no"}]}`),
		tAsk("s7", `{"contact":`+tContactForm+`}`, `,"policy":{"document":{"allow":true,"deny":[],"max_rounds":2,"ttl_seconds":60,"rules":["tools.t"]}}`),
		`{"v":1,"op":"policy.decision","document":{"allow":true,"deny":[{"code":"c","rule":7}],"max_rounds":2.0,"ttl_seconds":1e2,"rules":[1,"r"]}}`,
		`{"v":1,"op":"paseto.seal","key":"` + hex.EncodeToString(tKeyCBytes) + `","nonce":"` + hex.EncodeToString(tSeq(0x90, 32)) + `","payload":"p","footer":"f","implicit":"i"}`,
	} {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

func FuzzCall(f *testing.F) {
	fx := newFixture(f)
	for _, s := range callSeeds(fx) {
		f.Add(s)
	}
	g := newConfigured(f, "")
	n := 0
	f.Fuzz(func(t *testing.T, in []byte) {
		buf := bytes.Clone(in)
		out := bytes.Clone(g.Call(buf))
		if !bytes.Equal(buf, in) {
			t.Fatal("Call wrote to its input")
		}
		resp := checkResponse(t, out)
		// Whatever the guard kept from buf must not alias it.
		for i := range buf {
			buf[i] = '"'
		}
		if again := g.Call(bytes.Clone(in)); !bytes.Equal(again, out) {
			t.Fatalf("the same request twice gave different responses:\n%s\n%s", out, again)
		}
		if hasKeyMaterial(out) && !hasKeyMaterial(in) {
			t.Fatalf("key material in a response: %q", out)
		}
		if resp["ok"] == true {
			// The strict parser accepted the request, so encoding/json
			// reads the same values.
			v, err := decodeJSON(in)
			if err != nil {
				t.Fatalf("ok response to a request encoding/json refuses (%v): %q", err, in)
			}
			req := v.(map[string]any)
			switch req["op"] {
			case "configure":
				mustOK(t, g, tConfigure([]string{tKeyA}, ""), "")
			case "open", "resume":
				if tok, _ := req["requestState"].(string); !fx.real[tok] {
					t.Fatalf("a requestState no seal produced was accepted: %q", tok)
				}
			}
		}
		n++
		fx.usable(t, g, n%8 == 0)
	})
}

// --- FuzzOpen: altered states and bindings ---------------------------------

type openVariant struct {
	c      tcall
	reason string // for the states sealed by the fixture; "" = opens
}

var openVariants = []openVariant{
	{tcall{}, ""},
	{tcall{args: "{ \"topic\" :\n\"pricing\" }"}, ""},
	{tcall{nowMs: tNowMs + 299_000}, ""},
	{tcall{nowMs: tNowMs - 60_000}, ""},
	{tcall{principal: "mallory"}, ReasonPrincipal},
	{tcall{method: "prompts/get"}, ReasonMethod},
	{tcall{target: "delete_account"}, ReasonTarget},
	{tcall{args: `{"topic":"refunds"}`}, ReasonArguments},
	{tcall{args: `null`}, ReasonArguments},
	{tcall{args: `{"topic":"pricing","x":1e-7}`}, ReasonArguments},
	{tcall{nowMs: tNowMs + 300_000}, ReasonExpired},
	{tcall{nowMs: tNowMs - 61_000}, ReasonNotYetValid},
}

func FuzzOpen(f *testing.F) {
	fx := newFixture(f)
	for tok := range fx.real {
		f.Add(tok, uint8(0))
	}
	for tok := range fx.setup {
		for i := range openVariants {
			f.Add(tok, uint8(i))
		}
	}
	tok := fx.named["round2"]
	for _, s := range []string{"", "v4.local.", tok[:len(tok)-1], tok + "A", strings.Replace(tok, "v4.local.", "v4.public.", 1), tok[:len(tok)/2] + tok[len(tok)/2+1:]} {
		f.Add(s, uint8(0))
	}
	g := newConfigured(f, "")
	f.Fuzz(func(t *testing.T, token string, variant uint8) {
		v := openVariants[int(variant)%len(openVariants)]
		c := v.c
		c.op = "open"
		c.rest = `,"requestState":` + tJSON(token)
		out := run(g, c.env())
		if !utf8.ValidString(token) {
			if !bytes.Contains(out, []byte(CodeInvalidUTF8)) {
				t.Fatalf("invalid UTF-8 not refused: %s", out)
			}
			fx.usable(t, g, false)
			return
		}
		resp := checkResponse(t, out)
		info := fx.setup[token]
		if resp["ok"] == true {
			if !fx.real[token] {
				t.Fatalf("an altered requestState opened: %q", token)
			}
			if info != nil && v.reason != "" {
				t.Fatalf("a state opened under other bindings (variant %d): %s", variant, out)
			}
			if bytes.Contains(out, []byte(tMarker)) {
				t.Fatalf("open revealed an answer: %s", out)
			}
			if info != nil && (!slices.Equal(strs(resp["pending"]), info.pending) || !slices.Equal(strs(resp["answered"]), info.answered)) {
				t.Fatalf("open changed its report: %s", out)
			}
		} else {
			e := resp["error"].(map[string]any)
			if e["code"] != CodeStateInvalid && !(e["code"] == CodeRequestTooLarge && len(token) > 1<<19) {
				t.Fatalf("open refused with %v", e)
			}
			if info != nil && e["reason"] != v.reason && !(bugDiagnoseDepth && e["reason"] == ReasonTampered) {
				t.Fatalf("real state, variant %d: reason %v, want %q", variant, e["reason"], v.reason)
			}
		}
		fx.usable(t, g, false)
	})
}

// --- FuzzResume: altered states and any inputResponses --------------------

// formAnswerOK checks an accepted answer against what the fixture's forms
// asked; the validator must never let anything else through.
func formAnswerOK(key string, a any) bool {
	m, _ := a.(map[string]any)
	if m == nil || m["action"] != "accept" {
		return false
	}
	content, _ := m["content"].(map[string]any)
	switch key {
	case "contact":
		name, _ := content["name"].(string)
		email, _ := content["email"].(string)
		return len(m) == 2 && len(content) == 2 && name != "" && strings.Contains(email, "@")
	case "confirm":
		_, isBool := content["ok"].(bool)
		return len(m) == 2 && len(content) == 1 && isBool
	case "seats":
		n, err := strconv.ParseFloat(fmt.Sprint(content["seats"]), 64)
		slot := content["slot"]
		if err != nil || n != float64(int(n)) || n < 1 || n > 10 || (slot != "mon-10" && slot != "tue-14") {
			return false
		}
		for k, v := range content {
			switch k {
			case "seats", "slot":
			case "size":
				if _, isNum := v.(json.Number); !isNum {
					return false
				}
			case "day":
				if _, isStr := v.(string); !isStr {
					return false
				}
			case "topics":
				ts, _ := v.([]any)
				if len(ts) < 1 || len(ts) > 2 {
					return false
				}
				for _, x := range ts {
					if x != "pricing" && x != "security" && x != "api" {
						return false
					}
				}
			default:
				return false
			}
		}
		return len(m) == 2
	case "calendar":
		return len(m) == 1
	case "note":
		return true // carried from "after", never checked by the guard
	}
	return false
}

func FuzzResume(f *testing.F) {
	fx := newFixture(f)
	responses := []string{
		``, `{}`, `null`, `[1]`, tContactOK,
		`{"contact":{"action":"accept","content":{"name":"Ann","email":"a@b.example","x":1}}}`,
		`{"contact":{"action":"decline"},"confirm":{"action":"cancel"}}`,
		`{"contact":{"action":"accept","content":{"name":"","email":"nope"}},"confirm":{"action":"accept","content":{"ok":true}}}`,
		`{"confirm":{"action":"accept","content":{"ok":"yes"}}}`,
		`{"calendar":{"action":"accept"},"summary":{"role":"assistant","content":{"type":"text","text":"x"},"model":"m"},"roots":{"roots":[{"uri":"file:///r"}]}}`,
		`{"seats":{"action":"accept","content":{"seats":10,"slot":"mon-10","topics":["api","pricing"],"size":1e308}}}`,
		`{"seats":{"action":"accept","content":{"seats":1e1000001,"slot":"mon-10"}}}`,
		`{"Contact":{"action":"accept"},"contact":{"action":"cancel"}}`,
		`{"contact":{"action":"accept","content":{"name":["Ann"],"email":{"a":1}}}}`,
	}
	for name, tok := range fx.named {
		for i, r := range responses {
			if i%3 == len(name)%3 || i < 5 {
				f.Add(tok, []byte(r))
			}
		}
	}
	f.Add("v4.local.AAAA", []byte(`{}`))
	g := newConfigured(f, "")
	n := 0
	f.Fuzz(func(t *testing.T, token string, responses []byte) {
		rest := `,"requestState":` + tJSON(token)
		if len(responses) > 0 {
			rest = `,"inputResponses":` + string(responses) + rest
		}
		req := tcall{op: "resume", label: "fz", rest: rest}.env()
		out := run(g, req)
		if !utf8.Valid(out) || !json.Valid(out) {
			t.Fatalf("response is not JSON: %q", out)
		}
		if !utf8.ValidString(token) || !utf8.Valid(responses) {
			checkResponse(t, out)
			fx.usable(t, g, false)
			return
		}
		resp := checkResponse(t, out)
		if again := g.Call([]byte(req)); !bytes.Equal(again, out) {
			t.Fatalf("the same resume twice gave different responses:\n%s\n%s", out, again)
		}
		if resp["ok"] == true {
			if !fx.real[token] {
				t.Fatalf("an altered requestState was accepted: %q", token)
			}
			if info := fx.setup[token]; info != nil {
				deep := bugPayloadDepth && 1+jsonDepth(responses) > 16
				checkOutcome(t, g, fx, info, resp, deep)
			}
		}
		n++
		fx.usable(t, g, n%8 == 0)
	})
}

// checkOutcome checks a resume outcome against the state it resumed.
func checkOutcome(t *testing.T, g *Guard, fx *fixture, info *tokenInfo, resp map[string]any, deep bool) {
	t.Helper()
	rnd, _ := strconv.Atoi(fmt.Sprint(resp["round"]))
	switch resp["status"] {
	case "complete":
		answers, _ := resp["answers"].(map[string]any)
		want := append(slices.Clone(info.pending), info.answered...)
		sort.Strings(want)
		if !slices.Equal(keysOf(answers), want) || rnd != info.round {
			t.Fatalf("complete with answers %v (round %d), want keys %v (round %d)", keysOf(answers), rnd, want, info.round)
		}
		for k, a := range answers {
			if k == "summary" || k == "roots" {
				continue
			}
			if !formAnswerOK(k, a) {
				t.Fatalf("accepted an answer the form does not allow: %s: %v", k, a)
			}
		}
	case "declined", "cancelled":
		keys := strs(resp[resp["status"].(string)])
		for _, k := range keys {
			if !slices.Contains(info.pending, k) {
				t.Fatalf("%s names %q, which was not asked", resp["status"], k)
			}
		}
		if len(keys) == 0 || rnd != info.round {
			t.Fatalf("bad %s outcome: %v", resp["status"], resp)
		}
	case "input_required":
		if rnd != info.round+1 {
			t.Fatalf("re-ask in round %d after round %d", rnd, info.round)
		}
		o := checkResponse(t, run(g, tOpen(tokenOf(t, resp))))
		if o["ok"] != true && deep {
			return
		}
		if o["ok"] != true || o["status"] != "open" {
			t.Fatalf("a re-ask sealed a state that does not open: %v", o)
		}
		for _, k := range strs(o["pending"]) {
			if !slices.Contains(info.pending, k) {
				t.Fatalf("re-ask asks %q, which was not pending", k)
			}
		}
		for _, k := range strs(o["answered"]) {
			if !slices.Contains(info.pending, k) && !slices.Contains(info.answered, k) {
				t.Fatalf("re-ask carries an answer to %q, which was never asked", k)
			}
		}
	default:
		t.Fatalf("unknown status: %v", resp)
	}
}

// --- FuzzLint: lint agrees with ask, and its cache changes nothing ---------

var lintModes = [3]struct{ lint, ask [2]string }{
	{[2]string{`{"v":1,"op":"lint","request":`, `}`}, [2]string{``, ``}},
	{[2]string{`{"v":1,"op":"lint","params":`, `}`}, [2]string{`{"method":"elicitation/create","params":`, `}`}},
	{[2]string{`{"v":1,"op":"lint","schema":`, `}`}, [2]string{`{"method":"elicitation/create","params":{"message":"Fill this in","requestedSchema":`, `}}`}},
}

const tAllCaps = `{"elicitation":{"form":{},"url":{}},"sampling":{"tools":{}},"roots":{}}`

func FuzzLint(f *testing.F) {
	for _, s := range []string{
		tContactForm, tConfirmForm, tSeatsForm, tURLRequest, tSampleReq, tRootsReq,
		`{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"x"}}],"maxTokens":5,"tools":[],"includeContext":"thisServer"}}`,
		`{"method":"elicitation/create","params":{"mode":"url","message":"Go","url":"https://x.example/a?email=ann%40example.com#token=1"}}`,
	} {
		f.Add(uint8(0), []byte(s))
		var v map[string]json.RawMessage
		_ = json.Unmarshal([]byte(s), &v)
		f.Add(uint8(1), []byte(v["params"]))
		var p map[string]json.RawMessage
		if json.Unmarshal(v["params"], &p) == nil && p["requestedSchema"] != nil {
			f.Add(uint8(2), []byte(p["requestedSchema"]))
		}
	}
	fx := newFixture(f)
	for _, r := range fx.vecReqs {
		v, err := decodeJSON(r)
		m, _ := v.(map[string]any)
		if err != nil || m["op"] != "lint" {
			continue
		}
		for i, k := range []string{"request", "params", "schema"} {
			if x, ok := m[k]; ok {
				b, _ := json.Marshal(x)
				f.Add(uint8(i), b)
			}
		}
	}
	g := newConfigured(f, `,"maxState":1048576,"maxRequest":16777216`)
	f.Fuzz(func(t *testing.T, mode uint8, doc []byte) {
		m := lintModes[int(mode)%3]
		env := []byte(m.lint[0] + string(doc) + m.lint[1])
		buf := bytes.Clone(env)
		out := bytes.Clone(g.Call(buf))
		resp := checkResponse(t, out)
		// The cache entry made from buf must survive buf being overwritten:
		// a cache hit and a fresh guard give the same bytes.
		for i := range buf {
			buf[i] = 'x'
		}
		if again := run(g, string(env)); !bytes.Equal(again, out) {
			t.Fatalf("lint twice differs:\n%s\n%s", out, again)
		}
		if fresh := run(New(), string(env)); !bytes.Equal(fresh, out) {
			t.Fatalf("lint on a fresh guard differs:\n%s\n%s", out, fresh)
		}
		var dp parser
		if _, err := dp.parse(doc, 1000); resp["ok"] != true || err != nil {
			// Only one whole JSON value can be wrapped into an ask.
			fx.usable(t, g, false)
			return
		}
		fs, _ := resp["findings"].([]any)
		var firstErr map[string]any
		for _, x := range fs {
			fm, _ := x.(map[string]any)
			code, _ := fm["code"].(string)
			msg, _ := fm["message"].(string)
			if !abi(t).documented(code) || msg == "" || (fm["severity"] != SeverityError && fm["severity"] != SeverityWarning) {
				t.Fatalf("bad finding %v", x)
			}
			if firstErr == nil && fm["severity"] == SeverityError {
				firstErr = fm
			}
		}
		// The same request through ask: refused with the first error's code
		// and the same findings, or sealed into a state that opens.
		req := m.ask[0] + string(doc) + m.ask[1]
		ask := tcall{op: "ask", label: "lint", caps: tAllCaps, rest: `,"inputRequests":{"k":` + req + `}`}.env()
		aout := run(g, ask)
		aresp := checkResponse(t, aout)
		if e, _ := aresp["error"].(map[string]any); e != nil && e["code"] == CodeTooDeep {
			// The ask envelope nests the request deeper than lint's.
			fx.usable(t, g, false)
			return
		}
		if firstErr != nil {
			e, _ := aresp["error"].(map[string]any)
			if aresp["ok"] != false || e["code"] != firstErr["code"] {
				t.Fatalf("lint found %v, ask answered %s", firstErr["code"], aout)
			}
			data, _ := e["data"].(map[string]any)
			afs, _ := data["findings"].([]any)
			if len(afs) != len(fs) {
				t.Fatalf("ask and lint differ:\n%s\n%s", out, aout)
			}
			for i := range fs {
				lf := fs[i].(map[string]any)
				af, _ := afs[i].(map[string]any)
				if af["key"] != "k" {
					t.Fatalf("ask finding without its key: %v", af)
				}
				delete(af, "key")
				if fmt.Sprint(lf) != fmt.Sprint(af) {
					t.Fatalf("ask and lint differ:\n%s\n%s", out, aout)
				}
			}
			fx.usable(t, g, false)
			return
		}
		if aresp["ok"] != true {
			if e := aresp["error"].(map[string]any); e["code"] != CodeRequestTooLarge {
				t.Fatalf("lint found no error, ask refused: %s\nlint: %s", aout, out)
			}
			fx.usable(t, g, false)
			return
		}
		result, _ := aresp["result"].(map[string]any)
		sent, _ := result["inputRequests"].(map[string]any)
		// Only method and params are sent, params only when not null.
		v, _ := decodeJSON([]byte(req))
		am, _ := v.(map[string]any)
		asked := map[string]any{"method": am["method"]}
		if am["params"] != nil {
			asked["params"] = am["params"]
		}
		if fmt.Sprint(sent["k"]) != fmt.Sprint(asked) {
			t.Fatalf("ask sent another request than it was given:\n%v\n%v", sent["k"], asked)
		}
		o := run(g, tcall{op: "open", caps: tAllCaps, rest: `,"requestState":` + tJSON(tokenOf(t, aresp))}.env())
		if or := checkResponse(t, o); or["ok"] != true || !slices.Equal(strs(or["pending"]), []string{"k"}) {
			if bugPayloadDepth && 2+jsonDepth([]byte(req)) > 16 {
				fx.usable(t, g, false)
				return
			}
			t.Fatalf("a state ask sealed does not open: %s\nask: %.400s", o, ask)
		}
		fx.usable(t, g, false)
	})
}

// --- the committed seed corpora ---------------------------------------------

// corpusFile renders one input in the `go test fuzz v1` format.
func corpusFile(args ...any) []byte {
	var b bytes.Buffer
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case string:
			fmt.Fprintf(&b, "string(%q)\n", v)
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		case uint8:
			fmt.Fprintf(&b, "byte(%q)\n", v)
		default:
			panic("corpusFile: unsupported type")
		}
	}
	return b.Bytes()
}

// seedCorpus is what -update-corpus writes: for each target, a name and
// its inputs.
func seedCorpus(tb testing.TB) map[string]map[string][]byte {
	fx := newFixture(tb)
	c := map[string]map[string][]byte{"FuzzCall": {}, "FuzzOpen": {}, "FuzzResume": {}, "FuzzLint": {}, "FuzzCanonical": {}}
	call := func(name, req string) { c["FuzzCall"]["seed-"+name] = corpusFile([]byte(req)) }
	call("configure-rotation", tConfigure([]string{tKeyB, tKeyA}, `,"ttl":60,"maxRounds":2,"maxState":512`))
	call("configure-bad-key", tConfigure([]string{tKeyA, "k4.local.AAAA"}, ""))
	call("ask-known-good", fx.goodAsk)
	call("ask-after", tAsk("c1", `{"confirm":`+tConfirmForm+`}`, `,"after":{"operationId":"op","round":2,"answers":{"x":[1,{"y":null}]}}`))
	call("ask-progress", tAsk("c2", `{}`, `,"progress":"`+strings.Repeat("A", 5462)+`"`))
	call("ask-33-keys", tAsk("c3", manyRoots(33), ""))
	call("ask-deep-sampling", tAsk("c4", `{"s":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":`+nested(20)+`}],"maxTokens":1}}}`, ""))
	call("resume-round2", fx.goodRes)
	call("resume-seats", tResume("c5", fx.named["seats"], `{"seats":{"action":"accept","content":{"seats":3,"slot":"tue-14","topics":["api","api"],"day":"2026-02-30"}}}`))
	call("resume-round3", tResume("c6", fx.named["round3"], `{"contact":{"action":"accept","content":{"name":"N","email":"e"}}}`))
	call("open-known-good", fx.goodOpen)
	call("open-escaped-token", tcall{op: "open", rest: `,"requestState":"` + strings.Replace(fx.named["contact"], "v4.local.", `v4\u002elocal.`, 1) + `"`}.env())
	call("lint-schema-secret", `{"v":1,"op":"lint","schema":{"type":"object","properties":{"pin":{"type":"string","title":"Card PIN"}}}}`)
	call("lint-url", `{"v":1,"op":"lint","params":{"mode":"url","message":"m","url":"http://localhost./a?session=1"}}`)
	call("json-surrogates", `{"v":1,"op":"lint","schema":{"title":"\ud83d\ude00\uDBFF\uDFFF"}}`)
	call("json-deep-64", `{"v":1,"op":"lint","schema":`+strings.Repeat("[", 63)+strings.Repeat("]", 63)+`}`)
	call("json-numbers", `{"v":1e0,"op":"ask","now":1.7851968e12,"rand":"`+tRand("n")+`","principal":"a","method":"tools/call","target":"t","arguments":[-0,1E400,0.1e-999999]}`)
	call("paseto-open", `{"v":1,"op":"paseto.open","key":"`+strings.Repeat("0", 64)+`","token":"v4.local.AAAA","implicit":""}`)

	open := func(name, tok string, v int) { c["FuzzOpen"]["seed-"+name] = corpusFile(tok, uint8(v)) }
	for i := range openVariants {
		open("round2-variant-"+strconv.Itoa(i), fx.named["round2"], i)
	}
	open("after", fx.named["after"], 0)
	open("progress", fx.named["progress"], 1)
	open("mixed-expired", fx.named["mixed"], 10)
	tok := fx.named["contact"]
	dot := strings.LastIndexByte(tok, '.')
	open("footer-only", "v4.local."+tok[dot+1:], 0)
	open("no-footer", tok[:dot], 0)
	open("bit-flip", tok[:20]+"B"+tok[21:], 0)
	open("padded", tok+"==", 0)
	open("empty", "", 0)

	resume := func(name, tok, r string) { c["FuzzResume"]["seed-"+name] = corpusFile(tok, []byte(r)) }
	resume("contact-ok", fx.named["contact"], tContactOK)
	resume("contact-extra-field", fx.named["contact"], `{"contact":{"action":"accept","content":{"name":"A","email":"a@b.example","admin":true}}}`)
	resume("contact-bad-email", fx.named["contact"], `{"contact":{"action":"accept","content":{"name":"A","email":"a@"}}}`)
	resume("contact-case-keys", fx.named["contact"], `{"contact":{"action":"accept","content":{"name":"A","Name":"B","email":"a@b.example"}}}`)
	resume("multi-decline-cancel", fx.named["multi"], `{"contact":{"action":"cancel"},"confirm":{"action":"decline"}}`)
	resume("multi-partial", fx.named["multi"], `{"confirm":{"action":"accept","content":{"ok":true}}}`)
	resume("round2-confirm", fx.named["round2"], `{"confirm":{"action":"accept","content":{"ok":false}},"contact":{"action":"decline"}}`)
	resume("round3-exceeded", fx.named["round3"], `{}`)
	resume("after-confirm", fx.named["after"], `{"confirm":{"action":"accept","content":{"ok":true}},"note":{"action":"decline"}}`)
	resume("seats-ok", fx.named["seats"], `{"seats":{"action":"accept","content":{"seats":1.0,"slot":"mon-10","topics":["security"],"size":-0,"day":"2026-08-03"}}}`)
	resume("seats-huge", fx.named["seats"], `{"seats":{"action":"accept","content":{"seats":1e1000001,"slot":"mon-10"}}}`)
	resume("seats-topics-object", fx.named["seats"], `{"seats":{"action":"accept","content":{"seats":1,"slot":"mon-10","topics":[{}]}}}`)
	resume("mixed-all", fx.named["mixed"], `{"calendar":{"action":"accept","content":{"x":1}},"summary":{"role":"assistant","content":[{"type":"text","text":"x"}],"model":"m"},"roots":{"roots":[]}}`)
	resume("mixed-bad-root", fx.named["mixed"], `{"roots":{"roots":[{"uri":"https://x"}]}}`)
	resume("progress-state-only", fx.named["progress"], ``)
	resume("responses-array", fx.named["contact"], `[{"action":"accept"}]`)

	lint := func(name string, mode uint8, doc string) { c["FuzzLint"]["seed-"+name] = corpusFile(mode, []byte(doc)) }
	lint("request-contact", 0, tContactForm)
	lint("request-sampling-tools", 0, `{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"x"}}],"maxTokens":5,"toolChoice":{"mode":"auto"}}}`)
	lint("request-roots-params", 0, `{"method":"roots/list","params":{"_meta":{},"x":1}}`)
	lint("request-deep-sampling", 0, `{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":`+nested(14)+`}],"maxTokens":1}}`)
	lint("params-url-jwt", 1, `{"mode":"url","message":"m","url":"https://x.example/c/eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2lnbmF0dXJl"}`)
	lint("params-form-extra", 1, `{"message":" ","requestedSchema":{"type":"object","properties":{}},"elicitationId":"e"}`)
	lint("schema-seats", 2, `{"type":"object","properties":{"seats":{"type":"integer","minimum":1,"maximum":10,"default":11}}}`)
	lint("schema-enum-names", 2, `{"type":"object","properties":{"c":{"type":"string","enum":["a","b"],"enumNames":["A"]}}}`)
	lint("schema-multi-anyof", 2, `{"type":"object","properties":{"m":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"},{"const":"a","title":"B"}]}}}}`)
	lint("schema-dialect", 2, `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"d":{"type":"string","format":"date-time","default":"2026-07-28T14:30:00Z"}}}`)
	lint("schema-secret-ru", 2, `{"type":"object","properties":{"p":{"type":"string","title":"Пароль"}}}`)
	lint("schema-case-props", 2, `{"type":"object","properties":{"k":{"type":"string"},"\u212a":{"type":"string"}},"required":["k","k"]}`)
	lint("schema-huge-minimum", 2, `{"type":"object","properties":{"n":{"type":"number","minimum":1e400,"maximum":-1e400}}}`)
	lint("schema-not-object", 2, `[]`)

	canon := func(name, doc string) { c["FuzzCanonical"]["seed-"+name] = corpusFile([]byte(doc)) }
	canon("rfc8785-sample", rfc8785Input)
	canon("rfc8785-sorting", rfc8785SortInput)
	canon("numbers", `[1e21,1e-7,0.000001,-0,333333333.33333329,5e-324,1.7976931348623157e308,4.50,2e-3,1E30,-1e-400]`)
	canon("utf16-order", `{"\ue000":1,"\ud83d\ude00":2,"\uffff":3,"\ud800\udc00":4,"\ud7ff":5}`)
	canon("escapes", `"\u0000\u001f\u007f\u2028\/\b\f\n\r\t\"\\"`)
	canon("nested", `{"b":[{"d":1,"c":[true,false,null]}],"a":{}}`)
	canon("out-of-range", `[1.7976931348623159e308]`)
	canon("spaces", " \t\n\r{ \"a\" : [ ] , \"\" : \"\" }\n")
	canon("big-integer", `[9007199254740993,295147905179352825856,-12345678901234567890123]`)
	canon("tiny", `[4.9e-324,2.4e-324,2.5e-324,1e-323]`)
	return c
}

func manyRoots(n int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"r%02d":%s`, i, tRootsReq)
	}
	b.WriteByte('}')
	return b.String()
}

// nested is an object nested n levels deep, as sampling content may be.
func nested(n int) string {
	return strings.Repeat(`{"type":"text","x":`, n-1) + `{"type":"text","text":"deep"}` + strings.Repeat(`}`, n-1)
}

var corpusLine = regexp.MustCompile(`^(string|\[\]byte|byte)\(("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')\)$`)

func TestFuzzSeedCorpus(t *testing.T) {
	want := seedCorpus(t)
	types := map[string][]string{
		"FuzzCall": {"[]byte"}, "FuzzOpen": {"string", "byte"}, "FuzzResume": {"string", "[]byte"},
		"FuzzLint": {"byte", "[]byte"}, "FuzzCanonical": {"[]byte"},
	}
	for target, files := range want {
		dir := filepath.Join("testdata", "fuzz", target)
		if *updateCorpus {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, body := range files {
				if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("%s: %v (run with -update-corpus)", target, err)
		}
		if len(entries) < 10 || len(entries) > 40 {
			t.Errorf("%s: %d seed files, want 10 to 30 (plus fixed crashers)", target, len(entries))
		}
		for name := range files {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Errorf("%s: seed %s missing (run with -update-corpus)", target, name)
			}
		}
		for _, e := range entries {
			raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
			if lines[0] != "go test fuzz v1" || len(lines)-1 != len(types[target]) {
				t.Errorf("%s/%s is not a go test fuzz v1 file for this target", target, e.Name())
				continue
			}
			for i, l := range lines[1:] {
				m := corpusLine.FindStringSubmatch(l)
				if m == nil || m[1] != types[target][i] {
					t.Errorf("%s/%s line %d: %q", target, e.Name(), i+2, l)
				}
			}
		}
	}
}
