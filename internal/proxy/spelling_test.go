package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

// TestSpelledInputRequiredIsSealed: an upstream that spells input_required
// with a \u escape, or repeats resultType, still has its round sealed or
// refused: its own requestState never reaches the client.
func TestSpelledInputRequiredIsSealed(t *testing.T) {
	g := newGuard(t)
	form := `"inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}},"requestState":"upstream-own"`
	for name, result := range map[string]string{
		"escaped":         `{"resultType":"input\u005frequired",` + form + `}`,
		"repeated":        `{"resultType":"complete","resultType":"input_required",` + form + `}`,
		"repeated result": `{"content":[]},"result":{"resultType":"input_required",` + form + `}`,
		// A client decoding with encoding/json reads names in any case and
		// keeps the last.
		"resultType in another case": `{"resultType":"complete","content":[],"RESULTTYPE":"input_required",` + form + `}`,
		"result in another case":     `{"content":[]},"RESULT":{"resultType":"input_required",` + form + `}`,
		"result with a long s":       `{"content":[]},"re\u017fult":{"resultType":"input_required",` + form + `}`,
	} {
		t.Run(name, func(t *testing.T) {
			up := rpcServer(t, func(w http.ResponseWriter, body []byte) {
				if isToolsList(body) {
					writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[]}}`)
					return
				}
				writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":`+result+`}`)
			})
			base, _ := newProxy(t, g, httpUpstream(t, up.URL))
			m, _ := callTool(t, base, "t", `{}`, "")
			if bytes.Contains(m.Result, []byte("upstream-own")) {
				t.Fatalf("the upstream's own state reached the client: %s", m.Result)
			}
			if m.Error == nil && !bytes.Contains(m.Result, []byte(`"isError":true`)) {
				sealedState(t, m) // sealed, else refused
			}
		})
	}
}

func TestServerRequestSpellings(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"elicitation/create"}`:        true,
		`{"jsonrpc":"2.0","\u0069d":1,"method":"elicitation/create"}`:   true,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"elicitation/create"}`: true,
		`{"jsonrpc":"2.0","id":null,"method":"notifications/progress"}`: false,
		`{"jsonrpc":"2.0","method":"notifications/progress"}`:           false,
		`{"jsonrpc":"2.0","id":1,"result":{}}`:                          false,
		`{"jsonrpc":"2.0","ID":1,"method":"elicitation/create"}`:        true,
		`{"jsonrpc":"2.0","id":1,"METHOD":"elicitation/create"}`:        true,
		`{"jsonrpc":"2.0","Id":7,"method":"notifications/progress"}`:    true,
		`{"jsonrpc":"2.0","method":"notifications/message","x":"ID"}`:   false,
	} {
		if got := isServerRequest([]byte(raw)); got != want {
			t.Errorf("isServerRequest(%s) = %v", raw, got)
		}
	}
}

// FuzzClientReadings: whatever a client makes of an upstream's message,
// with exact member names (a JavaScript or Python client) or names in any
// case (Go's encoding/json), the last copy of a repeated member winning,
// an input_required result or a server-to-client request never gets past
// isInputRequired or isServerRequest unseen.
func FuzzClientReadings(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","RESULTTYPE":"input_required"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[]},"Result":{"resultType":"input_required"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input\u005frequired"}}`,
		`{"jsonrpc":"2.0","ID":1,"method":"elicitation/create","params":{}}`,
		`{"jsonrpc":"2.0","id":null,"method":"notifications/progress","Id":3}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"id"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var anyCase struct {
			ID     json.RawMessage `json:"id"`
			Method any             `json:"method"`
			Result *struct {
				ResultType any `json:"resultType"`
			} `json:"result"`
		}
		var exact map[string]json.RawMessage
		_ = json.Unmarshal(b, &anyCase)
		_ = json.Unmarshal(b, &exact)
		var exactResult map[string]json.RawMessage
		_ = json.Unmarshal(exact["result"], &exactResult)
		var exactType, exactMethod any
		_ = json.Unmarshal(exactResult["resultType"], &exactType)
		_ = json.Unmarshal(exact["method"], &exactMethod)

		asks := exactType == "input_required" || (anyCase.Result != nil && anyCase.Result.ResultType == "input_required")
		if asks && !isInputRequired(b) {
			t.Fatalf("a client reads an input_required result the proxy would relay as is: %s", b)
		}
		hasID := func(id json.RawMessage) bool { return len(id) > 0 && string(id) != "null" }
		isReq := func(m any, id json.RawMessage) bool { s, _ := m.(string); return s != "" && hasID(id) }
		if (isReq(exactMethod, exact["id"]) || isReq(anyCase.Method, anyCase.ID)) && !isServerRequest(b) {
			t.Fatalf("a client reads a request the proxy would relay as a notification: %s", b)
		}
	})
}
