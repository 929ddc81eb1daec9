package proxy

import (
	"encoding/json"
	"testing"
)

// TestRewriteParamsKeepsTheClientsBytes: dropping the answers given ahead
// (and later adding them back with the sealed state) keeps every other
// member as the client wrote it, names with escapes and spacing included:
// the guard binds to, and the upstream gets, the client's bytes.
func TestRewriteParamsKeepsTheClientsBytes(t *testing.T) {
	in := `{"jsonrpc":"2.0", "id" : 7,"method":"tools/call","params":{"n\u0061me" :"book", "argu\u006dents": {"topic" : "pricing"},"inputResponses":{"a":{"action":"accept"}},"_meta":{}}}`
	got, err := withoutParams([]byte(in), "inputResponses", "requestState")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id" : 7,"method":"tools/call","params":{"n\u0061me" :"book","argu\u006dents": {"topic" : "pricing"},"_meta":{}}}`
	if string(got) != want {
		t.Fatalf("without the answers:\n got %s\nwant %s", got, want)
	}
	back, err := withParams(got, []byte(`"inputResponses":{}`), []byte(`,"requestState":"s"`))
	if err != nil {
		t.Fatal(err)
	}
	if want := want[:len(want)-2] + `,"inputResponses":{},"requestState":"s"}}`; string(back) != want || !json.Valid(back) {
		t.Fatalf("with the state:\n got %s\nwant %s", back, want)
	}
}
