package host

// This file generates the shared test vectors under testdata/vectors/.
// Each case is written here with the outcome a person expects ("expect");
// the generator runs the native core, refuses to write a file whose
// outcomes differ from what is expected, and records the exact response
// bytes. TestVectors then runs every file against the native core and
// guard.wasm (and sdk-js runs them in Node) and compares byte for byte.
//
//	go test ./host -run TestVectors -update

import (
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/guest/core"
)

const (
	vecAudience = "vectors.example"
	vecNowMs    = int64(1785196800000) // 2026-07-28T00:00:00Z
)

// vecKeyA is the PASETO v4 test key 707172…8f; vecKeyB another.
var (
	vecKeyA = "k4.local." + base64.RawURLEncoding.EncodeToString(seq(0x70, 32))
	vecKeyB = "k4.local." + base64.RawURLEncoding.EncodeToString(seq(0x20, 32))
)

func seq(start byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

type vecFile struct {
	Description string    `json:"description"`
	Cases       []vecCase `json:"cases"`
}

type vecCase struct {
	Name string `json:"name"`
	// Exactly one of Request (the envelope's exact text), RequestBase64
	// (exact bytes that are not valid UTF-8) or RequestRepeat (a large
	// request built as prefix + fill×count + suffix).
	Request       string     `json:"request,omitempty"`
	RequestBase64 string     `json:"requestBase64,omitempty"`
	RequestRepeat *vecRepeat `json:"requestRepeat,omitempty"`
	Response      string     `json:"response"`
	Expect        vecExpect  `json:"expect"`
}

type vecRepeat struct {
	Prefix string `json:"prefix"`
	Fill   string `json:"fill"`
	Count  int    `json:"count"`
	Suffix string `json:"suffix"`
}

// vecExpect is the part of the outcome a reader can check at a glance.
type vecExpect struct {
	OK     bool   `json:"ok"`
	Status string `json:"status,omitempty"`
	Code   string `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Findings lists lint findings as "severity code field".
	Findings []string `json:"findings,omitempty"`
	// Languages gives, for each form field a policy input calls secret
	// ("request/field"), the language of the term that decided ("" when
	// a keyword did, or when several vocabularies share the word).
	Languages map[string]string `json:"languages,omitempty"`
	// Dropped names what upstream.resume left out of the client's answers
	// (its "dropped" names): fields not asked, members not checked, keys
	// not pending.
	Dropped []string `json:"dropped,omitempty"`
}

func (c *vecCase) bytes() []byte {
	switch {
	case c.RequestBase64 != "":
		b, _ := base64.StdEncoding.DecodeString(c.RequestBase64)
		return b
	case c.RequestRepeat != nil:
		r := c.RequestRepeat
		return []byte(r.Prefix + strings.Repeat(r.Fill, r.Count) + r.Suffix)
	}
	return []byte(c.Request)
}

// gen builds one vector file against a live native core.
type gen struct {
	t     *testing.T
	g     *core.Guard
	file  vecFile
	names map[string]bool
}

func newGen(t *testing.T, desc string) *gen {
	return &gen{t: t, g: core.New(), file: vecFile{Description: desc}, names: map[string]bool{}}
}

// run adds a case and returns the parsed response.
func (v *gen) run(c vecCase) map[string]any {
	v.t.Helper()
	if v.names[c.Name] {
		v.t.Fatalf("duplicate case name %q", c.Name)
	}
	v.names[c.Name] = true
	out := v.g.Call(c.bytes())
	c.Response = string(out)
	var resp map[string]any
	if err := json.Unmarshal(out, &resp); err != nil {
		v.t.Fatalf("%s: response is not JSON: %v\n%s", c.Name, err, out)
	}
	got := expectOf(resp)
	if !equalExpect(got, c.Expect) {
		v.t.Fatalf("%s: expected %+v, got %+v\n%s", c.Name, c.Expect, got, out)
	}
	v.file.Cases = append(v.file.Cases, c)
	return resp
}

func expectOf(resp map[string]any) vecExpect {
	e := vecExpect{}
	e.OK, _ = resp["ok"].(bool)
	e.Status, _ = resp["status"].(string)
	if er, ok := resp["error"].(map[string]any); ok {
		e.Code, _ = er["code"].(string)
		e.Reason, _ = er["reason"].(string)
	}
	if fs, ok := resp["findings"].([]any); ok {
		for _, f := range fs {
			m, _ := f.(map[string]any)
			field, _ := m["field"].(string)
			e.Findings = append(e.Findings, strings.TrimSpace(fmt.Sprintf("%v %v %s", m["severity"], m["code"], field)))
		}
	}
	if d, ok := resp["dropped"].(map[string]any); ok {
		names, _ := d["names"].([]any)
		for _, n := range names {
			e.Dropped = append(e.Dropped, fmt.Sprint(n))
		}
	}
	in, _ := resp["input"].(map[string]any)
	reqs, _ := in["inputs"].(map[string]any)
	for key, r := range reqs {
		r, _ := r.(map[string]any)
		fields, _ := r["fields"].(map[string]any)
		for name, c := range fields {
			c, _ := c.(map[string]any)
			if class, _ := c["class"].(string); class == "" {
				continue
			}
			if e.Languages == nil {
				e.Languages = map[string]string{}
			}
			e.Languages[key+"/"+name], _ = c["language"].(string)
		}
	}
	return e
}

func equalExpect(a, b vecExpect) bool {
	if a.OK != b.OK || a.Status != b.Status || a.Code != b.Code || a.Reason != b.Reason || len(a.Findings) != len(b.Findings) || !maps.Equal(a.Languages, b.Languages) ||
		!slices.Equal(a.Dropped, b.Dropped) {
		return false
	}
	for i := range a.Findings {
		if a.Findings[i] != b.Findings[i] {
			return false
		}
	}
	return true
}

func (v *gen) req(name string, env string, want vecExpect) map[string]any {
	v.t.Helper()
	return v.run(vecCase{Name: name, Request: env, Expect: want})
}

func (v *gen) write(path string) {
	v.t.Helper()
	b, err := json.MarshalIndent(v.file, "", "  ")
	if err != nil {
		v.t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		v.t.Fatal(err)
	}
}

func ok(status string) vecExpect          { return vecExpect{OK: true, Status: status} }
func langs(l map[string]string) vecExpect { return vecExpect{OK: true, Languages: l} }
func fail(code string) vecExpect          { return vecExpect{Code: code} }
func refused(reason string) vecExpect {
	return vecExpect{Code: core.CodePolicyDenied, Reason: reason}
}
func stateFail(reason string) vecExpect {
	return vecExpect{Code: core.CodeStateInvalid, Reason: reason}
}

// dropping is ok(status) with the names upstream.resume left out.
func dropping(status string, names ...string) vecExpect {
	return vecExpect{OK: true, Status: status, Dropped: names}
}

// vecRand is 48 deterministic "random" bytes per label.
func vecRand(label string) string {
	h := sha512.Sum512([]byte(label))
	return base64.RawURLEncoding.EncodeToString(h[:48])
}

func configure(keys []string, extra string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = `"` + k + `"`
	}
	return `{"v":1,"op":"configure","keys":[` + strings.Join(q, ",") + `],"audience":"` + vecAudience + `"` + extra + `}`
}

// call describes the bindings of an ask or resume envelope.
type call struct {
	op, label, principal, method, target, args, caps string
	nowMs                                            int64
	rest                                             string
}

func (c call) env() string {
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
		c.caps = `{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}}`
	}
	if c.nowMs == 0 {
		c.nowMs = vecNowMs
	}
	s := fmt.Sprintf(`{"v":1,"op":%q,"now":%d,"rand":%q,"principal":%q,"method":%q,"target":%q,"arguments":%s,"capabilities":%s`,
		c.op, c.nowMs, vecRand(c.label), c.principal, c.method, c.target, c.args, c.caps)
	return s + c.rest + "}"
}

func tokenOf(t *testing.T, resp map[string]any) string {
	t.Helper()
	r, _ := resp["result"].(map[string]any)
	s, _ := r["requestState"].(string)
	if s == "" {
		t.Fatalf("no requestState in %v", resp)
	}
	return s
}

func resumeRest(token, responses string) string {
	r := `,"requestState":` + jsonString(token)
	if responses != "" {
		r = `,"inputResponses":` + responses + r
	}
	return r
}

func jsonString(s string) string { return string(core.AppendJSONString(nil, s)) }

const (
	contactForm = `{"method":"elicitation/create","params":{"mode":"form","message":"Who should we book the demo for?","requestedSchema":{"type":"object","properties":{"name":{"type":"string","title":"Your name","minLength":1},"email":{"type":"string","title":"Work email","format":"email"}},"required":["name","email"]}}}`
	confirmForm = `{"method":"elicitation/create","params":{"message":"Book it?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean","title":"Confirm","default":false}},"required":["ok"]}}}`
	seatsForm   = `{"method":"elicitation/create","params":{"mode":"form","message":"How many seats?","requestedSchema":{"type":"object","properties":{"seats":{"type":"integer","minimum":1,"maximum":10},"size":{"type":"number"},"slot":{"type":"string","title":"Time slot","oneOf":[{"const":"mon-10","title":"Monday 10:00"},{"const":"tue-14","title":"Tuesday 14:00"}]},"topics":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string","enum":["pricing","security","api"]}},"day":{"type":"string","format":"date"}},"required":["seats","slot"]}}}`
	urlRequest  = `{"method":"elicitation/create","params":{"mode":"url","message":"Connect your calendar on our site.","url":"https://crm.example.com/connect/7f3a"}}`
	sampleReq   = `{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"Summarise the account"}}],"maxTokens":200}}`
	rootsReq    = `{"method":"roots/list"}`
)

func askRest(reqs string) string { return `,"inputRequests":` + reqs }

func TestVectors(t *testing.T) {
	dir := filepath.Join("..", "testdata", "vectors")
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		genAsk(t).write(filepath.Join(dir, "ask.json"))
		genResume(t).write(filepath.Join(dir, "resume.json"))
		genOpen(t).write(filepath.Join(dir, "open.json"))
		genLint(t).write(filepath.Join(dir, "lint.json"))
		genBadInput(t).write(filepath.Join(dir, "bad-input.json"))
		genPaseto(t).write(filepath.Join(dir, "paseto.json"))
		genUpstream(t).write(filepath.Join(dir, "upstream.json"))
		genDigest(t).write(filepath.Join(dir, "digest.json"))
		genPolicyInput(t).write(filepath.Join(dir, "policy-input.json"))
		genPolicyDecision(t).write(filepath.Join(dir, "policy-decision.json"))
		genApproval(t).write(filepath.Join(dir, "approval.json"))
	}
	runVectorFiles(t, dir)
}

func genAsk(t *testing.T) *gen {
	v := newGen(t, "Ask: lint, capability checks and sealing. With the fixed key, clock and random bytes every requestState is exact.")
	v.req("ask before configure", call{op: "ask", label: "a0", rest: askRest(`{"contact":` + contactForm + `}`)}.env(), fail(core.CodeNotConfigured))
	v.req("configure", configure([]string{vecKeyA}, ""), ok(""))
	v.req("form", call{op: "ask", label: "a1", rest: askRest(`{"contact":` + contactForm + `}`)}.env(), ok("input_required"))
	v.req("form without mode", call{op: "ask", label: "a2", rest: askRest(`{"confirm":` + confirmForm + `}`)}.env(), ok("input_required"))
	v.req("form and url together", call{op: "ask", label: "a3", rest: askRest(`{"contact":` + contactForm + `,"calendar":` + urlRequest + `}`)}.env(), ok("input_required"))
	v.req("sampling and roots", call{op: "ask", label: "a4", rest: askRest(`{"summary":` + sampleReq + `,"roots":` + rootsReq + `}`)}.env(), ok("input_required"))
	v.req("state only (load shedding)", call{op: "ask", label: "a5", rest: `,"progress":"c3RlcC0y"`}.env(), ok("input_required"))
	v.req("with progress bytes", call{op: "ask", label: "a6", rest: askRest(`{"contact":`+contactForm+`}`) + `,"progress":"eyJzdGVwIjoxfQ"`}.env(), ok("input_required"))
	v.req("prompts/get", call{op: "ask", label: "a7", method: "prompts/get", target: "greeting", args: `{"lang":"en"}`, rest: askRest(`{"confirm":` + confirmForm + `}`)}.env(), ok("input_required"))
	v.req("resources/read without arguments", call{op: "ask", label: "a8", method: "resources/read", target: "crm://accounts/42", args: "null", rest: askRest(`{"confirm":` + confirmForm + `}`)}.env(), ok("input_required"))
	v.req("after a completed round keeps the operation id", call{op: "ask", label: "a9", rest: askRest(`{"confirm":`+confirmForm+`}`) + `,"after":{"operationId":"AAECAwQFBgcICQoLDA0ODw","round":1,"answers":{"contact":{"action":"accept","content":{"name":"Ann","email":"ann@example.com"}}}}`}.env(), ok("input_required"))
	v.req("after the last round", call{op: "ask", label: "a10", rest: askRest(`{"confirm":`+confirmForm+`}`) + `,"after":{"operationId":"AAECAwQFBgcICQoLDA0ODw","round":3,"answers":{}}`}.env(), fail(core.CodeRoundsExceeded))
	v.req("form without elicitation capability", call{op: "ask", label: "c1", caps: `{}`, rest: askRest(`{"contact":` + contactForm + `}`)}.env(), fail(core.CodeCapabilityMissing))
	v.req("form when the client declared url only", call{op: "ask", label: "c2", caps: `{"elicitation":{"url":{}}}`, rest: askRest(`{"contact":` + contactForm + `}`)}.env(), fail(core.CodeCapabilityMissing))
	v.req("url when the client declared elicitation {} (form only)", call{op: "ask", label: "c3", caps: `{"elicitation":{}}`, rest: askRest(`{"calendar":` + urlRequest + `}`)}.env(), fail(core.CodeCapabilityMissing))
	v.req("form with elicitation {}", call{op: "ask", label: "c4", caps: `{"elicitation":{}}`, rest: askRest(`{"contact":` + contactForm + `}`)}.env(), ok("input_required"))
	v.req("sampling with tools without sampling.tools", call{op: "ask", label: "c5", caps: `{"sampling":{}}`, rest: askRest(`{"s":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"x"}}],"maxTokens":5,"tools":[]}}}`)}.env(), fail(core.CodeCapabilityMissing))
	v.req("roots without roots capability", call{op: "ask", label: "c6", caps: `{"elicitation":{}}`, rest: askRest(`{"r":` + rootsReq + `}`)}.env(), fail(core.CodeCapabilityMissing))
	v.req("capabilities absent", call{op: "ask", label: "c7", caps: "null", rest: askRest(`{"contact":` + contactForm + `}`)}.env(), fail(core.CodeCapabilityMissing))
	v.req("secret field refused", call{op: "ask", label: "s1", rest: askRest(`{"login":{"method":"elicitation/create","params":{"message":"Sign in","requestedSchema":{"type":"object","properties":{"user":{"type":"string"},"password":{"type":"string","format":"password"}}}}}}`)}.env(), fail(core.CodeFormSecretField))
	v.req("API key in Spanish refused", call{op: "ask", label: "s2", rest: askRest(`{"k":{"method":"elicitation/create","params":{"message":"Configura","requestedSchema":{"type":"object","properties":{"clave":{"type":"string","title":"Clave de API"}}}}}}`)}.env(), fail(core.CodeFormSecretField))
	v.req("nested object refused", call{op: "ask", label: "s3", rest: askRest(`{"k":{"method":"elicitation/create","params":{"message":"Address","requestedSchema":{"type":"object","properties":{"address":{"type":"object","properties":{"city":{"type":"string"}}}}}}}}`)}.env(), fail(core.CodeFormNotFlat))
	v.req("unknown input method", call{op: "ask", label: "s4", rest: askRest(`{"k":{"method":"tools/call","params":{}}}`)}.env(), fail(core.CodeInputUnknownMethod))
	v.req("url over http to a public host", call{op: "ask", label: "s5", rest: askRest(`{"k":{"method":"elicitation/create","params":{"mode":"url","message":"Go","url":"http://crm.example.com/connect"}}}`)}.env(), fail(core.CodeURLNotHTTPS))
	v.req("method that cannot ask", call{op: "ask", label: "m1", method: "tools/list", rest: askRest(`{"contact":` + contactForm + `}`)}.env(), fail(core.CodeMethodNotAllowed))
	v.req("missing rand", `{"v":1,"op":"ask","now":1785196800000,"principal":"alice","method":"tools/call","target":"t","inputRequests":{}}`, fail(core.CodeRequestNoEntropy))
	v.req("missing principal", `{"v":1,"op":"ask","now":1785196800000,"rand":"`+vecRand("m2")+`","method":"tools/call","target":"t","inputRequests":{}}`, fail(core.CodeRequestMalformed))
	v.req("keys differing only in case", call{op: "ask", label: "m3", rest: askRest(`{"contact":` + contactForm + `,"Contact":` + confirmForm + `}`)}.env(), fail(core.CodeCaseDuplicateKey))
	v.req("custom ttl and rounds", call{op: "ask", label: "m4", rest: askRest(`{"confirm":`+confirmForm+`}`) + `,"ttl":60,"maxRounds":2`}.env(), ok("input_required"))
	// Limits only narrow the guard's own (300 s, 3 rounds): the state's
	// expiry shows which TTL it was sealed with.
	v.req("a ttl above the guard's own seals with the guard's", call{op: "ask", label: "m6", rest: askRest(`{"confirm":`+confirmForm+`}`) + `,"ttl":600,"maxRounds":50`}.env(), ok("input_required"))
	v.req("the policy's limits narrow", call{op: "ask", label: "m7", rest: askRest(`{"confirm":`+confirmForm+`}`) + `,"policy":{"allow":true,"ttl":60,"maxRounds":1}`}.env(), ok("input_required"))
	v.req("the narrowest of the caller's and the policy's ttl counts", call{op: "ask", label: "m8", rest: askRest(`{"confirm":`+confirmForm+`}`) + `,"ttl":120,"policy":{"document":{"allow":true,"deny":[],"max_rounds":9,"ttl_seconds":86401,"rules":["default"]}}`}.env(), ok("input_required"))
	v.req("a policy ttl of 0 is the guard's own", call{op: "ask", label: "m9", rest: askRest(`{"confirm":`+confirmForm+`}`) + `,"policy":{"allow":true,"ttl":0}`}.env(), ok("input_required"))
	v.req("a policy's refusal, before the form is read", call{op: "ask", label: "m10", rest: askRest(`{"confirm":7}`) + `,"policy":{"allow":false,"code":"policy.field_not_allowed","rule":"tools.book_demo_call","message":"no","denials":[{"code":"policy.field_not_allowed","rule":"tools.book_demo_call","key":"confirm","field":"ok","message":"no"}]}`}.env(), refused("policy.field_not_allowed (tools.book_demo_call)"))
	v.req("an allow with a denial refuses", call{op: "ask", label: "m11", rest: askRest(`{"confirm":`+confirmForm+`}`) + `,"policy":{"allow":true,"denials":[{"code":"x.no","rule":"","key":"","field":"","message":"no"}]}`}.env(), refused("x.no"))
	v.req("a policy that gave no decision refuses", call{op: "ask", label: "m12", rest: askRest(`{"confirm":`+confirmForm+`}`) + `,"policy":null`}.env(), refused("policy.undecided"))
	v.req("a decision document without limits refuses", call{op: "ask", label: "m13", rest: askRest(`{"confirm":`+confirmForm+`}`) + `,"policy":{"document":{"allow":true,"deny":[]}}`}.env(), refused("policy.undecided"))
	v.req("a decision document that denies", call{op: "ask", label: "m14", rest: askRest(`{"confirm":`+confirmForm+`}`) + `,"policy":{"document":{"allow":false,"deny":[{"code":"policy.class_forbidden","rule":"forbidden_classes","key":"confirm","field":"ok","message":"no"}],"max_rounds":3,"ttl_seconds":60,"rules":[]}}`}.env(), refused("policy.class_forbidden (forbidden_classes)"))
	v.req("configure small maxState", configure([]string{vecKeyA}, `,"maxState":600`), ok(""))
	v.req("state over maxState", call{op: "ask", label: "m5", rest: askRest(`{"contact":` + contactForm + `,"confirm":` + confirmForm + `}`)}.env(), fail(core.CodeRequestTooLarge))
	return v
}

func genResume(t *testing.T) *gen {
	v := newGen(t, "Resume: every row of the outcome table, from states sealed in this file.")
	v.req("configure", configure([]string{vecKeyA}, ""), ok(""))
	ask := func(name, label, reqs string) string {
		return tokenOf(t, v.req(name, call{op: "ask", label: label, rest: askRest(reqs)}.env(), ok("input_required")))
	}
	resume := func(name, label, tok, responses string, want vecExpect) map[string]any {
		return v.req(name, call{op: "resume", label: label, rest: resumeRest(tok, responses)}.env(), want)
	}
	t1 := ask("ask contact", "r1", `{"contact":`+contactForm+`}`)
	resume("accept valid → complete", "r2", t1, `{"contact":{"action":"accept","content":{"name":"Ann Lee","email":"ann@example.com"}}}`, ok("complete"))
	resume("same retry again → same complete (single use is the ledger's job)", "r3", t1, `{"contact":{"action":"accept","content":{"email":"ann@example.com","name":"Ann Lee"}}}`, ok("complete"))
	r := resume("accept with invalid email → re-ask naming the field", "r4", t1, `{"contact":{"action":"accept","content":{"name":"Ann Lee","email":"ann-at-example"}}}`, ok("input_required"))
	t2 := tokenOf(t, r)
	resume("round 2 valid → complete", "r5", t2, `{"contact":{"action":"accept","content":{"name":"Ann Lee","email":"ann@example.com"}}}`, ok("complete"))
	r = resume("round 2 still invalid → round 3", "r6", t2, `{"contact":{"action":"accept","content":{"name":"","email":"ann@"}}}`, ok("input_required"))
	t3 := tokenOf(t, r)
	resume("round 3 still invalid → rounds exceeded", "r7", t3, `{"contact":{"action":"accept","content":{"name":"Ann"}}}`, fail(core.CodeRoundsExceeded))
	resume("accept without email → re-ask", "r8", t1, `{"contact":{"action":"accept","content":{"name":"Ann Lee"}}}`, ok("input_required"))
	resume("accept without content → re-ask both", "r9", t1, `{"contact":{"action":"accept"}}`, ok("input_required"))
	resume("no response for the key → ask again", "r10", t1, `{}`, ok("input_required"))
	resume("no inputResponses at all → ask again", "r11", t1, ``, ok("input_required"))
	resume("decline → declined", "r12", t1, `{"contact":{"action":"decline"}}`, ok("declined"))
	resume("cancel → cancelled", "r13", t1, `{"contact":{"action":"cancel"}}`, ok("cancelled"))
	resume("extra unknown response keys ignored", "r14", t1, `{"contact":{"action":"accept","content":{"name":"Ann","email":"ann@example.com"}},"other":{"action":"accept"}}`, ok("complete"))
	resume("unasked content fields dropped", "r15", t1, `{"contact":{"action":"accept","content":{"name":"Ann","email":"ann@example.com","role":"admin"}}}`, ok("complete"))
	resume("unknown action → malformed", "r16", t1, `{"contact":{"action":"maybe"}}`, fail(core.CodeResponsesMalformed))
	resume("response not an object → malformed", "r17", t1, `{"contact":"yes"}`, fail(core.CodeResponsesMalformed))
	resume("inputResponses not an object → malformed", "r18", t1, `[1]`, fail(core.CodeResponsesMalformed))
	resume("content nested deeper than a form", "r19", t1, `{"contact":{"action":"accept","content":{"name":{"first":"Ann"},"email":"ann@example.com"}}}`, fail(core.CodeTooDeep))
	resume("content keys differing only in case", "r20", t1, `{"contact":{"action":"accept","content":{"email":"a@example.com","Email":"b@example.com","name":"A"}}}`, fail(core.CodeCaseDuplicateKey))
	resume("keys of one response differing only in case (decline and ACTION accept)", "r20b", t1, `{"contact":{"action":"decline","ACTION":"accept","content":{"email":"nope"}}}`, fail(core.CodeCaseDuplicateKey))
	resume("response keys differing only in case", "r21", t1, `{"contact":{"action":"decline"},"CONTACT":{"action":"accept"}}`, fail(core.CodeCaseDuplicateKey))

	ts := ask("ask seats", "r30", `{"seats":`+seatsForm+`}`)
	resume("string where a number belongs → re-ask", "r31", ts, `{"seats":{"action":"accept","content":{"seats":"3","slot":"mon-10"}}}`, ok("input_required"))
	resume("number above maximum → re-ask", "r32", ts, `{"seats":{"action":"accept","content":{"seats":11,"slot":"mon-10"}}}`, ok("input_required"))
	resume("huge number → out of range error", "r33", ts, `{"seats":{"action":"accept","content":{"seats":1e1000001,"slot":"mon-10"}}}`, fail(core.CodeNumberOutOfRange))
	resume("fraction for an integer → re-ask", "r34", ts, `{"seats":{"action":"accept","content":{"seats":2.5,"slot":"mon-10"}}}`, ok("input_required"))
	resume("non-integer number accepted for number", "r35", ts, `{"seats":{"action":"accept","content":{"seats":2,"size":2.75,"slot":"mon-10"}}}`, ok("complete"))
	resume("titled enum outside options → re-ask", "r36", ts, `{"seats":{"action":"accept","content":{"seats":2,"slot":"wed-9"}}}`, ok("input_required"))
	resume("multi-select too many → re-ask", "r37", ts, `{"seats":{"action":"accept","content":{"seats":2,"slot":"tue-14","topics":["pricing","security","api"]}}}`, ok("input_required"))
	resume("multi-select valid", "r38", ts, `{"seats":{"action":"accept","content":{"seats":2,"slot":"tue-14","topics":["api"],"day":"2026-08-03"}}}`, ok("complete"))
	resume("bad date format → re-ask", "r39", ts, `{"seats":{"action":"accept","content":{"seats":2,"slot":"tue-14","day":"03/08/2026"}}}`, ok("input_required"))
	resume("multi-select holding an object", "r40", ts, `{"seats":{"action":"accept","content":{"seats":2,"slot":"tue-14","topics":[{"a":1}]}}}`, fail(core.CodeTooDeep))

	tm := ask("ask contact and confirm", "r50", `{"contact":`+contactForm+`,"confirm":`+confirmForm+`}`)
	resume("both valid → complete with both", "r51", tm, `{"contact":{"action":"accept","content":{"name":"Ann","email":"ann@example.com"}},"confirm":{"action":"accept","content":{"ok":true}}}`, ok("complete"))
	resume("one declined, one valid → declined", "r52", tm, `{"contact":{"action":"accept","content":{"name":"Ann","email":"ann@example.com"}},"confirm":{"action":"decline"}}`, ok("declined"))
	resume("decline beats cancel", "r53", tm, `{"contact":{"action":"cancel"},"confirm":{"action":"decline"}}`, ok("declined"))
	resume("one cancelled, one valid → cancelled", "r54", tm, `{"contact":{"action":"cancel"},"confirm":{"action":"accept","content":{"ok":true}}}`, ok("cancelled"))
	r = resume("one valid, one missing → ask only the missing one", "r55", tm, `{"contact":{"action":"accept","content":{"name":"Ann","email":"ann@example.com"}}}`, ok("input_required"))
	tm2 := tokenOf(t, r)
	resume("answer carried from round 1 → complete with the union", "r56", tm2, `{"confirm":{"action":"accept","content":{"ok":true}}}`, ok("complete"))
	resume("answering an already answered key again is ignored", "r57", tm2, `{"contact":{"action":"decline"},"confirm":{"action":"accept","content":{"ok":true}}}`, ok("complete"))

	tu := ask("ask url", "r60", `{"calendar":`+urlRequest+`}`)
	resume("url accept → consented", "r61", tu, `{"calendar":{"action":"accept"}}`, ok("complete"))
	resume("url decline", "r62", tu, `{"calendar":{"action":"decline"}}`, ok("declined"))
	tsr := ask("ask sampling and roots", "r70", `{"summary":`+sampleReq+`,"roots":`+rootsReq+`}`)
	resume("sampling and roots answered", "r71", tsr, `{"summary":{"role":"assistant","content":{"type":"text","text":"Fine."},"model":"m1","stopReason":"endTurn"},"roots":{"roots":[{"uri":"file:///home/ann/project","name":"project"}]}}`, ok("complete"))
	resume("sampling result without model", "r72", tsr, `{"summary":{"role":"assistant","content":{"type":"text","text":"Fine."}},"roots":{"roots":[]}}`, fail(core.CodeResponsesMalformed))
	resume("roots with a non-file uri", "r73", tsr, `{"summary":{"role":"assistant","content":{"type":"text","text":"x"},"model":"m"},"roots":{"roots":[{"uri":"https://x"}]}}`, fail(core.CodeResponsesMalformed))

	tp := tokenOf(t, v.req("ask with progress", call{op: "ask", label: "r80", rest: askRest(`{"confirm":`+confirmForm+`}`) + `,"progress":"eyJzdGVwIjoxfQ"`}.env(), ok("input_required")))
	resume("progress comes back", "r81", tp, `{"confirm":{"action":"accept","content":{"ok":false}}}`, ok("complete"))
	r = resume("re-ask keeps progress", "r82", tp, `{}`, ok("input_required"))
	resume("progress after a re-ask", "r83", tokenOf(t, r), `{"confirm":{"action":"accept","content":{"ok":true}}}`, ok("complete"))
	resume("no elicitation capability on the re-ask", "r84", tp, `{}`, ok("input_required"))
	v.req("re-ask refused when the retry dropped the capability", call{op: "resume", label: "r85", caps: `{}`, rest: resumeRest(tp, `{}`)}.env(), fail(core.CodeCapabilityMissing))
	v.req("resume with a round limit of 1", call{op: "resume", label: "r86", rest: resumeRest(tp, `{}`) + `,"maxRounds":1`}.env(), fail(core.CodeRoundsExceeded))
	v.req("resume with a policy round limit of 1", call{op: "resume", label: "r88", rest: resumeRest(tp, `{}`) + `,"policy":{"allow":true,"maxRounds":1}`}.env(), fail(core.CodeRoundsExceeded))
	v.req("a policy's refusal on resume, before the state is opened", call{op: "resume", label: "r90", rest: resumeRest("v4.local.nothing", `{}`) + `,"policy":{"allow":false,"code":"policy.revoked","message":"revoked"}`}.env(), refused("policy.revoked"))
	v.req("a policy round limit above the guard's keeps the guard's", call{op: "resume", label: "r89", rest: resumeRest(tp, `{}`) + `,"policy":{"allow":true,"maxRounds":100,"ttl":30}`}.env(), ok("input_required"))
	v.req("resume without requestState", call{op: "resume", label: "r87", rest: `,"inputResponses":{}`}.env(), fail(core.CodeRequestMalformed))
	return v
}

func genOpen(t *testing.T) *gen {
	v := newGen(t, "Open: a requestState opens only for its principal, method, target, arguments and audience, under a listed key, before it expires; every refusal is the same error with an internal reason.")
	v.req("configure", configure([]string{vecKeyA}, ""), ok(""))
	tok := tokenOf(t, v.req("ask", call{op: "ask", label: "o1", rest: askRest(`{"contact":` + contactForm + `}`)}.env(), ok("input_required")))
	open := func(name string, c call, tk string, want vecExpect) {
		c.op = "open"
		c.label = "unused"
		c.rest = `,"requestState":` + jsonString(tk)
		v.req(name, c.env(), want)
	}
	open("intact", call{}, tok, ok("open"))
	open("arguments reordered and re-spaced (RFC 8785)", call{args: `{ "topic" : "pricing" }`}, tok, ok("open"))
	open("other principal", call{principal: "mallory"}, tok, stateFail(core.ReasonPrincipal))
	open("other target", call{target: "delete_account"}, tok, stateFail(core.ReasonTarget))
	open("other method", call{method: "prompts/get"}, tok, stateFail(core.ReasonMethod))
	open("other arguments", call{args: `{"topic":"refunds"}`}, tok, stateFail(core.ReasonArguments))
	open("one second before expiry", call{nowMs: vecNowMs + 299_000}, tok, ok("open"))
	open("at expiry", call{nowMs: vecNowMs + 300_000}, tok, stateFail(core.ReasonExpired))
	open("issued in the future", call{nowMs: vecNowMs - 120_000}, tok, stateFail(core.ReasonNotYetValid))
	body := strings.TrimPrefix(tok, "v4.local.")
	dot := strings.IndexByte(body, '.')
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	open("nonce changed", call{}, "v4.local."+flip(body, 3), stateFail(core.ReasonTampered))
	open("ciphertext changed", call{}, "v4.local."+flip(body, dot/2), stateFail(core.ReasonTampered))
	open("tag changed", call{}, "v4.local."+flip(body, dot-3), stateFail(core.ReasonTampered))
	open("footer changed", call{}, "v4.local."+flip(body, dot+5), stateFail(core.ReasonTampered))
	open("suffix appended to the footer", call{}, tok+"-TAMPERED", stateFail(core.ReasonTampered))
	open("footer removed", call{}, "v4.local."+body[:dot], stateFail(core.ReasonTampered))
	open("truncated", call{}, tok[:len(tok)/2], stateFail(core.ReasonTampered))
	open("not a token", call{}, "eyJzdGF0ZSI6MX0", stateFail(core.ReasonMalformed))
	open("v4.public header", call{}, "v4.public."+body, stateFail(core.ReasonMalformed))
	open("padding added", call{}, "v4.local."+body[:dot]+"=="+body[dot:], stateFail(core.ReasonTampered))
	open("oversize", call{}, tok+strings.Repeat("A", 8192), stateFail(core.ReasonOversize))
	v.req("configure another key", configure([]string{vecKeyB}, ""), ok(""))
	open("removed key", call{}, tok, stateFail(core.ReasonUnknownKey))
	v.req("configure rotation: new primary, old still listed", configure([]string{vecKeyB, vecKeyA}, ""), ok(""))
	open("old key still opens", call{}, tok, ok("open"))
	v.req("configure another audience", `{"v":1,"op":"configure","keys":["`+vecKeyA+`"],"audience":"other.example"}`, ok(""))
	open("other audience", call{}, tok, stateFail(core.ReasonAudience))
	return v
}

func genLint(t *testing.T) *gen {
	v := newGen(t, "Lint: the 2026-07-28 form subset, the secret rule and URL-mode rules. Lint needs no configuration.")
	lint := func(name, body string, want vecExpect) { v.req(name, `{"v":1,"op":"lint",`+body+`}`, want) }
	found := func(fs []string) vecExpect { return vecExpect{OK: true, Findings: fs} }
	schema := func(name, s string, fs ...string) { lint(name, `"schema":`+s, found(fs)) }
	params := func(name, p string, fs ...string) { lint(name, `"params":`+p, found(fs)) }
	request := func(name, r string, fs ...string) { lint(name, `"request":`+r, found(fs)) }
	schema("clean contact form", `{"type":"object","properties":{"name":{"type":"string","title":"Name"},"email":{"type":"string","format":"email"}},"required":["name","email"]}`)
	schema("every primitive kind", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"s":{"type":"string","minLength":1,"maxLength":9,"default":"abc"},"n":{"type":"number","minimum":0,"maximum":1.5,"default":1},"i":{"type":"integer","default":2},"b":{"type":"boolean","default":true},"e":{"type":"string","enum":["x","y"],"default":"x"},"t":{"type":"string","oneOf":[{"const":"a","title":"A"}]},"m":{"type":"array","items":{"type":"string","enum":["p","q"]},"default":["p"]},"tm":{"type":"array","minItems":1,"items":{"anyOf":[{"const":"p","title":"P"}]}},"d":{"type":"string","format":"date-time"},"u":{"type":"string","format":"uri"}}}`)
	schema("legacy enumNames is a warning", `{"type":"object","properties":{"c":{"type":"string","enum":["r","g"],"enumNames":["Red","Green"]}}}`, "warning mrtr.form.legacy_enum_names c")
	schema("nested object", `{"type":"object","properties":{"addr":{"type":"object","properties":{"city":{"type":"string"}}}}}`, "error mrtr.form.not_flat addr")
	schema("array of objects", `{"type":"object","properties":{"people":{"type":"array","items":{"type":"object"}}}}`, "error mrtr.form.not_flat people")
	schema("type union", `{"type":"object","properties":{"x":{"type":["string","null"]}}}`, "error mrtr.form.unsupported_type x")
	schema("pattern is outside the subset", `{"type":"object","properties":{"zip":{"type":"string","pattern":"^[0-9]{5}$"}}}`, "error mrtr.form.unsupported_keyword zip")
	schema("unsupported format", `{"type":"object","properties":{"ip":{"type":"string","format":"ipv4"}}}`, "error mrtr.form.unsupported_format ip")
	schema("required names a missing property", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","b"]}`, "error mrtr.form.required_unknown b")
	schema("default of the wrong type", `{"type":"object","properties":{"n":{"type":"integer","default":"five"}}}`, "error mrtr.form.invalid_default n")
	schema("default outside the enum", `{"type":"object","properties":{"c":{"type":"string","enum":["r","g"],"default":"b"}}}`, "error mrtr.form.invalid_default c")
	schema("default that is not an email", `{"type":"object","properties":{"e":{"type":"string","format":"email","default":"nobody"}}}`, "error mrtr.form.invalid_default e")
	schema("minimum greater than maximum", `{"type":"object","properties":{"n":{"type":"number","minimum":5,"maximum":1}}}`, "error mrtr.form.invalid_keyword_value n")
	schema("huge minimum", `{"type":"object","properties":{"n":{"type":"number","minimum":1e1000001}}}`, "error mrtr.form.invalid_keyword_value n")
	schema("minimum as a string", `{"type":"object","properties":{"n":{"type":"number","minimum":"5"}}}`, "error mrtr.form.invalid_keyword_value n")
	schema("root is not an object schema", `{"type":"array","items":{"type":"string"}}`, "error mrtr.form.invalid_schema", "error mrtr.form.unsupported_keyword", "error mrtr.form.invalid_schema")
	schema("unknown dialect", `{"$schema":"https://example.com/my-schema","type":"object","properties":{}}`, "error mrtr.form.schema_dialect")
	schema("$ref is outside the subset", `{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`, "error mrtr.form.unsupported_keyword a")
	schema("properties differing only in case", `{"type":"object","properties":{"email":{"type":"string"},"Email":{"type":"string"}}}`, "error mrtr.form.invalid_schema")
	for _, f := range []struct{ name, prop string }{
		{"password (format)", `"p":{"type":"string","format":"password"}`},
		{"writeOnly string (writeOnly is not a form keyword either)", `"val":{"type":"string","title":"Value","writeOnly":true}`},
		{"password (en)", `"password":{"type":"string"}`},
		{"passwd", `"passwd":{"type":"string"}`},
		{"apiKey (camel)", `"apiKey":{"type":"string"}`},
		{"api-key (kebab)", `"api-key":{"type":"string"}`},
		{"refresh_token", `"refresh_token":{"type":"string"}`},
		{"client secret", `"clientSecret":{"type":"string","title":"Client secret"}`},
		{"private key", `"pk":{"type":"string","title":"Private key (PEM)"}`},
		{"seed phrase", `"words":{"type":"string","description":"Your 12-word seed phrase"}`},
		{"card number", `"card_number":{"type":"string"}`},
		{"CVV as integer", `"cvv":{"type":"integer"}`},
		{"card PIN", `"pin":{"type":"string","title":"Card PIN"}`},
		{"one-time code", `"otp":{"type":"string","title":"One-time code"}`},
		{"recovery codes", `"backup":{"type":"string","title":"Recovery code"}`},
		{"Spanish contraseña", `"c":{"type":"string","title":"Contraseña"}`},
		{"Russian пароль", `"p":{"type":"string","title":"Пароль"}`},
		{"German Passwort", `"p":{"type":"string","title":"Passwort"}`},
		{"French mot de passe", `"p":{"type":"string","title":"Mot de passe"}`},
		{"Portuguese senha", `"s":{"type":"string","title":"Senha"}`},
		{"Chinese 密码", `"m":{"type":"string","title":"密码"}`},
		{"Japanese パスワード", `"p":{"type":"string","title":"パスワード"}`},
	} {
		field := f.prop[1 : 1+strings.IndexByte(f.prop[1:], '"')]
		want := []string{"error mrtr.form.secret_field " + field}
		if strings.Contains(f.prop, "writeOnly") {
			want = append([]string{"error mrtr.form.unsupported_keyword " + field}, want...)
		}
		schema("secret: "+f.name, `{"type":"object","properties":{`+f.prop+`}}`, want...)
	}
	for _, f := range []struct{ name, prop string }{
		{"max_tokens", `"max_tokens":{"type":"integer"}`},
		{"token_count", `"token_count":{"type":"integer"}`},
		{"public_key", `"public_key":{"type":"string"}`},
		{"password_hint", `"password_hint":{"type":"string"}`},
		{"pin_code as postal code", `"pin_code":{"type":"string","description":"Postal PIN code of your area"}`},
		{"passport_number", `"passport_number":{"type":"string"}`},
		{"iban", `"iban":{"type":"string","title":"IBAN"}`},
	} {
		schema("not a secret: "+f.name, `{"type":"object","properties":{`+f.prop+`}}`)
	}
	params("form params without message", `{"requestedSchema":{"type":"object","properties":{}}}`, "error mrtr.request.missing_message")
	params("form params with an unknown field", `{"message":"x","requestedSchema":{"type":"object","properties":{}},"_meta":{}}`, "error mrtr.request.unknown_param")
	params("url https", `{"mode":"url","message":"Connect","url":"https://crm.example.com/connect/abc"}`)
	params("url http localhost", `{"mode":"url","message":"Connect","url":"http://127.0.0.1:8080/connect/abc"}`)
	params("url http public", `{"mode":"url","message":"Connect","url":"http://crm.example.com/connect"}`, "error mrtr.url.not_https")
	params("url with user info", `{"mode":"url","message":"Connect","url":"https://user:pw@crm.example.com/"}`, "error mrtr.url.credentials")
	params("url with a token parameter", `{"mode":"url","message":"Connect","url":"https://crm.example.com/connect?access_token=abc"}`, "error mrtr.url.credentials")
	params("form whose message asks for a secret in its one opaque field", `{"message":"Enter your online-banking password below","requestedSchema":{"type":"object","properties":{"value":{"type":"string"}}}}`, "error mrtr.form.secret_field value")
	params("form whose message mentions a password beside a field that says what it is", `{"message":"Why do you want to reset your password?","requestedSchema":{"type":"object","properties":{"reason":{"type":"string"}}}}`)
	params("url with a token parameter behind ';'", `{"mode":"url","message":"Connect","url":"https://crm.example.com/connect?x=1;access_token=abc"}`, "error mrtr.url.credentials")
	params("url with a token in a fragment that does not parse", `{"mode":"url","message":"Connect","url":"https://crm.example.com/connect#access_token=abc&x=;"}`, "error mrtr.url.credentials")
	params("url with ';' between plain parameters", `{"mode":"url","message":"Connect","url":"https://crm.example.com/connect?state=7f3a;step=2"}`)
	params("url with an email", `{"mode":"url","message":"Connect","url":"https://crm.example.com/connect?who=ann%40example.com"}`, "error mrtr.url.personal_data")
	params("url with a JWT in the path", `{"mode":"url","message":"Connect","url":"https://crm.example.com/c/eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2lnbmF0dXJl"}`, "error mrtr.url.credentials")
	params("url without message", `{"mode":"url","url":"https://crm.example.com/"}`, "error mrtr.request.missing_message")
	params("url not absolute", `{"mode":"url","message":"x","url":"/connect"}`, "error mrtr.url.invalid")
	params("url with elicitationId (2025-11-25)", `{"mode":"url","message":"x","url":"https://crm.example.com/","elicitationId":"e1"}`, "error mrtr.request.unknown_param")
	params("javascript url", `{"mode":"url","message":"x","url":"javascript:alert(1)"}`, "error mrtr.url.invalid")
	request("sampling ok (deprecated warning)", sampleReq, "warning mrtr.input.deprecated")
	request("sampling with maxTokens as a string", `{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"x"}}],"maxTokens":"100"}}`, "warning mrtr.input.deprecated", "error mrtr.input.invalid_params")
	request("roots", rootsReq)
	request("roots with unknown params", `{"method":"roots/list","params":{"x":1}}`, "error mrtr.request.unknown_param")
	request("unknown method", `{"method":"tools/call"}`, "error mrtr.input.unknown_method")
	lint("nothing to lint", `"x":1`, fail(core.CodeRequestMalformed))
	return v
}

func genBadInput(t *testing.T) *gen {
	v := newGen(t, "Bad input: every malformed request gets a stable code and the instance stays usable (the last case proves it).")
	v.req("configure", configure([]string{vecKeyA}, ""), ok(""))
	v.req("empty", ``, fail(core.CodeJSONSyntax))
	v.req("not JSON", `hello`, fail(core.CodeJSONSyntax))
	v.req("truncated", `{"v":1,"op":"lint","schema":{`, fail(core.CodeJSONSyntax))
	v.req("trailing data", `{"v":1,"op":"lint","schema":{}} {}`, fail(core.CodeJSONSyntax))
	v.req("not an object", `[1,2,3]`, fail(core.CodeRequestMalformed))
	v.req("wrong version", `{"v":2,"op":"lint","schema":{}}`, fail(core.CodeRequestVersion))
	v.req("unknown op", `{"v":1,"op":"explode"}`, fail(core.CodeRequestUnknownOp))
	v.req("duplicate key", `{"v":1,"op":"lint","op":"ask"}`, fail(core.CodeDuplicateKey))
	v.req("duplicate key deep inside", `{"v":1,"op":"lint","schema":{"type":"object","properties":{"a":{"type":"string","type":"number"}}}}`, fail(core.CodeDuplicateKey))
	v.run(vecCase{Name: "invalid UTF-8", RequestBase64: base64.StdEncoding.EncodeToString([]byte("{\"v\":1,\"op\":\"lint\",\"schema\":\"\xff\xfe\"}")), Expect: fail(core.CodeInvalidUTF8)})
	v.req("lone surrogate escape", `{"v":1,"op":"lint","schema":{"title":"\ud800"}}`, fail(core.CodeInvalidUTF8))
	v.req("control character in a string", "{\"v\":1,\"op\":\"lint\",\"schema\":\"a\x01b\"}", fail(core.CodeJSONSyntax))
	v.req("invalid escape", `{"v":1,"op":"lint","schema":"\q"}`, fail(core.CodeJSONSyntax))
	v.req("leading zero", `{"v":01,"op":"lint"}`, fail(core.CodeJSONSyntax))
	v.run(vecCase{Name: "nesting deeper than 64", RequestRepeat: &vecRepeat{Prefix: `{"v":1,"op":"lint","schema":`, Fill: "[", Count: 70, Suffix: strings.Repeat("]", 70) + "}"}, Expect: fail(core.CodeTooDeep)})
	v.run(vecCase{Name: "request over 1 MiB", RequestRepeat: &vecRepeat{Prefix: `{"v":1,"op":"lint","schema":"`, Fill: "a", Count: 1 << 20, Suffix: `"}`}, Expect: fail(core.CodeRequestTooLarge)})
	v.req("now as a string", `{"v":1,"op":"ask","now":"1785196800000","rand":"`+vecRand("b1")+`","principal":"a","method":"tools/call","target":"t"}`, fail(core.CodeRequestNoEntropy))
	v.req("huge number in arguments", call{op: "ask", label: "b2", args: `{"n":1e1000001}`, rest: askRest(`{}`)}.env(), fail(core.CodeArgumentsMalformed))
	v.req("configure with a bad key", `{"v":1,"op":"configure","keys":["k4.local.short"],"audience":"a"}`, fail(core.CodeConfigInvalid))
	v.req("configure with a v3 key", `{"v":1,"op":"configure","keys":["k3.local.AAAA"],"audience":"a"}`, fail(core.CodeConfigInvalid))
	v.req("configure without audience", `{"v":1,"op":"configure","keys":["`+vecKeyA+`"]}`, fail(core.CodeConfigInvalid))
	v.req("still usable after all of that", call{op: "ask", label: "b3", rest: askRest(`{"contact":` + contactForm + `}`)}.env(), ok("input_required"))
	return v
}

// genPaseto turns the official PASETO v4 vectors into envelopes for the
// paseto.seal and paseto.open ops.
func genPaseto(t *testing.T) *gen {
	v := newGen(t, "The official PASETO v4 vectors (testdata/paseto/v4.json, ISC licence) through the module's paseto.seal and paseto.open ops.")
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "paseto", "v4.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Tests []struct {
			Name       string  `json:"name"`
			ExpectFail bool    `json:"expect-fail"`
			Key        string  `json:"key"`
			Nonce      string  `json:"nonce"`
			Token      string  `json:"token"`
			Payload    *string `json:"payload"`
			Footer     string  `json:"footer"`
			Implicit   string  `json:"implicit-assertion"`
		} `json:"tests"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	for _, tc := range f.Tests {
		key := tc.Key
		if key == "" {
			key = hex.EncodeToString(make([]byte, 32))
		}
		if !tc.ExpectFail && strings.HasPrefix(tc.Token, "v4.local.") {
			v.req(tc.Name+" seal", `{"v":1,"op":"paseto.seal","key":"`+key+`","nonce":"`+tc.Nonce+`","payload":`+jsonString(*tc.Payload)+`,"footer":`+jsonString(tc.Footer)+`,"implicit":`+jsonString(tc.Implicit)+`}`, ok(""))
			v.req(tc.Name+" open", `{"v":1,"op":"paseto.open","key":"`+key+`","token":`+jsonString(tc.Token)+`,"footer":`+jsonString(tc.Footer)+`,"implicit":`+jsonString(tc.Implicit)+`}`, ok(""))
			continue
		}
		v.req(tc.Name+" must not open", `{"v":1,"op":"paseto.open","key":"`+key+`","token":`+jsonString(tc.Token)+`,"footer":`+jsonString(tc.Footer)+`,"implicit":`+jsonString(tc.Implicit)+`}`, stateFail(core.ReasonTampered))
	}
	return v
}

// upCall is an upstream.ask or upstream.resume envelope: the client's
// JSON-RPC request (and the upstream's response) as a proxy received them.
type upCall struct {
	op, label, principal, upstream, request, response string
	nowMs                                             int64
	rest                                              string
}

func (c upCall) env() string {
	if c.principal == "" {
		c.principal = "alice"
	}
	if c.upstream == "" {
		c.upstream = "http://127.0.0.1:9000/mcp"
	}
	if c.nowMs == 0 {
		c.nowMs = vecNowMs
	}
	s := fmt.Sprintf(`{"v":1,"op":%q,"now":%d,"rand":%q,"principal":%q,"upstream":%q,"request":%s`,
		c.op, c.nowMs, vecRand(c.label), c.principal, c.upstream, c.request)
	if c.response != "" {
		s += `,"response":` + c.response
	}
	return s + c.rest + "}"
}

// clientCall is a tools/call request as a 2026-07-28 client sends it;
// extra is spliced into params (a retry's inputResponses and requestState).
func clientCall(name, args, caps, extra string) string {
	if caps == "" {
		caps = `{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}}`
	}
	return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":` + jsonString(name) + `,"arguments":` + args +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}` + extra + `}}`
}

func upstreamResult(reqs, state string) string {
	r := `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":` + reqs
	if state != "" {
		r += `,"requestState":` + jsonString(state)
	}
	return r + `}}`
}

func upRetry(responses, token string) string {
	r := ""
	if responses != "" {
		r += `,"inputResponses":` + responses
	}
	return r + `,"requestState":` + jsonString(token)
}

func genUpstream(t *testing.T) *gen {
	v := newGen(t, "upstream.ask and upstream.resume: a proxy seals an upstream's InputRequiredResult (its requestState and identity included), checks the retry, and gets the message to forward with the upstream's state put back and the checked answers, reduced to what was asked and checked (each value as the client wrote it), naming what was dropped.")
	v.req("configure", configure([]string{vecKeyA}, ""), ok(""))
	args := `{"topic":"pricing"}`
	call1 := clientCall("book_demo_call", args, "", "")
	uask := func(name, label, request, response, rest string, want vecExpect) map[string]any {
		return v.req(name, upCall{op: "upstream.ask", label: label, request: request, response: response, rest: rest}.env(), want)
	}
	ures := func(name string, c upCall, want vecExpect) map[string]any {
		c.op = "upstream.resume"
		return v.req(name, c.env(), want)
	}
	tok := tokenOf(t, uask("seal an upstream round with its state", "u1", call1, upstreamResult(`{"contact":`+contactForm+`}`, "round=1"), "", ok("input_required")))
	tokNone := tokenOf(t, uask("seal an upstream round without state", "u2", call1, upstreamResult(`{"confirm":`+confirmForm+`}`, ""), "", ok("input_required")))
	uask("upstream asks for a password", "u3", call1, upstreamResult(`{"login":{"method":"elicitation/create","params":{"message":"Sign in","requestedSchema":{"type":"object","properties":{"password":{"type":"string"}}}}}}`, "s"), "", fail(core.CodeFormSecretField))
	uask("upstream asks for a kind the client did not declare", "u4", clientCall("book_demo_call", args, `{"sampling":{}}`, ""), upstreamResult(`{"contact":`+contactForm+`}`, "s"), "", fail(core.CodeCapabilityMissing))
	uask("upstream result is not input_required", "u5", call1, `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`, "", fail(core.CodeUpstreamResult))
	uask("upstream requestState is not a string", "u6", call1, `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{},"requestState":42}}`, "", fail(core.CodeUpstreamResult))
	uask("upstream answered an error", "u7", call1, `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"x"}}`, "", fail(core.CodeUpstreamResult))
	v.req("no upstream identity", `{"v":1,"op":"upstream.ask","now":1785196800000,"rand":"`+vecRand("u8")+`","principal":"alice","request":`+call1+`,"response":`+upstreamResult(`{}`, "")+`}`, fail(core.CodeRequestMalformed))
	uask("request without params", "u9", `{"jsonrpc":"2.0","id":7,"method":"tools/call"}`, upstreamResult(`{}`, ""), "", fail(core.CodeRequestMalformed))
	uask("a method that cannot ask", "u10", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`, upstreamResult(`{}`, ""), "", fail(core.CodeMethodNotAllowed))
	tokRes := tokenOf(t, uask("resources/read: the uri is the target", "u11", `{"jsonrpc":"2.0","id":"r1","method":"resources/read","params":{"uri":"crm://accounts/42","_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`, upstreamResult(`{"confirm":`+confirmForm+`}`, "res-state"), "", ok("input_required")))

	// The client echoes a requestState exactly, and "" is one (only an
	// absent or null one is none): the proxy sends "" back.
	tokEmpty := tokenOf(t, uask("upstream requestState is the empty string", "u12", call1, `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{"confirm":`+confirmForm+`},"requestState":""}}`, "", ok("input_required")))
	uask("upstream requestState null: none", "u13", call1, `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{"confirm":`+confirmForm+`},"requestState":null}}`, "", ok("input_required"))

	valid := `{"contact":{"action":"accept","content":{"name":"Ann Lee","email":"ann@example.com"}}}`
	plain := ures("valid answer: forward with the upstream's state", upCall{label: "u20", request: clientCall("book_demo_call", args, "", upRetry(valid, tok))}, ok("complete"))
	ures("only the asked fields are forwarded, each value as written; unasked fields, other members and a key no one asked are not", upCall{label: "u21", request: clientCall("book_demo_call", args, "", upRetry(`{ "contact" : {"action":"accept","content":{"email":"ann@example.com","name": "Ann\u0020Lee","role":"admin","password":"hunter2","profile":{"isAdmin":true,"deep":[{"x":[1,2,3]}]}},"extraTop":{"x":1}}, "extra":{"action":"accept","content":{"foo":"bar"}}}`, tok))},
		dropping("complete", "contact.content.role", "contact.content.password", "contact.content.profile", "contact.extraTop", "extra"))
	// The ledger's digest is of what is forwarded: a replay that adds an
	// unasked field is the same answers (a replay, not a conflict).
	again := ures("an unasked field does not change the answers' digest", upCall{label: "u21b", request: clientCall("book_demo_call", args, "", upRetry(`{"contact":{"action":"accept","content":{"name":"Ann Lee","isAdmin":true,"email":"ann@example.com"}}}`, tok))}, dropping("complete", "contact.content.isAdmin"))
	if again["answersDigest"] != plain["answersDigest"] || again["forwardDigest"] != plain["forwardDigest"] {
		t.Fatalf("an unasked field changed the digest: %v, %v", again["answersDigest"], plain["answersDigest"])
	}
	ures("no upstream state: forwarded without requestState", upCall{label: "u22", request: clientCall("book_demo_call", args, "", upRetry(`{"confirm":{"action":"accept","content":{"ok":true}}}`, tokNone))}, ok("complete"))
	ures("an empty upstream state goes back as sent", upCall{label: "u29", request: clientCall("book_demo_call", args, "", upRetry(`{"confirm":{"action":"accept","content":{"ok":true}}}`, tokEmpty))}, ok("complete"))
	ures("decline is forwarded", upCall{label: "u23", request: clientCall("book_demo_call", args, "", upRetry(`{"contact":{"action":"decline"}}`, tok))}, ok("declined"))
	ures("cancel is forwarded", upCall{label: "u24", request: clientCall("book_demo_call", args, "", upRetry(`{"contact":{"action":"cancel"}}`, tok))}, ok("cancelled"))
	ures("decline is forwarded as the action alone", upCall{label: "u23b", request: clientCall("book_demo_call", args, "", upRetry(`{"contact":{"content":{"name":"Ann Lee"},"action":"decline","why":"busy"}}`, tok))}, dropping("declined", "contact.content", "contact.why"))
	ures("cancel is forwarded as the action alone", upCall{label: "u24b", request: clientCall("book_demo_call", args, "", upRetry(`{"contact":{"action":"cancel","_meta":{"k":1}}}`, tok))}, dropping("cancelled", "contact._meta"))
	r := ures("invalid email: the proxy asks again itself", upCall{label: "u25", request: clientCall("book_demo_call", args, "", upRetry(`{"contact":{"action":"accept","content":{"name":"Ann Lee","email":"ann-at-example"}}}`, tok))}, ok("input_required"))
	tok2 := tokenOf(t, r)
	ures("round 2 valid: forward with the upstream's state of round 1", upCall{label: "u26", request: clientCall("book_demo_call", args, "", upRetry(valid, tok2))}, ok("complete"))
	ures("no answer: asked again", upCall{label: "u27", request: clientCall("book_demo_call", args, "", upRetry("", tok))}, ok("input_required"))
	ures("an answer that says decline and, in another case, accept", upCall{label: "u28b", request: clientCall("book_demo_call", args, "", upRetry(`{"contact":{"action":"decline","ACTION":"accept","content":{"name":"","email":"nope"}}}`, tok))}, fail(core.CodeCaseDuplicateKey))
	ures("inputResponses not an object", upCall{label: "u28", request: clientCall("book_demo_call", args, "", upRetry(`12345`, tok))}, fail(core.CodeResponsesMalformed))

	tm := tokenOf(t, uask("seal two requests", "u30", call1, upstreamResult(`{"contact":`+contactForm+`,"confirm":`+confirmForm+`}`, "two"), "", ok("input_required")))
	r = ures("one valid, one missing: the proxy asks the missing one", upCall{label: "u31", request: clientCall("book_demo_call", args, "", upRetry(valid, tm))}, ok("input_required"))
	ures("forward carries the answer of the proxy's earlier round", upCall{label: "u32", request: clientCall("book_demo_call", args, "", upRetry(`{"confirm":{"action":"accept","content":{"ok":true}}}`, tokenOf(t, r)))}, ok("complete"))
	r2 := ures("an answer kept for a re-ask holds only the asked fields", upCall{label: "u31b", request: clientCall("book_demo_call", args, "", upRetry(`{"contact":{"action":"accept","content":{"name":"Ann Lee","role":"admin","email":"ann@example.com"}}}`, tm))}, dropping("input_required", "contact.content.role"))
	ures("the kept answer is forwarded as it was reduced", upCall{label: "u32b", request: clientCall("book_demo_call", args, "", upRetry(`{"confirm":{"action":"accept","content":{"ok":true}}}`, tokenOf(t, r2)))}, ok("complete"))
	tr := tokenOf(t, r)
	ures("an answer sealed in the proxy's round stands: the client cannot replace it", upCall{label: "u35", request: clientCall("book_demo_call", args, "", upRetry(`{"contact":{"action":"accept","content":{"name":"Mallory","email":"not-an-email"}},"confirm":{"action":"accept","content":{"ok":true}}}`, tr))}, dropping("complete", "contact"))
	ures("decline: an invalid accept beside it and a key no one asked are not forwarded", upCall{label: "u36", request: clientCall("book_demo_call", args, "", upRetry(`{"contact":{"action":"accept","content":{"name":"Ann Lee","email":"ann-at-example"}},"confirm":{"action":"decline"},"zz":{"action":"accept","content":{"ok":true}}}`, tm))}, dropping("declined", "zz"))
	after := tokenOf(t, uask("a further upstream round keeps the operation", "u33", call1, upstreamResult(`{"confirm":`+confirmForm+`}`, "round=2;name=Ann"), `,"after":{"operationId":"AAECAwQFBgcICQoLDA0ODw","round":1}`, ok("input_required")))
	ures("a further upstream round forwards under its own upstream round", upCall{label: "u37", request: clientCall("book_demo_call", args, "", upRetry(`{"confirm":{"action":"accept","content":{"ok":true}}}`, after))}, ok("complete"))
	nothing := tokenOf(t, uask("an upstream round that asks nothing", "u39", call1, `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required"}}`, "", ok("input_required")))
	ures("a round that asked nothing completes without answers", upCall{label: "u39b", request: clientCall("book_demo_call", args, "", upRetry("", nothing))}, ok("complete"))
	uask("arguments with a number a double does not hold as written", "u38", clientCall("book_demo_call", `{"topic":"pricing","account":9007199254740993}`, "", ""), upstreamResult(`{"confirm":`+confirmForm+`}`, "s"), "", fail(core.CodeArgumentsMalformed))
	uask("a further upstream round past the limit", "u34", call1, upstreamResult(`{"confirm":`+confirmForm+`}`, "round=4"), `,"after":{"operationId":"AAECAwQFBgcICQoLDA0ODw","round":3}`, fail(core.CodeRoundsExceeded))

	ures("the upstream's own state, forged by the client", upCall{label: "u40", request: clientCall("book_demo_call", args, "", upRetry(valid, "round=2;name=Mallory"))}, stateFail(core.ReasonMalformed))
	mid := []byte(tok)
	mid[len("v4.local.")+40] ^= 1
	ures("state changed in the middle", upCall{label: "u41", request: clientCall("book_demo_call", args, "", upRetry(valid, string(mid)))}, stateFail(core.ReasonTampered))
	ures("other principal", upCall{label: "u42", principal: "mallory", request: clientCall("book_demo_call", args, "", upRetry(valid, tok))}, stateFail(core.ReasonPrincipal))
	ures("changed arguments", upCall{label: "u43", request: clientCall("book_demo_call", `{"topic":"refunds"}`, "", upRetry(valid, tok))}, stateFail(core.ReasonArguments))
	ures("arguments re-spaced still open (RFC 8785)", upCall{label: "u44", request: clientCall("book_demo_call", `{ "topic": "pricing" }`, "", upRetry(valid, tok))}, ok("complete"))
	ures("other tool", upCall{label: "u45", request: clientCall("delete_account", args, "", upRetry(valid, tok))}, stateFail(core.ReasonTarget))
	ures("another upstream's proxy", upCall{label: "u46", upstream: "http://127.0.0.1:9001/mcp", request: clientCall("book_demo_call", args, "", upRetry(valid, tok))}, stateFail(core.ReasonUpstream))
	ures("expired", upCall{label: "u47", nowMs: vecNowMs + 300_000, request: clientCall("book_demo_call", args, "", upRetry(valid, tok))}, stateFail(core.ReasonExpired))
	served := tokenOf(t, v.req("a server's own ask", call{op: "ask", label: "u48", rest: askRest(`{"contact":` + contactForm + `}`)}.env(), ok("input_required")))
	ures("a server's state does not open at a proxy", upCall{label: "u49", request: clientCall("book_demo_call", args, "", upRetry(valid, served))}, stateFail(core.ReasonUpstream))
	v.req("a proxy's state does not open at a server", call{op: "resume", label: "u50", rest: resumeRest(tok, valid)}.env(), stateFail(core.ReasonUpstream))
	ures("resources/read retry", upCall{label: "u51", request: `{"jsonrpc":"2.0","id":"r2","method":"resources/read","params":{"uri":"crm://accounts/42","_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}},"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":` + jsonString(tokRes) + `}}`}, ok("complete"))
	ures("retry without requestState", upCall{label: "u52", request: call1}, fail(core.CodeRequestMalformed))

	// URL consent, sampling and roots: an upstream gets the members the
	// core checked (and a sampling stopReason that is a string), each as
	// the client wrote it; nothing else.
	tk := tokenOf(t, uask("seal url, sampling and roots", "u53", call1, upstreamResult(`{"calendar":`+urlRequest+`,"summary":`+sampleReq+`,"roots":`+rootsReq+`}`, "kinds"), "", ok("input_required")))
	ures("url, sampling and roots forwarded as checked", upCall{label: "u54", request: clientCall("book_demo_call", args, "", upRetry(`{"calendar":{"action":"accept","content":{"x":1}},"summary":{"role":"assistant","content":{"type":"text","text":"Fine."},"model":"m1","stopReason":"endTurn","_meta":{"k":1},"extra":true},"roots":{"roots":[{"uri":"file:///home/ann/project","name":"project","_meta":{},"admin":true},{"name":7,"uri":"file:///tmp"}],"nextCursor":"c"}}`, tk))},
		dropping("complete", "calendar.content", "summary._meta", "summary.extra", "roots.nextCursor", "roots.roots[0]._meta", "roots.roots[0].admin", "roots.roots[1].name"))
	ures("a sampling stopReason that is not a string is left out", upCall{label: "u55", request: clientCall("book_demo_call", args, "", upRetry(`{"calendar":{"action":"accept"},"summary":{"role":"assistant","content":[{"type":"text","text":"Fine."}],"model":"m1","stopReason":1},"roots":{"roots":[]}}`, tk))}, dropping("complete", "summary.stopReason"))
	long := strings.Repeat("é", 40)
	ures("dropped names are cut short, and listed up to 16", upCall{label: "u56", request: clientCall("book_demo_call", args, "", upRetry(`{"contact":{"action":"decline","`+long+`":1,"a1":1,"a2":1,"a3":1,"a4":1,"a5":1,"a6":1,"a7":1,"a8":1,"a9":1,"b1":1,"b2":1,"b3":1,"b4":1,"b5":1,"b6":1,"b7":1}}`, tok))},
		dropping("declined", "contact."+strings.Repeat("é", 28), "contact.a1", "contact.a2", "contact.a3", "contact.a4", "contact.a5", "contact.a6", "contact.a7", "contact.a8", "contact.a9", "contact.b1", "contact.b2", "contact.b3", "contact.b4", "contact.b5", "contact.b6"))

	// upstream.inputs: what the host's policy decides on, read and linted
	// as upstream.ask reads them (no keys, no bindings needed).
	inputs := func(name, result string, want vecExpect) {
		v.req(name, `{"v":1,"op":"upstream.inputs","response":{"jsonrpc":"2.0","id":7,"result":`+result+`}}`, want)
	}
	inputs("inputs: as the client will see them", `{"resultType":"input_required","inputRequests":{"contact":`+contactForm+`,"confirm":{ "params" : {"message":"Book it?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}, "method":"elicitation/create", "x":1 }},"requestState":"s"}`, ok(""))
	inputs("inputs: names in another case are not read", `{"resultType":"input_required","inputRequests":{"contact":{"method":"elicitation/create","params":{"message":"Your number?","requestedSchema":{"type":"object","properties":{"phone":{"type":"string"}}}},"METHOD":"roots/list","PARAMS":null}}}`, ok(""))
	inputs("inputs: none (only a requestState)", `{"resultType":"input_required","inputRequests":null,"requestState":"only"}`, ok(""))
	inputs("inputs: a password form is refused as the ask refuses it", `{"resultType":"input_required","inputRequests":{"login":{"method":"elicitation/create","params":{"message":"Sign in","requestedSchema":{"type":"object","properties":{"password":{"type":"string"}}}}}}}`, fail(core.CodeFormSecretField))
	inputs("inputs: not an InputRequiredResult", `{"content":[]}`, fail(core.CodeUpstreamResult))
	inputs("inputs: a requestState that is not a string", `{"resultType":"input_required","requestState":1}`, fail(core.CodeUpstreamResult))
	return v
}

// genDigest pins answersDigest (guest/ABI.md): equal answers spelled
// another way (member order, number literals, string escapes) have one
// digest; keys sort by UTF-16 code units. sdk-js checks every digest here
// against an independent RFC 8785 implementation.
func genDigest(t *testing.T) *gen {
	v := newGen(t, "answersDigest: SHA-256(\"mrtr-wasm/answers/v2\\0\" || RFC 8785 of the answers), the replay ledger's key in every runtime.")
	v.req("configure", configure([]string{vecKeyA}, ""), ok(""))
	form := `{"method":"elicitation/create","params":{"mode":"form","message":"?","requestedSchema":{"type":"object","properties":{` +
		`"name":{"type":"string"},"n":{"type":"number"},"i":{"type":"integer"},"ok":{"type":"boolean"},"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}},` +
		`"\u00e9":{"type":"string"},"\ud83d\ude00":{"type":"string"},"\ufb01":{"type":"string"}},"required":["name"]}}}`
	tok := tokenOf(t, v.req("ask", call{op: "ask", label: "d1", rest: askRest(`{"f":` + form + `,"g":` + confirmForm + `}`)}.env(), ok("input_required")))
	resume := func(name, label, responses string) {
		v.req(name, call{op: "resume", label: label, rest: resumeRest(tok, responses)}.env(), ok("complete"))
	}
	g := `"g":{"action":"accept","content":{"ok":true}}`
	resume("plain", "d2", `{"f":{"action":"accept","content":{"name":"José","n":100,"i":1,"ok":false,"tags":["a","b"],"é":"x","😀":"y","ﬁ":"z"}},`+g+`}`)
	resume("members in another order", "d3", `{`+g+`,"f":{"content":{"ﬁ":"z","😀":"y","é":"x","tags":["a","b"],"ok":false,"i":1,"n":100,"name":"José"},"action":"accept"}}`)
	resume("numbers spelled otherwise (1e2, 1.0)", "d4", `{"f":{"action":"accept","content":{"name":"José","n":1e2,"i":1.0,"ok":false,"tags":["a","b"],"é":"x","😀":"y","ﬁ":"z"}},`+g+`}`)
	resume("strings escaped otherwise", "d5", `{"f":{"action":"accept","content":{"name":"Jos\u00e9","n":100.00,"i":10e-1,"ok":false,"tags":["a","b"],"\u00e9":"x","\ud83d\ude00":"y","\ufb01":"\u007a"}},`+g+`}`)
	resume("another value", "d6", `{"f":{"action":"accept","content":{"name":"Jose","n":100,"i":1,"ok":false,"tags":["a","b"],"é":"x","😀":"y","ﬁ":"z"}},`+g+`}`)
	resume("another number", "d7", `{"f":{"action":"accept","content":{"name":"José","n":100.5,"i":1,"ok":false,"tags":["a","b"],"é":"x","😀":"y","ﬁ":"z"}},`+g+`}`)
	resume("a field fewer", "d8", `{"f":{"action":"accept","content":{"name":"José"}},`+g+`}`)
	resume("extreme numbers", "d9", `{"f":{"action":"accept","content":{"name":"José","n":1e21,"i":-0}},`+g+`}`)
	resume("tiny number", "d10", `{"f":{"action":"accept","content":{"name":"José","n":0.000001234}},`+g+`}`)
	return v
}

// genPolicyDecision pins how a decision document reads (op
// policy.decision), the rule every host's policy package shares.
func genPolicyDecision(t *testing.T) *gen {
	v := newGen(t, "policy.decision: a policy's decision document read once for every host (deny wins, an allow needs both limits, anything malformed refuses). Needs no configuration.")
	pd := func(name, doc string) {
		env := `{"v":1,"op":"policy.decision"`
		if doc != "" {
			env += `,"document":` + doc
		}
		v.req(name, env+`}`, ok(""))
	}
	pd("an allow with limits", `{"allow":true,"deny":[],"max_rounds":3,"ttl_seconds":240,"rules":["tools.book_demo_call"]}`)
	pd("limits written as integral floats", `{"allow":true,"max_rounds":3.0,"ttl_seconds":2.4e2}`)
	pd("no decision", ``)
	pd("null", `null`)
	pd("not an object", `[{"allow":true}]`)
	pd("an allow without limits", `{"allow":true,"deny":[]}`)
	pd("a limit of 0, a fraction, above 2^31", `{"allow":true,"max_rounds":0,"ttl_seconds":2147483649}`)
	pd("allow that is not true", `{"allow":"true","max_rounds":3,"ttl_seconds":60}`)
	pd("deny wins, every reason kept", `{"allow":true,"deny":[{"code":"policy.field_not_allowed","rule":"tools.book_demo_call","key":"contact","field":"phone","message":"no phone"},{"code":"policy.class_forbidden","rule":"forbidden_classes","message":"no"}],"max_rounds":3,"ttl_seconds":60,"rules":["tools.book_demo_call"]}`)
	pd("deny that is not a list", `{"allow":true,"deny":"policy.x","max_rounds":3,"ttl_seconds":60}`)
	pd("members of the wrong type read as empty; a denial without a code is policy.undecided", `{"allow":false,"deny":[7,{"code":1,"rule":"r","message":null}],"rules":[1,"tools.x"]}`)
	v.req("not JSON", `{"v":1,"op":"policy.decision","document":{"allow":tru}}`, fail(core.CodeJSONSyntax))
	return v
}

// genPolicyInput pins the policy input the core builds for every host
// (op policy.input): canonical, without messages and defaults, with the
// core's verdict on every form field.
func genPolicyInput(t *testing.T) *gen {
	v := newGen(t, "policy.input: the input of a deployment policy's decision, built once for every host. Needs no configuration.")
	pi := func(name, decision, principal, reqs string, want vecExpect) {
		env := `{"v":1,"op":"policy.input","decision":"` + decision + `","principal":` + jsonString(principal) + `,"method":"tools/call","target":"book_demo_call","ttl":300,"maxRounds":3`
		if reqs != "" {
			env += `,"inputRequests":` + reqs
		}
		v.req(name, env+`}`, want)
	}
	pi("contact form: message and defaults left out", "ask", "alice", `{"contact":`+contactForm+`,"confirm":`+confirmForm+`}`, ok(""))
	pi("url, sampling and roots", "ask", "alice", `{"calendar":`+urlRequest+`,"summary":`+sampleReq+`,"roots":`+rootsReq+`}`, ok(""))
	pi("state-only ask", "ask", "alice", "", ok(""))
	pi("resume", "resume", "alice", `{"contact":`+contactForm+`}`, ok(""))
	pi("principal left out", "ask", "", `{"contact":`+contactForm+`}`, ok(""))
	secret := func(props string) string {
		return `{"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{` + props + `}}}}`
	}
	pi("secrets in several languages", "ask", "alice", `{"k":`+secret(`"password":{"type":"string"},"x":{"type":"string","title":"Mot de passe"},"y":{"type":"string","title":"パスワード"},"clave":{"type":"string","title":"Clave de API"},"pin":{"type":"string","title":"Card PIN"},"w":{"type":"string","writeOnly":true}`)+`}`,
		langs(map[string]string{"k/password": "en", "k/x": "fr", "k/y": "ja", "k/clave": "es", "k/pin": "en", "k/w": ""}))
	// The language is the one of the term the reason quotes; "" when
	// format "password" or writeOnly decided, or when several
	// vocabularies hold the word ("código": es and pt).
	pi("the language of the deciding term", "ask", "alice", `{"a":`+secret(`"contraseña":{"type":"string"},"b":{"type":"string","title":"Passwort"},"c":{"type":"string","title":"Пароль"},"d":{"type":"string","title":"支付密码"},"e":{"type":"string","title":"비밀번호"},"f":{"type":"string","title":"Codice OTP"},"g":{"type":"string","title":"Senha"},"h":{"type":"string","title":"API-Schlüssel"},"i":{"type":"string","title":"Número de tarjeta"},"j":{"type":"string","title":"Номер карты"}`)+
		`,"b":`+secret(`"pin":{"type":"string","title":"Código PIN"},"hint":{"type":"string","title":"Passwort-Hinweis","format":"password"},"w":{"type":"string","writeOnly":true},"code":{"type":"string","title":"Código recibido"},"contraseña":{"type":"string","writeOnly":true},"hinweis":{"type":"string","title":"Passwort-Hinweis"}`)+`}`,
		langs(map[string]string{"a/contraseña": "es", "a/b": "de", "a/c": "ru", "a/d": "zh", "a/e": "ko", "a/f": "it", "a/g": "pt", "a/h": "de", "a/i": "es", "a/j": "ru",
			"b/pin": "en", "b/hint": "", "b/w": "", "b/code": "", "b/contraseña": "es"}))
	pi("what the core clears", "ask", "alice", `{"k":`+secret(`"token_count":{"type":"integer"},"password_hint":{"type":"string"},"api_key_name":{"type":"string"},"has_api_key":{"type":"boolean"},"max_tokens":{"type":"integer","title":"Max tokens"}`)+`}`, ok(""))
	pi("numbers and keys made canonical", "ask", "alice", `{"b":`+secret(`"n":{"type":"number","minimum":1.0,"maximum":1e2,"default":5}`)+`,"a":{"params":{"mode":"url","url":"https://x.example/\u0061","message":"m"},"method":"elicitation/create"}}`, ok(""))
	pi("properties not an object", "ask", "alice", `{"k":{"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":["name"]}}}}`, ok(""))
	pi("odd property values", "ask", "alice", `{"k":`+secret(`"a":"not a schema","b":{"type":["string","null"],"title":"Password"},"c":{"type":"object"}`)+`}`, ok(""))
	pi("unknown decision", "maybe", "alice", "", fail(core.CodeRequestMalformed))
	pi("keys differing only in case", "ask", "alice", `{"contact":`+contactForm+`,"Contact":`+confirmForm+`}`, fail(core.CodeCaseDuplicateKey))
	pi("duplicate keys", "ask", "alice", `{"contact":`+contactForm+`,"contact":`+confirmForm+`}`, fail(core.CodeDuplicateKey))
	v.req("missing principal", `{"v":1,"op":"policy.input","decision":"ask","method":"tools/call","target":"t"}`, fail(core.CodeRequestMalformed))
	v.req("ttl out of range", `{"v":1,"op":"policy.input","decision":"ask","principal":"a","method":"tools/call","target":"t","ttl":-1}`, fail(core.CodeRequestMalformed))
	v.req("an access token's scopes and claims", `{"v":1,"op":"policy.input","decision":"ask","principal":"https://as.example/#248289","scopes":["mcp","crm:write"],"claims":{"email":"ann@example.com","client_id":"crm-app"},"method":"tools/call","target":"update_contact","inputRequests":{"c":`+contactForm+`}}`, ok(""))
	v.req("scopes not a list of strings", `{"v":1,"op":"policy.input","decision":"resume","principal":"a","scopes":["mcp",1],"method":"tools/call","target":"t"}`, fail(core.CodeRequestMalformed))
	v.req("claims not an object", `{"v":1,"op":"policy.input","decision":"resume","principal":"a","claims":"x","method":"tools/call","target":"t"}`, fail(core.CodeRequestMalformed))
	return v
}

func genApproval(t *testing.T) *gen {
	v := newGen(t, "Approvals (confirm): the guard's own yes/no form, bound to the call and the policy version.")
	v.req("configure", configure([]string{vecKeyA}, ""), ok(""))
	const args = `{"amount":5000,"to":"bob"}`
	approval := func(rev string, summary bool) string {
		s := `,"approval":{"kind":"confirm",`
		if summary {
			s += `"summary":"Transfer 5000 to bob.",`
		}
		return s + `"policyVersion":"` + rev + `"}`
	}
	ask := func(name, label, rest string, want vecExpect) map[string]any {
		return v.req(name, call{op: "ask", label: label, target: "transfer", args: args, rest: rest}.env(), want)
	}
	resume := func(name, label, args, tok, responses, rev string, want vecExpect) map[string]any {
		rest := resumeRest(tok, responses)
		if rev != "" {
			rest += approval(rev, false)
		}
		return v.req(name, call{op: "resume", label: label, target: "transfer", args: args, rest: rest}.env(), want)
	}
	tok := tokenOf(t, ask("the confirm form, built by the guard", "p1", approval("rev1", true), ok("input_required")))
	ask("an approval round asks for nothing else", "p2", approval("rev1", true)+askRest(`{"confirm":`+confirmForm+`}`), fail(core.CodeRequestMalformed))
	ask("only the confirm kind", "p3", `,"approval":{"kind":"approver","summary":"x","policyVersion":"rev1"}`, fail(core.CodeRequestMalformed))
	ask("a summary is required", "p4", `,"approval":{"kind":"confirm","policyVersion":"rev1"}`, fail(core.CodeRequestMalformed))
	v.req("a client without form elicitation", call{op: "ask", label: "p5", target: "transfer", args: args, caps: `{"elicitation":{"url":{}}}`, rest: approval("rev1", true)}.env(), fail(core.CodeCapabilityMissing))
	ask("no application may ask under the approval key", "p6", askRest(`{"`+core.ApprovalKey+`":`+confirmForm+`}`), fail(core.CodeInputKey))
	yes := `{"` + core.ApprovalKey + `":{"action":"accept","content":{"approve":true}}}`
	resume("yes approves", "p7", args, tok, yes, "rev1", ok("complete"))
	resume("no is a rejection", "p8", args, tok, `{"`+core.ApprovalKey+`":{"action":"accept","content":{"approve":false}}}`, "rev1", ok("declined"))
	resume("decline is a rejection", "p9", args, tok, `{"`+core.ApprovalKey+`":{"action":"decline"}}`, "rev1", ok("declined"))
	resume("cancel is cancel", "p10", args, tok, `{"`+core.ApprovalKey+`":{"action":"cancel"}}`, "rev1", ok("cancelled"))
	re := tokenOf(t, resume("an accept without the answer is asked again", "p11", args, tok, `{"`+core.ApprovalKey+`":{"action":"accept","content":{}}}`, "rev1", ok("input_required")))
	resume("the re-ask is still an approval", "p12", args, re, yes, "rev1", ok("complete"))
	resume("changed arguments", "p13", `{"amount":5001,"to":"bob"}`, tok, yes, "rev1", stateFail(core.ReasonArguments))
	resume("another policy version", "p14", args, tok, yes, "rev2", stateFail(core.ReasonPolicy))
	resume("a host that expects no approval", "p15", args, tok, yes, "", stateFail(core.ReasonPolicy))
	plain := tokenOf(t, ask("a plain round", "p16", askRest(`{"confirm":`+confirmForm+`}`), ok("input_required")))
	resume("a plain state never passes as an approval", "p17", args, plain, `{"confirm":{"action":"accept","content":{"ok":true}}}`, "rev1", stateFail(core.ReasonPolicy))
	v.req("policy.input of the approve decision sees the arguments", `{"v":1,"op":"policy.input","decision":"approve","principal":"alice","method":"tools/call","target":"transfer","ttl":300,"maxRounds":3,"arguments":{"to":"bob","amount":5.0e3}}`, ok(""))
	return v
}
