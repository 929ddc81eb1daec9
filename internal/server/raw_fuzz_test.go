package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzObjectScanner: on any input the scanner neither panics nor reads
// past it; on a JSON object it finds exactly the members encoding/json
// finds, byte for byte, and refuses it only for a key given twice (up to
// case).
func FuzzObjectScanner(f *testing.F) {
	for _, s := range []string{
		`{}`, ` { "a" : 1 } `, `{"a":"}\"{","b":[1,{"c":"]"}],"d":null}`, `{"a":1,"a":2}`, `{"a":1,"A":2}`,
		`{"\u0061":1,"a":2}`, `{"requestState":1,"reque\u017ftState":2}`, `{"\u212a":1,"k":2}`, `{"x":{"y":1}}x`, `{"a":tru}`, `[1]`, `{"a":1,}`, `{"inputResponses":{"k":{"action":"accept"}}}`,
		`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"K3":0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkScanner)
}

// TestObjectScannerMutations runs checkScanner on random edits of the
// seeds, for machines where `go test -fuzz` is too slow to run.
func TestObjectScannerMutations(t *testing.T) {
	seeds := []string{`{"a":"}\"{","b":[1,{"c":"]"}],"d":null}`, `{"inputResponses":{"k":{"action":"accept","content":{"n":1.5e3,"s":"\u00e9"}}},"arguments":[true,false]}`}
	const alphabet = "{}[]\",:\\ aAbB1e-.tn\u0000"
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		b := []byte(seeds[i%len(seeds)])
		for n := 1 + r.IntN(3); n > 0; n-- {
			at := r.IntN(len(b))
			switch r.IntN(3) {
			case 0:
				b[at] = alphabet[r.IntN(len(alphabet))]
			case 1:
				b = append(b[:at], b[at+1:]...)
			default:
				b = append(b[:at], append([]byte{alphabet[r.IntN(len(alphabet))]}, b[at:]...)...)
			}
			if len(b) == 0 {
				b = []byte("{")
			}
		}
		checkScanner(t, b)
	}
}

func checkScanner(t *testing.T, b []byte) {
	checkOneWalk(t, b)
	checkOneWalk(t, append(append([]byte(`{"jsonrpc":"2.0","id":1,"params":`), b...), '}'))
	{
		var sc objectScanner
		got := map[string][]byte{}
		err := sc.members(b, "x", func(k string, v []byte) { got[k] = v })
		var want map[string]json.RawMessage
		if !utf8.Valid(b) || json.Unmarshal(b, &want) != nil {
			return // not one JSON object: whatever the scanner said, the SDK refuses it
		}
		// Duplicates as encoding/json matches names: strings.EqualFold.
		var keys []string
		dupe := false
		d := json.NewDecoder(bytes.NewReader(b))
		d.Token()
		for d.More() {
			tok, _ := d.Token()
			k := tok.(string)
			for _, prev := range keys {
				dupe = dupe || strings.EqualFold(prev, k)
			}
			keys = append(keys, k)
			var skip json.RawMessage
			_ = d.Decode(&skip)
		}
		if dupe {
			if !errors.Is(err, errAmbiguous) {
				t.Fatalf("duplicate keys not refused: %s (%v)", b, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("a JSON object refused: %s: %v", b, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d members, want %d: %s", len(got), len(want), b)
		}
		for k, v := range want {
			if !bytes.Equal(got[k], v) {
				t.Fatalf("member %q = %s, want %s", k, got[k], v)
			}
		}
	}
}

// checkOneWalk checks that scanMessage, which reads the params in the
// same walk as the message, finds what the message scan followed by
// scanParams over its params finds, on any JSON (the SDK refuses the rest
// before a handler runs, whatever the scans said).
func checkOneWalk(t *testing.T, b []byte) {
	m, ok, err := scanMessage(b)
	if !json.Valid(b) {
		return
	}
	var sc objectScanner
	var params []byte
	err2 := sc.members(b, "the message", func(k string, v []byte) {
		if k == "params" {
			params = v
		}
	})
	if ok2 := err2 == nil || errors.Is(err2, errAmbiguous); ok != ok2 || errors.Is(err, errAmbiguous) != errors.Is(err2, errAmbiguous) {
		t.Fatalf("%s: one walk says %v %v, two say %v", b, ok, err, err2)
	}
	if !ok || err != nil {
		return
	}
	if !bytes.Equal(m.params, params) {
		t.Fatalf("%s: params %s, want %s", b, m.params, params)
	}
	rc, perr := scanParams(params)
	if (m.paramsErr == nil) != (perr == nil) || errors.Is(m.paramsErr, errAmbiguous) != errors.Is(perr, errAmbiguous) {
		t.Fatalf("%s: params error %v, want %v", b, m.paramsErr, perr)
	}
	if perr != nil {
		return
	}
	if m.call == nil || !bytes.Equal(m.call.arguments, rc.arguments) || !bytes.Equal(m.call.inputResponses, rc.inputResponses) ||
		!bytes.Equal(m.call.capabilities, rc.capabilities) || len(m.call.meta) != len(rc.meta) {
		t.Fatalf("%s: params read %+v, want %+v", b, m.call, rc)
	}
}
