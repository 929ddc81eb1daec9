// Package host runs the mrtr-wasm guard for a Go MCP server.
//
// An MCP 2026-07-28 tool that needs one more answer from the user returns
// an InputRequiredResult; the client asks the user and retries the same
// call with inputResponses and the requestState echoed back. The guard
// makes that safe:
//
//   - Ask lints what is about to be asked (flat forms only, never a
//     secret in a form, URL mode done right, only modes the client
//     declared) and seals the requestState: PASETO v4.local, bound to the
//     principal, method, target, arguments and audience, short-lived.
//   - Resume opens the state (one opaque error for every tamper, with an
//     internal reason for logs), validates every answer against the
//     schema that was asked, re-asks for what is missing or wrong, and
//     tells complete from declined from cancelled.
//
// The checks run in guard.wasm through wazero (EngineWasm, the default),
// the same module the Node and edge SDKs run, or natively (EngineNative).
//
//	g, err := host.New(ctx, host.WithKeys(keys), host.WithAudience("crm.example"))
//	req := &host.Request{Principal: user, Method: "tools/call", Target: "book",
//		Arguments: args, Capabilities: caps, InputResponses: responses, RequestState: state}
//	if !req.IsRetry() {
//		return g.Ask(ctx, req, []host.InputRequest{host.Form("contact", "Who?", schema)})
//	}
//	out, err := g.Resume(ctx, req)
//	switch out.Status { case host.Complete: …; case host.InputRequired: return out.InputRequired }
package host
