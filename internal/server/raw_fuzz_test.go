package server

import (
	"bytes"
	"encoding/json"
	"errors"
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
		`{"\u0061":1,"a":2}`, `{"x":{"y":1}}x`, `{"a":tru}`, `[1]`, `{"a":1,}`, `{"inputResponses":{"k":{"action":"accept"}}}`,
		`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"K3":0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var sc objectScanner
		got := map[string][]byte{}
		err := sc.members(b, "x", func(k string, v []byte) { got[k] = v })
		var want map[string]json.RawMessage
		if !utf8.Valid(b) || json.Unmarshal(b, &want) != nil {
			return // not one JSON object: whatever the scanner said, the SDK refuses it
		}
		keys := map[string]int{}
		dupe := false
		d := json.NewDecoder(bytes.NewReader(b))
		d.Token()
		for d.More() {
			tok, _ := d.Token()
			k := strings.ToLower(tok.(string))
			keys[k]++
			dupe = dupe || keys[k] > 1
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
	})
}
