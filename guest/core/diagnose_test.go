package core

// The reason a refused state gets is a log label and a metric that
// operators alert on, so a client must not be able to choose it.

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

// flipBit returns token with bit of byte i of its decoded body (nonce ||
// ciphertext || tag) flipped, footer untouched.
func flipBit(t *testing.T, token string, i int, bit uint) string {
	t.Helper()
	rest := strings.TrimPrefix(token, v4LocalHeader)
	body, footer, _ := strings.Cut(rest, ".")
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		t.Fatal(err)
	}
	raw[i] ^= 1 << bit
	return v4LocalHeader + base64.RawURLEncoding.EncodeToString(raw) + "." + footer
}

// plaintextOf decrypts without verifying, as an attacker who knows the
// payload layout would predict it.
func plaintextOf(t *testing.T, token string) []byte {
	t.Helper()
	pt, err := v4LocalDecryptUnverified(nil, (*[32]byte)(tKeyABytes), []byte(token))
	if err != nil {
		t.Fatal(err)
	}
	return pt
}

// TestDiagnoseBitFlipsInBindings flips every bit of every binding's bytes
// in the ciphertext (and of the rest of the body). XChaCha20 flips the same
// plaintext bit, so many flips still decrypt to a readable payload whose
// binding differs from the call's; each must still be "tampered".
func TestDiagnoseBitFlipsInBindings(t *testing.T) {
	g := newConfigured(t, "")
	tok := tokenOf(t, mustOK(t, g, tAsk("flip", `{"contact":`+tContactForm+`}`, ""), "input_required"))
	pt := plaintextOf(t, tok)
	bodyLen := v4NonceSize + len(pt) + v4TagSize

	inBinding := make([]bool, len(pt))
	for _, k := range []string{"aud", "sub", "method", "target", "args"} {
		at := bytes.Index(pt, []byte(`"`+k+`":"`))
		if at < 0 {
			t.Fatalf("no %q in the payload: %s", k, pt)
		}
		start := at + len(k) + 4
		end := start + bytes.IndexByte(pt[start:], '"')
		for j := start; j < end; j++ {
			inBinding[j] = true
		}
	}
	readable := 0 // flips the old, unauthenticated diagnose would have named
	for i := 0; i < bodyLen; i++ {
		for bit := uint(0); bit < 8; bit++ {
			bad := flipBit(t, tok, i, bit)
			mustReason(t, g, tOpen(bad), ReasonTampered)
			if i < v4NonceSize || i >= v4NonceSize+len(pt) || !inBinding[i-v4NonceSize] {
				continue
			}
			var sp parser
			root, err := sp.parse(plaintextOf(t, bad), stateMaxDepth)
			if err == nil && sp.kindOf(root) == jObject {
				readable++
				// Also presented by whoever the flip names: still tampered.
				if sub, _ := sp.string(sp.get(root, "sub")); sub != "alice" && sub != "" {
					mustReason(t, g, tcall{op: "open", principal: sub, rest: `,"requestState":` + tJSON(bad)}.env(), ReasonTampered)
				}
			}
		}
	}
	if readable < 100 {
		t.Fatalf("only %d binding flips decrypted to a readable payload: the test no longer shows the attack", readable)
	}
}

// TestDiagnoseChosenBinding: an attacker who knows the plaintext XORs the
// ciphertext so that the state claims another principal or target of the
// same length. Without the MAC check that read as "principal"/"target".
func TestDiagnoseChosenBinding(t *testing.T) {
	g := newConfigured(t, "")
	tok := tokenOf(t, mustOK(t, g, tAsk("chosen", `{"contact":`+tContactForm+`}`, ""), "input_required"))
	pt := plaintextOf(t, tok)
	for _, c := range []struct{ from, to string }{
		{`"sub":"alice"`, `"sub":"bobby"`},
		{`"target":"book_demo_call"`, `"target":"drop_all_rows!"`},
		{`"method":"tools/call"`, `"method":"tools/exec"`},
	} {
		at := bytes.Index(pt, []byte(c.from))
		if at < 0 || len(c.from) != len(c.to) {
			t.Fatalf("bad case %q", c.from)
		}
		rest := strings.TrimPrefix(tok, v4LocalHeader)
		body, footer, _ := strings.Cut(rest, ".")
		raw, _ := base64.RawURLEncoding.DecodeString(body)
		for j := range c.from {
			raw[v4NonceSize+at+j] ^= c.from[j] ^ c.to[j]
		}
		bad := v4LocalHeader + base64.RawURLEncoding.EncodeToString(raw) + "." + footer
		if !bytes.Contains(plaintextOf(t, bad), []byte(c.to)) {
			t.Fatalf("the edit did not land: %s", plaintextOf(t, bad))
		}
		mustReason(t, g, tOpen(bad), ReasonTampered)
	}
}

// TestDiagnoseGenuineRebinding: an intact state presented with other
// bindings still names the one that differs.
func TestDiagnoseGenuineRebinding(t *testing.T) {
	g := newConfigured(t, "")
	tok := tokenOf(t, mustOK(t, g, tAsk("rebind", `{"contact":`+tContactForm+`}`, ""), "input_required"))
	mustOK(t, g, tOpen(tok), "open")
	mustReason(t, g, tcall{op: "open", principal: "bob", rest: `,"requestState":` + tJSON(tok)}.env(), ReasonPrincipal)
	mustReason(t, g, tcall{op: "open", target: "list_bookings", rest: `,"requestState":` + tJSON(tok)}.env(), ReasonTarget)
	mustReason(t, g, tcall{op: "open", method: "prompts/get", rest: `,"requestState":` + tJSON(tok)}.env(), ReasonMethod)
	mustReason(t, g, tcall{op: "open", args: `{"topic":"other"}`, rest: `,"requestState":` + tJSON(tok)}.env(), ReasonArguments)
	other := New()
	mustOK(t, other, strings.Replace(tConfigure([]string{tKeyA}, ""), tAudience, "elsewhere.example", 1), "")
	mustReason(t, other, tOpen(tok), ReasonAudience)
}
