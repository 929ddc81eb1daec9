package rawjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
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

// TestFoldName: FoldName agrees with strings.EqualFold, which is how
// encoding/json matches member names.
func TestFoldName(t *testing.T) {
	names := []string{"requestState", "REQUESTSTATE", "reque\u017ftState", "requeststate", "request_state", "\u212aey", "key", "KEY", "kex",
		"\u00e9t\u00e9", "\u00c9T\u00c9", "\u03c3\u03c2", "\u03a3\u03a3", "", "a", "\u017f", "s", "S", "\u1e9e", "\u00df"}
	for _, a := range names {
		for _, b := range names {
			if got, want := FoldName(a) == FoldName(b), strings.EqualFold(a, b); got != want {
				t.Errorf("%q, %q: FoldName equal %v, EqualFold %v", a, b, got, want)
			}
		}
	}
}

func FuzzFoldName(f *testing.F) {
	f.Add("requestState", "reque\u017ftState")
	f.Add("\u212a", "k")
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := FoldName(a) == FoldName(b), strings.EqualFold(a, b); got != want {
			t.Fatalf("%q, %q: FoldName equal %v, EqualFold %v", a, b, got, want)
		}
	})
}

// manyMembers is an object of n members with short distinct keys.
func manyMembers(n int) []byte {
	b := []byte{'{'}
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, fmt.Sprintf(`"%x":0`, i)...)
	}
	return append(b, '}')
}

func TestObjectRepeatsAmongManyMembers(t *testing.T) {
	for _, n := range []int{linearDupScan - 1, linearDupScan, linearDupScan + 1, 1000} {
		b := manyMembers(n)
		ms, err := Object(b)
		if err != nil || len(ms) != n {
			t.Fatalf("%d distinct members: %d, %v", n, len(ms), err)
		}
		for _, rep := range []int{0, n / 2, n - 1} {
			d := append(b[:len(b)-1:len(b)-1], fmt.Sprintf(`,"%x":1}`, rep)...)
			if _, err := Object(d); err != ErrDupKey {
				t.Errorf("%d members, key %x again at the end: %v, want ErrDupKey", n, rep, err)
			}
		}
	}
	// A repeat spelt with an escape is the same key.
	b := manyMembers(100)
	d := append(b[:len(b)-1:len(b)-1], `,"\u0035":1}`...)
	if _, err := Object(d); err != ErrDupKey {
		t.Errorf("escaped repeat: %v, want ErrDupKey", err)
	}
}

// BenchmarkObjectManyMembers is a 1 MiB object of short keys, as any
// client can send: checking each key against every earlier one took
// 14.6 s on it.
func BenchmarkObjectManyMembers(b *testing.B) {
	var n int
	for n = 1000; len(manyMembers(n)) < 1<<20; n *= 2 {
	}
	obj := manyMembers(n)
	b.SetBytes(int64(len(obj)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Object(obj); err != nil {
			b.Fatal(err)
		}
	}
}
