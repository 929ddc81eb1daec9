package rawjson

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestGet(t *testing.T) {
	obj := []byte(` { "a" : 1 , "b\u0063":{"x":[1,"}",{"y":"\"]"}]}, "d":"e\"f", "n":null,"t":true,"s":-1.5e3 } `)
	for key, want := range map[string]string{"a": `1`, "bc": `{"x":[1,"}",{"y":"\"]"}]}`, "d": `"e\"f"`, "n": `null`, "t": `true`, "s": `-1.5e3`} {
		if v, ok := Get(obj, key); !ok || string(v) != want {
			t.Errorf("Get(%q) = %s %v, want %s", key, v, ok, want)
		}
	}
	if _, ok := Get(obj, "A"); ok {
		t.Error("keys match exactly")
	}
	if s, ok := String([]byte(`"e\"f"`)); !ok || s != `e"f` {
		t.Errorf("String = %q", s)
	}
	if _, ok := Get([]byte(`{"a":1,"a":2}`), "a"); ok {
		t.Error("a repeated key is refused")
	}
	for _, bad := range []string{``, `[]`, `"x"`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":"x`, `{"a":[1}`} {
		Get([]byte(bad), "a") // must not panic
	}
}

func TestMayContain(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{{`{"resultType":"input_required"}`, true}, {`{"resultType":"input\u005frequired"}`, true}, {`{"resultType":"complete","text":"a\nb"}`, false}} {
		if !json.Valid([]byte(c.s)) {
			t.Fatalf("bad case %s", c.s)
		}
		if got := MayContain([]byte(c.s), "input_required"); got != c.want {
			t.Errorf("MayContain(%s) = %v", c.s, got)
		}
	}
}

// FuzzGet: on a valid JSON object without repeated keys, Get finds every
// member encoding/json sees, with the same value.
func FuzzGet(f *testing.F) {
	f.Add([]byte(`{"id":1,"result":{"resultType":"input_required"},"x":"\u0041"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m map[string]json.RawMessage
		if !utf8.Valid(b) || json.Unmarshal(b, &m) != nil || m == nil { // encoding/json turns bad UTF-8 into U+FFFD
			return
		}
		if _, err := Object(b); err != nil {
			return // a repeated key
		}
		for k, v := range m {
			got, ok := Get(b, k)
			if !ok || !json.Valid(got) || len(got) != len(bytes.TrimSpace(v)) {
				t.Fatalf("member %q: %q, encoding/json %q", k, got, v)
			}
		}
	})
}
