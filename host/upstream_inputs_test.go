package host

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestUpstreamInputsAsDecoded: the member-by-member read of an upstream's
// input requests gives what encoding/json gives, and leaves what it cannot
// read exactly to it.
func TestUpstreamInputsAsDecoded(t *testing.T) {
	decoded := func(resp string) []InputRequest {
		in, err := upstreamInputsDecoded(json.RawMessage(resp))
		if err != nil {
			return nil
		}
		return in
	}
	for _, resp := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"b":{"method":"elicitation/create","params":{"x":1}},"a":{"params":null,"method":"roots/list"}}}}`,
		`{"id":1,"result":{"inputRequests":{"\u0062":{"method":"elicitation\/create"}}}}`,
		`{"id":1,"Result":{"InputRequests":{"a":{"Method":"m","PARAMS":{}}}}}`,
		`{"id":1,"result":{"inputRequests":{}}}`,
		`{"id":1,"result":{}}`,
		`{"id":1,"result":{"inputRequests":{"a":{"method":1}}}}`,
	} {
		got, err := upstreamInputs(json.RawMessage(resp))
		want := decoded(resp)
		if want == nil || len(want) == 0 {
			if err == nil && len(got) != 0 {
				t.Errorf("%s: got %+v, want none", resp, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v %v, want %+v", resp, got, err, want)
		}
	}
}
