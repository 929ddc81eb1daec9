package core

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// pol is an allowing host policy decision with the limits given; doc
// the same as a decision document.
func pol(limits string) string { return `,"policy":{"allow":true,` + limits + `}` }
func doc(limits string) string {
	return `,"policy":{"document":{"allow":true,"deny":[],"rules":["tools.x"],` + limits + `}}`
}

// with adds members to an envelope.
func with(req, members string) string { return strings.TrimSuffix(req, "}") + members + "}" }

// TestLimitsOnlyNarrow: the caller's and the policy's TTL and round limit
// narrow the guard's own, never widen it, and a finished round says how
// long its operation must be remembered (rounds × TTL of the guard's own).
func TestLimitsOnlyNarrow(t *testing.T) {
	g := newConfigured(t, `,"ttl":300,"maxRounds":3`)
	lifetime := func(more string) int64 {
		t.Helper()
		o := mustOK(t, g, tOpen(tokenOf(t, mustOK(t, g, tAsk("l", `{"contact":`+tContactForm+`}`, more), "input_required"))), "open")
		iat, _ := time.Parse(time.RFC3339, o["issuedAt"].(string))
		exp, _ := time.Parse(time.RFC3339, o["expiresAt"].(string))
		return int64(exp.Sub(iat) / time.Second)
	}
	for _, c := range []struct {
		more string
		want int64
	}{
		{``, 300},
		{`,"ttl":600`, 300},
		{pol(`"ttl":86400`), 300},
		{`,"ttl":120`, 120},
		{pol(`"ttl":60`), 60},
		{`,"ttl":120` + pol(`"ttl":60`), 60},
		{`,"ttl":60` + pol(`"ttl":120`), 60},
		{`,"ttl":600` + doc(`"ttl_seconds":90,"max_rounds":9`), 90},
		{`,"ttl":9007199254740991` + pol(`"ttl":86401`), 300},
	} {
		if got := lifetime(c.more); got != c.want {
			t.Errorf("ask%s: the state lives %d s, want %d", c.more, got, c.want)
		}
	}
	for _, bad := range []string{`,"ttl":0`, `,"ttl":-5`, `,"maxRounds":1.5`} {
		mustFail(t, g, tAsk("l", `{"contact":`+tContactForm+`}`, bad), CodeRequestMalformed)
	}
	// A policy's limit of 0 is none; a malformed one refuses the round.
	if got := lifetime(pol(`"ttl":0,"maxRounds":0`)); got != 300 {
		t.Errorf("a policy's ttl of 0: the state lives %d s, want the guard's 300", got)
	}
	for _, bad := range []string{pol(`"ttl":-5`), pol(`"maxRounds":1.5`), pol(`"ttl":"60"`), doc(`"ttl_seconds":0,"max_rounds":3`)} {
		mustFail(t, g, tAsk("l", `{"contact":`+tContactForm+`}`, bad), CodePolicyDenied)
	}

	// The round limit: a policy's 5 does not lift the guard's 3, its 1
	// ends the request at the first wrong answer.
	wrong := `{"contact":{"action":"accept","content":{"name":"N","email":"not an email"}}}`
	tok := tokenOf(t, mustOK(t, g, tAsk("r", `{"contact":`+tContactForm+`}`, ""), "input_required"))
	mustFail(t, g, with(tResume("r1", tok, wrong), pol(`"maxRounds":1`)), CodeRoundsExceeded)
	tok2 := tokenOf(t, mustOK(t, g, with(tResume("r2", tok, wrong), pol(`"maxRounds":5`)), "input_required"))
	tok3 := tokenOf(t, mustOK(t, g, tResume("r3", tok2, wrong), "input_required"))
	mustFail(t, g, with(tResume("r4", tok3, wrong), `,"maxRounds":50`+doc(`"max_rounds":5,"ttl_seconds":300`)), CodeRoundsExceeded)

	done := mustOK(t, g, tResume("r5", tok3, `{"contact":{"action":"accept","content":{"name":"N","email":"n@example.com"}}}`), "complete")
	if done["rememberSeconds"] != json.Number("900") {
		t.Fatalf("a complete outcome must say to remember it rounds × TTL (900 s): %v", done["rememberSeconds"])
	}
	declined := mustOK(t, g, tResume("r6", tok, `{"contact":{"action":"decline"}}`), "declined")
	if declined["rememberSeconds"] != json.Number("900") {
		t.Fatalf("a declined outcome: rememberSeconds %v", declined["rememberSeconds"])
	}
	// A narrower policy does not shorten it: a state sealed before the
	// policy changed may still open for the guard's own limits.
	done = mustOK(t, g, with(tResume("r7", tok, `{"contact":{"action":"accept","content":{"name":"N","email":"n@example.com"}}}`), pol(`"ttl":10,"maxRounds":1`)), "complete")
	if done["rememberSeconds"] != json.Number("900") {
		t.Fatalf("rememberSeconds under a narrower policy: %v", done["rememberSeconds"])
	}
}
