package core

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

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
		{`,"policyTtl":86400`, 300},
		{`,"ttl":120`, 120},
		{`,"policyTtl":60`, 60},
		{`,"ttl":120,"policyTtl":60`, 60},
		{`,"ttl":60,"policyTtl":120`, 60},
		{`,"ttl":600,"policyTtl":90`, 90},
		{`,"ttl":9007199254740991,"policyTtl":86401`, 300},
	} {
		if got := lifetime(c.more); got != c.want {
			t.Errorf("ask%s: the state lives %d s, want %d", c.more, got, c.want)
		}
	}
	for _, bad := range []string{`,"ttl":0`, `,"policyTtl":0`, `,"ttl":-5`, `,"policyMaxRounds":0`, `,"maxRounds":1.5`, `,"policyTtl":9007199254740992`, `,"policyTtl":"60"`} {
		mustFail(t, g, tAsk("l", `{"contact":`+tContactForm+`}`, bad), CodeRequestMalformed)
	}

	// The round limit: a policy's 5 does not lift the guard's 3, its 1
	// ends the request at the first wrong answer.
	wrong := `{"contact":{"action":"accept","content":{"name":"N","email":"not an email"}}}`
	tok := tokenOf(t, mustOK(t, g, tAsk("r", `{"contact":`+tContactForm+`}`, ""), "input_required"))
	mustFail(t, g, with(tResume("r1", tok, wrong), `,"policyMaxRounds":1`), CodeRoundsExceeded)
	tok2 := tokenOf(t, mustOK(t, g, with(tResume("r2", tok, wrong), `,"policyMaxRounds":5`), "input_required"))
	tok3 := tokenOf(t, mustOK(t, g, tResume("r3", tok2, wrong), "input_required"))
	mustFail(t, g, with(tResume("r4", tok3, wrong), `,"maxRounds":50,"policyMaxRounds":5`), CodeRoundsExceeded)

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
	done = mustOK(t, g, with(tResume("r7", tok, `{"contact":{"action":"accept","content":{"name":"N","email":"n@example.com"}}}`), `,"policyTtl":10,"policyMaxRounds":1`), "complete")
	if done["rememberSeconds"] != json.Number("900") {
		t.Fatalf("rememberSeconds under a narrower policy: %v", done["rememberSeconds"])
	}
}
