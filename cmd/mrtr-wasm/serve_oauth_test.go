package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/internal/oidcop"
)

// TestServeOAuth runs serve as an OAuth protected resource of a real
// OpenID provider: client-credentials tokens reach the tools, a booking's
// state minted for one subject is refused for another, and a token for
// another resource gets 401 with the challenge.
func TestServeOAuth(t *testing.T) {
	op := oidcop.Start(t)
	s := startServe(t, "--oauth-issuer", op.Issuer, "--oauth-scopes", "mcp")
	resource := s.base + "/mcp" // the default audience
	tokAliceOAuth := op.Token(t, "agent-alice", resource, "mcp")
	tokBobOAuth := op.Token(t, "agent-bob", resource, "mcp")
	alice := connect(t, s, tokAliceOAuth, true, nil)
	bob := connect(t, s, tokBobOAuth, true, nil)
	args := map[string]any{"topic": markTopic}

	r1 := first(t, alice, args)
	contact := mcp.InputResponseMap{"contact": accept(map[string]any{"name": markName, "email": markEmail})}
	// Bob's token with Alice's state: refused.
	if _, err := call(bob, args, r1.RequestState, contact); err == nil || !strings.Contains(err.Error(), "requestState") {
		t.Fatalf("bob resumed alice's round: %v", err)
	}
	r2, err := call(alice, args, r1.RequestState, contact)
	r2 = needsInput(t, r2, err, "slot")
	ep := r2.InputRequests["slot"].(*mcp.ElicitParams)
	r3, err := call(alice, args, r2.RequestState, mcp.InputResponseMap{"slot": accept(map[string]any{"slot": firstSlot(t, ep.RequestedSchema), "confirm": true})})
	if err != nil || r3.NeedsInput() || r3.IsError {
		t.Fatalf("final round: %v %+v", err, r3)
	}
	bs := bookings(t, alice)
	if len(bs) != 1 || bs[0]["email"] != markEmail {
		t.Fatalf("alice's bookings: %v", bs)
	}
	if len(bookings(t, bob)) != 0 {
		t.Fatal("bob sees alice's booking")
	}

	// Another resource's token: 401, pointing at the metadata.
	req, _ := http.NewRequest("POST", resource, strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+op.Token(t, "agent-alice", "http://127.0.0.1:1/mcp", "mcp"))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	ch := res.Header.Get("WWW-Authenticate")
	if res.StatusCode != 401 || !strings.Contains(ch, `resource_metadata="`+s.base+`/.well-known/oauth-protected-resource/mcp"`) || !strings.Contains(ch, `scope="mcp"`) {
		t.Fatalf("wrong audience: %d %q", res.StatusCode, ch)
	}
	res, err = http.Get(s.base + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var m struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Resource != resource || m.AuthorizationServers[0] != op.Issuer {
		t.Fatalf("metadata: %v %s", err, b)
	}
	for _, tok := range []string{tokAliceOAuth, tokBobOAuth} {
		if strings.Contains(s.logs.String(), strings.Split(tok, ".")[2]) {
			t.Fatal("a token reached the logs")
		}
	}
	if !strings.Contains(s.logs.String(), `"principal":"`+op.Issuer+`#agent-alice"`) {
		t.Fatal("the log does not name the principal iss#sub")
	}
}
