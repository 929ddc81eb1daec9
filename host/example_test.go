package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/mrtr-wasm/mrtr-wasm/host"
)

// The README's handler, run end to end through guard.wasm: the first call
// asks, the client answers once with a wrong email (the guard asks again,
// naming the field), then correctly (complete, with the answers). The
// client's part is played inline.
func Example() {
	ctx := context.Background()
	g, err := host.New(ctx, host.WithKeys(host.NewKeyring()), host.WithAudience("crm.example.com"), host.WithPoolSize(1))
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close(ctx)

	schema := json.RawMessage(`{"type":"object","properties":{` +
		`"name":{"type":"string","title":"Your name"},` +
		`"email":{"type":"string","title":"Work email","format":"email"}},` +
		`"required":["name","email"]}`)
	req := &host.Request{Principal: "alice", Method: "tools/call", Target: "book_demo_call",
		Arguments: json.RawMessage(`{"topic":"pricing"}`), Capabilities: json.RawMessage(`{"elicitation":{"form":{}}}`)}

	// First call: ask.
	ir, err := g.Ask(ctx, req, []host.InputRequest{host.Form("contact", "Who should we book?", schema)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ir.ResultType, len(ir.InputRequests), "request")

	// The client retries with the state and a wrong email.
	req.RequestState = ir.RequestState
	req.InputResponses = json.RawMessage(`{"contact":{"action":"accept","content":{"name":"Ada","email":"ada-at-example"}}}`)
	out, err := g.Resume(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Status, "round", out.Round)

	// Again, with the new state and a valid email.
	req.RequestState = out.InputRequired.RequestState
	req.InputResponses = json.RawMessage(`{"contact":{"action":"accept","content":{"name":"Ada","email":"ada@example.com"}}}`)
	out, err = g.Resume(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	var contact struct{ Name, Email string }
	if err := out.Content("contact", &contact); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Status, contact.Name, contact.Email, len(out.OperationID) > 0)

	// The same state sent again with other arguments is refused.
	req.Arguments = json.RawMessage(`{"topic":"something else"}`)
	_, err = g.Resume(ctx, req)
	if e, ok := host.AsError(err); ok {
		fmt.Println(e.JSONRPCCode(), e.Message)
	}
	// Output:
	// input_required 1 request
	// input_required round 2
	// complete Ada ada@example.com true
	// -32602 invalid or expired requestState
}
