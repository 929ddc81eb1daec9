package host

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/redact/redacttest"
)

// Every type that holds answers, states, arguments or links keeps them
// out of every printing channel; the secrets here are real ones: answers
// and a requestState sealed by the guard.
func TestRedaction(t *testing.T) {
	ctx := context.Background()
	g := newGuard(t, EngineNative)
	const (
		email    = "zq-secret-mail-8812@example.com"
		name     = "Qx Secretname Zork"
		argument = "arg-secret-7731"
		link     = "https://localhost/connect/LINKsecret9931"
		progress = "progress-secret-4410"
	)
	req := &Request{Principal: "alice", Method: "tools/call", Target: "book", Arguments: json.RawMessage(`{"topic":"` + argument + `"}`),
		Capabilities: json.RawMessage(`{"elicitation":{"form":{},"url":{}}}`)}
	schema := json.RawMessage(`{"type":"object","properties":{"email":{"type":"string"},"name":{"type":"string"}},"required":["email"]}`)
	res, err := g.Ask(ctx, req, []InputRequest{Form("contact", "Who?", schema)}, WithProgress([]byte(progress)))
	if err != nil {
		t.Fatal(err)
	}
	state := res.RequestState
	retry := *req
	retry.RequestState = state
	retry.InputResponses = json.RawMessage(`{"contact":{"action":"accept","content":{"email":"` + email + `","name":"` + name + `"}}}`)
	out, err := g.Resume(ctx, &retry)
	if err != nil || out.Status != Complete {
		t.Fatalf("%v %v", out, err)
	}
	// The middle third of the state: any sizeable piece of it must not show.
	stateBit := state[len(state)/3 : 2*len(state)/3]

	t.Run("Request", func(t *testing.T) {
		redacttest.Check(t, retry, []string{argument, email, name, stateBit}, nil, "alice", "tools/call", "retry=true")
	})
	t.Run("Outcome", func(t *testing.T) {
		if len(out.AnswersDigest) != 64 {
			t.Fatalf("no answers digest: %q", out.AnswersDigest)
		}
		redacttest.Check(t, *out, []string{email, name, progress, out.AnswersDigest[:16]}, nil, "complete", out.OperationID, "[contact]")
	})
	t.Run("Outcome that asks again", func(t *testing.T) {
		again := Outcome{Status: InputRequired, OperationID: "op", Round: 2, InputRequired: res}
		redacttest.Check(t, again, []string{stateBit}, nil, "inputRequired=true")
	})
	t.Run("InputRequiredResult", func(t *testing.T) {
		type plain InputRequiredResult // the same fields without the methods
		wire, _ := json.Marshal(plain(*res))
		redacttest.Check(t, *res, []string{stateBit}, wire, "[contact]")
	})
	t.Run("InputRequest", func(t *testing.T) {
		redacttest.Check(t, URL("calendar", "Connect", link), []string{"LINKsecret9931"}, nil, "calendar")
	})
	t.Run("PolicyQuery", func(t *testing.T) {
		q := PolicyQuery{Principal: "alice", Method: "tools/call", Target: "connect", Inputs: []InputRequest{URL("calendar", "Connect", link)}, TTL: time.Minute, MaxRounds: 2,
			Input: json.RawMessage(`{"inputs":{"calendar":{"params":{"url":"` + link + `"}}}}`)}
		redacttest.Check(t, q, []string{"LINKsecret9931"}, nil, "[calendar]")
	})
	t.Run("Keyring", func(t *testing.T) {
		k := NewKeyring()
		redacttest.Check(t, *k, []string{k.list()[0][len(keyPrefix):]}, nil, "1 keys")
	})
}
