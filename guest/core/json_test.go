package core

// The strict JSON parser: RFC 8259 exactly, with its own codes for what
// general decoders let through, checked against encoding/json.

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func parseDoc(src string) (*parser, int32, *Error) {
	p := &parser{}
	root, err := p.parse([]byte(src), defaultMaxDepth)
	return p, root, err
}

// treeOf converts node i to the values encoding/json produces with
// UseNumber.
func treeOf(p *parser, i int32) any {
	n := p.node(i)
	switch n.kind {
	case jNull:
		return nil
	case jTrue:
		return true
	case jFalse:
		return false
	case jNumber:
		return json.Number(n.str)
	case jString:
		return n.str
	case jArray:
		out := []any{}
		for _, m := range p.kids(i) {
			out = append(out, treeOf(p, m.val))
		}
		return out
	default:
		out := map[string]any{}
		for _, m := range p.kids(i) {
			out[m.key] = treeOf(p, m.val)
		}
		return out
	}
}

func TestParseTokens(t *testing.T) {
	for _, c := range []struct {
		in   string
		kind jkind
		str  string // decoded string or number literal
	}{
		{"null", jNull, ""}, {"true", jTrue, ""}, {"false", jFalse, ""},
		{" \t\r\n null \t\r\n", jNull, ""},
		{"0", jNumber, "0"}, {"-0", jNumber, "-0"}, {"7", jNumber, "7"}, {"-123", jNumber, "-123"},
		{"1.5", jNumber, "1.5"}, {"-0.0", jNumber, "-0.0"}, {"1e5", jNumber, "1e5"}, {"1E5", jNumber, "1E5"},
		{"1e+5", jNumber, "1e+5"}, {"1e-5", jNumber, "1e-5"}, {"-1.25E-10", jNumber, "-1.25E-10"},
		{"0e0", jNumber, "0e0"}, {"1e1000001", jNumber, "1e1000001"}, {" 42 ", jNumber, "42"},
		{`""`, jString, ""}, {`"abc"`, jString, "abc"}, {`"é😀\u007f"`, jString, "é😀\u007f"},
		{"\"\x7f\"", jString, "\x7f"}, {"\"\u2028\"", jString, "\u2028"},
		{`"\""`, jString, `"`}, {`"\\"`, jString, `\`}, {`"\/"`, jString, "/"},
		{`"\b\f\n\r\t"`, jString, "\b\f\n\r\t"},
		{`"\u0041"`, jString, "A"}, {`"\u00e9"`, jString, "é"}, {`"\u00E9"`, jString, "é"},
		{`"\u20AC"`, jString, "€"}, {`"\u0000"`, jString, "\x00"}, {`"\uFFFF"`, jString, "\uffff"},
		{`"\uD83D\uDE00"`, jString, "😀"}, {`"\ud83d\ude00"`, jString, "😀"},
		{`"\uD800\uDC00"`, jString, "\U00010000"}, {`"\uDBFF\uDFFF"`, jString, "\U0010FFFF"},
		{`"a\u0062c\n"`, jString, "abc\n"}, {`"x\\u0041"`, jString, `x\u0041`},
		{`"😀\uD83D\uDE00😀"`, jString, "😀😀😀"},
		{"[]", jArray, ""}, {"[ ]", jArray, ""}, {`[1,"a",null,[{}]]`, jArray, ""},
		{"{}", jObject, ""}, {"{ }", jObject, ""}, {`{"a":1,"b":[true]}`, jObject, ""},
		{"{\"\":0}", jObject, ""},
	} {
		p, root, err := parseDoc(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		n := p.node(root)
		if n.kind != c.kind || (c.kind == jNumber || c.kind == jString) && n.str != c.str {
			t.Errorf("%q: got %v %q, want %v %q", c.in, n.kind, n.str, c.kind, c.str)
		}
		if raw := string(p.raw(root)); raw != strings.Trim(c.in, " \t\r\n") {
			t.Errorf("%q: raw span %q", c.in, raw)
		}
		if !utf8.ValidString(n.str) {
			t.Errorf("%q: decoded to invalid UTF-8", c.in)
		}
	}
}

func TestParseRejects(t *testing.T) {
	deep := func(open, close string, n int) string { return strings.Repeat(open, n) + strings.Repeat(close, n) }
	for _, c := range []struct{ in, code string }{
		// Raw invalid UTF-8, anywhere.
		{"\"\xff\"", CodeInvalidUTF8}, {"\"\xc3\"", CodeInvalidUTF8}, {"\"\xc0\xaf\"", CodeInvalidUTF8},
		{"\"\xed\xa0\x80\"", CodeInvalidUTF8}, {"\"\xf4\x90\x80\x80\"", CodeInvalidUTF8},
		{"\xff", CodeInvalidUTF8}, {"[1,\xfe]", CodeInvalidUTF8}, {"{\"a\xff\":1}", CodeInvalidUTF8},
		// Escaped lone surrogates.
		{`"\uD800"`, CodeInvalidUTF8}, {`"\uDC00"`, CodeInvalidUTF8}, {`"\udfff"`, CodeInvalidUTF8},
		{`"\uD800x"`, CodeInvalidUTF8}, {`"\uD800\u0041"`, CodeInvalidUTF8}, {`"\uD800\uD800"`, CodeInvalidUTF8},
		{`"\uDC00\uD800"`, CodeInvalidUTF8}, {`"\uD800\n"`, CodeInvalidUTF8}, {`"\uD83D\uE000"`, CodeInvalidUTF8},
		{`{"\uD800":1}`, CodeInvalidUTF8}, {`"a\uDBFF"`, CodeInvalidUTF8},
		// Duplicate keys, also when only the escapes differ.
		{`{"a":1,"a":2}`, CodeDuplicateKey}, {`{"a":1,"b":2,"a":1}`, CodeDuplicateKey},
		{`{"x":{"a":1,"a":1}}`, CodeDuplicateKey}, {`{"a":1,"\u0061":2}`, CodeDuplicateKey},
		{`[{"":1,"":2}]`, CodeDuplicateKey},
		// Control characters in strings.
		{"\"\x00\"", CodeJSONSyntax}, {"\"\x01\"", CodeJSONSyntax}, {"\"\x1f\"", CodeJSONSyntax},
		{"\"a\tb\"", CodeJSONSyntax}, {"\"a\nb\"", CodeJSONSyntax}, {"\"\\n\x01\"", CodeJSONSyntax},
		{"{\"a\x02\":1}", CodeJSONSyntax},
		// Numbers.
		{"01", CodeJSONSyntax}, {"-01", CodeJSONSyntax}, {"00", CodeJSONSyntax}, {"[01]", CodeJSONSyntax},
		{"1.", CodeJSONSyntax}, {"-1.", CodeJSONSyntax}, {"1.e5", CodeJSONSyntax}, {".5", CodeJSONSyntax},
		{"-.5", CodeJSONSyntax}, {"-", CodeJSONSyntax}, {"-a", CodeJSONSyntax}, {"1e", CodeJSONSyntax},
		{"1e+", CodeJSONSyntax}, {"1E-", CodeJSONSyntax}, {"[1e]", CodeJSONSyntax}, {"+1", CodeJSONSyntax},
		{"0x10", CodeJSONSyntax}, {"1_000", CodeJSONSyntax}, {"Infinity", CodeJSONSyntax},
		{"-Infinity", CodeJSONSyntax}, {"NaN", CodeJSONSyntax}, {"nan", CodeJSONSyntax}, {"1.5.2", CodeJSONSyntax},
		{"--1", CodeJSONSyntax}, {"1e5e5", CodeJSONSyntax},
		// Trailing commas and other structure.
		{"[1,]", CodeJSONSyntax}, {`{"a":1,}`, CodeJSONSyntax}, {"[,]", CodeJSONSyntax}, {"[,1]", CodeJSONSyntax},
		{"{,}", CodeJSONSyntax}, {"[1,,2]", CodeJSONSyntax}, {`{"a"}`, CodeJSONSyntax}, {`{"a" 1}`, CodeJSONSyntax},
		{`{"a"::1}`, CodeJSONSyntax}, {`{1:2}`, CodeJSONSyntax}, {`{'a':1}`, CodeJSONSyntax}, {`{a:1}`, CodeJSONSyntax},
		{"[1 2]", CodeJSONSyntax}, {"[", CodeJSONSyntax}, {"{", CodeJSONSyntax}, {`{"a":`, CodeJSONSyntax},
		{"]", CodeJSONSyntax}, {"}", CodeJSONSyntax}, {`{"a":1]`, CodeJSONSyntax}, {`[1}`, CodeJSONSyntax},
		// Trailing data.
		{"1 2", CodeJSONSyntax}, {"{} {}", CodeJSONSyntax}, {"[]]", CodeJSONSyntax}, {"nulll", CodeJSONSyntax},
		{`"a""b"`, CodeJSONSyntax}, {"truefalse", CodeJSONSyntax}, {"0 0", CodeJSONSyntax}, {"{}\x00", CodeJSONSyntax},
		// Literals, strings, escapes.
		{"", CodeJSONSyntax}, {" \n\t", CodeJSONSyntax}, {"tru", CodeJSONSyntax}, {"nul", CodeJSONSyntax},
		{"True", CodeJSONSyntax}, {"NULL", CodeJSONSyntax}, {`"abc`, CodeJSONSyntax}, {`"abc\"`, CodeJSONSyntax},
		{`"\`, CodeJSONSyntax}, {`"\q"`, CodeJSONSyntax}, {`"\x41"`, CodeJSONSyntax}, {`"\'"`, CodeJSONSyntax},
		{`"\u12"`, CodeJSONSyntax}, {`"\u12G4"`, CodeJSONSyntax}, {`"\u"`, CodeJSONSyntax}, {`"\U0041"`, CodeJSONSyntax},
		{"\ufeff{}", CodeJSONSyntax}, {"/*c*/{}", CodeJSONSyntax}, {"{}//", CodeJSONSyntax}, {"\v1", CodeJSONSyntax},
		{"\u00a01", CodeJSONSyntax}, {"'a'", CodeJSONSyntax},
		// Depth: 64 levels parse (below), 65 do not.
		{deep("[", "]", defaultMaxDepth+1), CodeTooDeep},
		{strings.Repeat(`{"a":`, defaultMaxDepth+1) + "1" + strings.Repeat("}", defaultMaxDepth+1), CodeTooDeep},
		{deep(`[{"a":`, "}]", (defaultMaxDepth+1)/2+1), CodeTooDeep},
		{deep("[", "", 100000), CodeTooDeep},
	} {
		_, _, err := parseDoc(c.in)
		if err == nil || err.Code != c.code {
			t.Errorf("%.60q: got %v, want %s", c.in, err, c.code)
		}
		if err != nil && err.Code == CodeJSONSyntax && !regexp.MustCompile(` at byte \d+$`).MatchString(err.Message) {
			t.Errorf("%.60q: syntax message without a position: %q", c.in, err.Message)
		}
	}
}

func TestParseDepthLimit(t *testing.T) {
	for _, limit := range []int{1, 2, 16, defaultMaxDepth} {
		for _, shape := range [][2]string{{"[", "]"}, {`{"k":`, "}"}} {
			at := strings.Repeat(shape[0], limit) + "0" + strings.Repeat(shape[1], limit)
			over := strings.Repeat(shape[0], limit+1) + "0" + strings.Repeat(shape[1], limit+1)
			var p parser
			if _, err := p.parse([]byte(at), limit); err != nil {
				t.Errorf("depth %d at the limit: %v", limit, err)
			}
			if _, err := p.parse([]byte(over), limit); err == nil || err.Code != CodeTooDeep {
				t.Errorf("depth %d+1: got %v", limit, err)
			}
		}
	}
	// Scalars do not count as a level.
	var p parser
	if _, err := p.parse([]byte(`"x"`), 0); err != nil {
		t.Errorf("a scalar at depth limit 0: %v", err)
	}
}

func TestParserReuse(t *testing.T) {
	var p parser
	for i, doc := range []string{`{"a":[1,2,{"b":null}]}`, `[1`, `{"x":"y"}`, `{"a":1,"a":2}`, `[[[]]]`} {
		_, err1 := p.parse([]byte(doc), 8)
		_, _, err2 := parseDoc(doc)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("doc %d: a reused parser answers %v, a fresh one %v", i, err1, err2)
		}
	}
}

func TestCheckCaseKeys(t *testing.T) {
	for _, c := range []struct {
		in  string
		bad bool
	}{
		{`{}`, false}, {`{"a":1}`, false}, {`{"a":1,"b":2}`, false},
		{`{"a":1,"A":2}`, true}, {`{"email":1,"x":0,"EMAIL":2}`, true},
		{`{"k":1,"\u212a":2}`, true}, // KELVIN SIGN folds to k
		{`{"é":1,"É":2}`, true}, {`{"ß":1,"SS":2}`, false}, {`{"a1":1,"A2":2}`, false},
		{`{"contact":1,"Contact":2}`, true}, {`{"ab":1,"a":2,"b":3}`, false},
	} {
		p, root, err := parseDoc(c.in)
		if err != nil {
			t.Fatal(err)
		}
		cerr := p.checkCaseKeys(root, "form content")
		if (cerr != nil) != c.bad {
			t.Errorf("%s: got %v", c.in, cerr)
		}
		if cerr != nil && (cerr.Code != CodeCaseDuplicateKey || !strings.HasPrefix(cerr.Message, "form content ")) {
			t.Errorf("%s: %v", c.in, cerr)
		}
	}
}

func TestAppendString(t *testing.T) {
	for _, c := range [][2]string{
		{"", `""`}, {"abc", `"abc"`}, {"\"\\", `"\"\\"`}, {"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"\x00\x01\x1f", `"\u0000\u0001\u001f"`}, {"\x7f/é\u2028😀", "\"\x7f/é\u2028😀\""},
		// Not UTF-8: kept, so that the parser refuses an envelope a host
		// built from such a string (FuzzOpen holds it to that).
		{"a\x80b", "\"a\x80b\""},
	} {
		if got := string(appendString(nil, c[0])); got != c[1] {
			t.Errorf("%q: got %s, want %s", c[0], got, c[1])
		}
	}
	if got := quote(strings.Repeat("é", 40)); !strings.HasSuffix(got, "…\"") || !utf8.ValidString(got) {
		t.Errorf("quote does not cut long strings on a character boundary: %s", got)
	}
	// A message's quote is UTF-8 whatever it quotes.
	for in, want := range map[string]string{"a\x80b": "\"a\uFFFDb\"", "\xff\xfe\"": "\"\uFFFD\\\"\"", "é\xc3": "\"é\uFFFD\""} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// Found by FuzzCall: a URL parameter whose name percent-decodes to bytes
// that are not UTF-8 was quoted as is in lint's finding, and the
// response was not JSON.
func TestLintURLParameterNotUTF8(t *testing.T) {
	g := newConfigured(t, "")
	out := g.Call([]byte(`{"v":1,"op":"lint","params":{"mode":"url","message":"m","url":"https://a.example/#x%80token&y"}}`))
	if !utf8.Valid(out) || !json.Valid(out) {
		t.Fatalf("not JSON: %q", out)
	}
	if !bytes.Contains(out, []byte(`mrtr.url.credentials`)) || !bytes.Contains(out, []byte("x\uFFFDtoken")) {
		t.Errorf("want the credential finding, the name's bad byte as U+FFFD: %s", out)
	}
}

// --- the differential test against encoding/json --------------------------

var surrogateEscape = regexp.MustCompile(`\\u[dD][89abcdefABCDEF]`)

// dupKeys reports whether a document encoding/json accepts has an object
// with two equal (decoded) keys.
func dupKeys(doc []byte) bool {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber() // 1e309 is still JSON
	type frame struct {
		obj     bool
		wantKey bool
		keys    map[string]bool
	}
	var st []*frame
	done := func() {
		if len(st) > 0 && st[len(st)-1].obj {
			st[len(st)-1].wantKey = true
		}
	}
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		if len(st) > 0 && st[len(st)-1].obj && st[len(st)-1].wantKey {
			f := st[len(st)-1]
			if tok == json.Delim('}') {
				st = st[:len(st)-1]
				done()
				continue
			}
			k, _ := tok.(string)
			if f.keys[k] {
				return true
			}
			f.keys[k] = true
			f.wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			st = append(st, &frame{obj: true, wantKey: true, keys: map[string]bool{}})
		case json.Delim('['):
			st = append(st, &frame{})
		case json.Delim(']'):
			st = st[:len(st)-1]
			done()
		default:
			done()
		}
	}
}

// jsonCorpus generates n documents: random values in random layouts, and
// mutants of them (bytes deleted, inserted, replaced, truncated).
func jsonCorpus(n int) [][]byte {
	r := rand.New(rand.NewPCG(2026, 728))
	numbers := []string{"0", "-0", "1", "-1", "10", "1.5", "-0.25", "1e21", "1E+21", "1e-7", "0.000001", "333333333.33333329",
		"5e-324", "1.7976931348623157e308", "1e309", "-1e400", "1e-400", "9007199254740993", "4.50", "2e-3", "1E30", "123456789012345678901234567890"}
	strPieces := []string{"a", "Z", " ", "é", "😀", "\u2028", "\x7f", `\n`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`, `\t`, `\u0000`, `\u001f`,
		`\u00e9`, `\u20AC`, `\uD83D\uDE00`, `\ud800\udc00`, `\uFFFF`, `\uE000`, "\uE000", "\U0010FFFF", "k"}
	keys := []string{"a", "b", "A", "\\u0061", "", "é", "\\u00e9", "😀", "\uE000", "z", "key"}
	ws := []string{"", "", "", " ", "\n", "\t", "\r\n  "}
	var gen func(depth int) string
	gen = func(depth int) string {
		k := r.IntN(8)
		if depth >= 4 && k >= 6 {
			k = r.IntN(6)
		}
		switch k {
		case 0:
			return []string{"null", "true", "false"}[r.IntN(3)]
		case 1, 2:
			if r.IntN(3) == 0 {
				return string(rune('1'+r.IntN(9))) + strings.Repeat("0", r.IntN(30)) + []string{"", ".5", "e10", "E-3", ".125e+2"}[r.IntN(5)]
			}
			return numbers[r.IntN(len(numbers))]
		case 3, 4, 5:
			var b strings.Builder
			b.WriteByte('"')
			for i := r.IntN(5); i > 0; i-- {
				b.WriteString(strPieces[r.IntN(len(strPieces))])
			}
			b.WriteByte('"')
			return b.String()
		case 6:
			var parts []string
			for i := r.IntN(4); i > 0; i-- {
				parts = append(parts, ws[r.IntN(len(ws))]+gen(depth+1)+ws[r.IntN(len(ws))])
			}
			return "[" + strings.Join(parts, ",") + "]"
		default:
			var parts []string
			for i := r.IntN(4); i > 0; i-- {
				parts = append(parts, ws[r.IntN(len(ws))]+`"`+keys[r.IntN(len(keys))]+`"`+ws[r.IntN(len(ws))]+":"+gen(depth+1))
			}
			return "{" + strings.Join(parts, ",") + ws[r.IntN(len(ws))] + "}"
		}
	}
	tricky := []byte("{}[],:\"\\ 0123456789eE.+-tfnux\x01\xff\xc3\x80")
	var out [][]byte
	for len(out) < n {
		doc := []byte(ws[r.IntN(len(ws))] + gen(0) + ws[r.IntN(len(ws))])
		out = append(out, doc)
		for m := 0; m < 3 && len(out) < n && len(doc) > 0; m++ {
			d := bytes.Clone(doc)
			i := r.IntN(len(d))
			switch r.IntN(5) {
			case 0:
				d = append(d[:i], d[i+1:]...)
			case 1:
				d = append(d[:i], append([]byte{tricky[r.IntN(len(tricky))]}, d[i:]...)...)
			case 2:
				d[i] = tricky[r.IntN(len(tricky))]
			case 3:
				d = d[:i]
			default:
				j := i + r.IntN(len(d)-i)
				d = append(d[:j], append(bytes.Clone(d[i:j]), d[j:]...)...)
			}
			out = append(out, d)
		}
	}
	return out
}

func TestParseMatchesEncodingJSON(t *testing.T) {
	var accepted, refused int
	for _, doc := range jsonCorpus(20000) {
		p, root, err := parseDoc(string(doc))
		valid := json.Valid(doc)
		switch {
		case err == nil:
			accepted++
			if !valid || !utf8.Valid(doc) || dupKeys(doc) {
				t.Fatalf("%q: accepted, but encoding/json says valid=%v, duplicates=%v", doc, valid, dupKeys(doc))
			}
			want, derr := decodeJSON(doc)
			if derr != nil || !reflect.DeepEqual(treeOf(p, root), want) {
				t.Fatalf("%q: decoded\n %#v\nencoding/json\n %#v", doc, treeOf(p, root), want)
			}
		case err.Code == CodeInvalidUTF8:
			refused++
			if utf8.Valid(doc) && !surrogateEscape.Match(doc) {
				t.Fatalf("%q: invalid UTF-8 claimed for valid UTF-8 without surrogate escapes", doc)
			}
		case err.Code == CodeDuplicateKey:
			refused++
			if valid && !dupKeys(doc) {
				t.Fatalf("%q: duplicate key claimed, encoding/json sees none", doc)
			}
		case err.Code == CodeJSONSyntax:
			refused++
			if valid {
				t.Fatalf("%q: syntax error (%v), but encoding/json accepts it", doc, err)
			}
		default:
			t.Fatalf("%q: unexpected %v", doc, err)
		}
		if valid && err != nil && err.Code != CodeDuplicateKey && utf8.Valid(doc) && !surrogateEscape.Match(doc) {
			t.Fatalf("%q: valid JSON refused: %v", doc, err)
		}
	}
	if accepted < 3000 || refused < 3000 {
		t.Fatalf("corpus too one-sided: %d accepted, %d refused", accepted, refused)
	}
}

// TestAppendCompactRoundTrip: parse, compact, parse gives the same tree,
// and compacting again changes nothing.
func TestAppendCompactRoundTrip(t *testing.T) {
	n := 0
	for _, doc := range jsonCorpus(6000) {
		p, root, err := parseDoc(string(doc))
		if err != nil {
			continue
		}
		n++
		compact := p.appendCompact(nil, root)
		q, root2, err := parseDoc(string(compact))
		if err != nil {
			t.Fatalf("%q compacts to %q, which does not parse: %v", doc, compact, err)
		}
		if !reflect.DeepEqual(treeOf(p, root), treeOf(q, root2)) {
			t.Fatalf("%q: the compact form %q is another value", doc, compact)
		}
		if again := q.appendCompact(nil, root2); !bytes.Equal(again, compact) {
			t.Fatalf("compact is not idempotent: %q -> %q", compact, again)
		}
		var ref bytes.Buffer
		if json.Compact(&ref, doc) != nil || ref.Len() < len(compact) {
			t.Fatalf("%q: compact %q is longer than encoding/json's %q", doc, compact, ref.Bytes())
		}
	}
	if n < 1000 {
		t.Fatalf("only %d documents compacted", n)
	}
}

// TestParserStringsAliasTheSource documents why the zero-copy test below
// matters: unescaped strings and numbers point into the source buffer.
func TestParserStringsAliasTheSource(t *testing.T) {
	src := []byte(`{"key":"value","n":12,"e":"a\nb"}`)
	var p parser
	root, err := p.parse(src, 8)
	if err != nil {
		t.Fatal(err)
	}
	k := p.kids(root)
	for i := range src {
		src[i] = '#'
	}
	if k[0].key != "###" || p.node(k[0].val).str != "#####" || p.node(k[1].val).str != "##" {
		t.Fatalf("strings no longer alias the source (%q %q): update the zero-copy tests", k[0].key, p.node(k[0].val).str)
	}
	if p.node(k[2].val).str != "a\nb" {
		t.Fatal("escaped strings must be copies")
	}
}

// TestZeroCopyStringsSurviveBufferReuse calls Guard.Call with buffers that
// are overwritten afterwards, as guard_alloc's buffer is in wasm, and
// checks that the configuration (audience) and the form cache (property
// names, titles, findings) kept nothing that points into them: every later
// call answers exactly as a guard fed fresh buffers does.
func TestZeroCopyStringsSurviveBufferReuse(t *testing.T) {
	g, ref := New(), New()
	call := func(req string) []byte {
		t.Helper()
		buf := []byte(req)
		out := bytes.Clone(g.Call(buf))
		for i := range buf {
			buf[i] = "#\"x:{"[i%5]
		}
		want := run(ref, req)
		if !bytes.Equal(out, want) {
			t.Fatalf("differs from a guard fed fresh buffers:\n got %s\nwant %s", out, want)
		}
		checkResponse(t, out)
		return out
	}
	audience := "crm.example.com"
	call(`{"v":1,"op":"configure","keys":["` + tKeyA + `"],"audience":"` + audience + `"}`)
	// A schema with a title and fields, linted and cached from a buffer.
	schema := `{"type":"object","properties":{"fullName":{"type":"string","title":"Your full name","minLength":2},"workEmail":{"type":"string","title":"Work email","format":"email"},"plan":{"type":"string","enum":["basic","pro"]},"seats":{"type":"integer","minimum":1,"default":"x"}},"required":["fullName","workEmail"]}`
	call(`{"v":1,"op":"lint","schema":` + schema + `}`)
	form := `{"method":"elicitation/create","params":{"message":"Details?","requestedSchema":` + strings.Replace(schema, `"default":"x"`, `"default":2`, 1) + `}}`
	out := call(tAsk("zc1", `{"d":`+form+`}`, ""))
	resp := checkResponse(t, out)
	tok := tokenOf(t, resp)
	// Re-asks use the cached titles and property names.
	out = call(tResume("zc2", tok, `{"d":{"action":"accept","content":{"fullName":"A","workEmail":"nope","plan":"gold"}}}`))
	if !bytes.Contains(out, []byte("Your full name (fullName) must be at least 2 characters long")) ||
		!bytes.Contains(out, []byte("must be one of: basic, pro")) {
		t.Fatalf("re-ask lost its labels: %s", out)
	}
	tok2 := tokenOf(t, checkResponse(t, out))
	call(tResume("zc3", tok2, `{"d":{"action":"accept","content":{"fullName":"Ann","workEmail":"ann@example.com","seats":3}}}`))
	call(tOpen(tok2))
	call(`{"v":1,"op":"lint","schema":` + schema + `}`)
	// The audience kept from the configure buffer is bound into the state.
	g2 := New()
	mustOK(t, g2, `{"v":1,"op":"configure","keys":["`+tKeyA+`"],"audience":"`+audience+`"}`, "")
	mustOK(t, g2, tOpen(tok2), "open")
}

// TestFormCacheOwnsItsStrings looks inside a cache entry made from a buffer
// that is then overwritten: everything it keeps must be its own copy.
func TestFormCacheOwnsItsStrings(t *testing.T) {
	src := []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"workEmail":{"type":"string","title":"Work email","format":"email"},"pin":{"type":"string","title":"Card PIN"},"n":{"type":"integer","enum":[1]}}}`)
	g := New()
	var p parser
	root, err := p.parse(src, 16)
	if err != nil {
		t.Fatal(err)
	}
	e := g.formFor(&p, root)
	for i := range src {
		src[i] = '#'
	}
	if e.dialect != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("dialect %q", e.dialect)
	}
	want := []struct{ name, title, typ string }{{"workEmail", "Work email", "string"}, {"pin", "Card PIN", "string"}, {"n", "", "integer"}}
	if len(e.props) != len(want) {
		t.Fatalf("%d props", len(e.props))
	}
	for i, w := range want {
		fp := e.props[i]
		if fp.name != w.name || fp.title != w.title {
			t.Errorf("prop %d: name %q title %q", i, fp.name, fp.title)
		}
		if fp.typ != w.typ {
			t.Errorf("prop %d: typ %q aliases the request buffer (want %q)", i, fp.typ, w.typ)
		}
		if bytes.Contains(fp.raw, []byte("###")) {
			t.Errorf("prop %d: raw %q", i, fp.raw)
		}
	}
	var fields []string
	for _, f := range e.findings {
		fields = append(fields, f.field)
		if strings.Contains(f.message, "###") || strings.Contains(f.field, "#") {
			t.Errorf("finding %+v points into the buffer", f)
		}
	}
	if strings.Join(fields, ",") != "pin,n" {
		t.Errorf("findings on %v", fields)
	}
}

// wideObject is an object of n distinct keys.
func wideObject(n int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k`)
		b.WriteString(itoa(i))
		b.WriteString(`":0`)
	}
	b.WriteByte('}')
	return b.String()
}

// BenchmarkParseWideObject shows how the duplicate-key check grows with
// the number of keys in one object: ns/key should stay flat.
func BenchmarkParseWideObject(b *testing.B) {
	for _, n := range []int{1000, 4000, 16000} {
		src := []byte(wideObject(n))
		b.Run("keys="+itoa(n), func(b *testing.B) {
			var p parser
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, err := p.parse(src, 8); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
		})
	}
}

// TestSpecialInWord checks the eight-byte string scan against a byte loop:
// every byte value at every position, and random words.
func TestSpecialInWord(t *testing.T) {
	ref := func(w uint64) bool {
		for i := 0; i < 8; i++ {
			c := byte(w >> (8 * i))
			if c == '"' || c == '\\' || c < 0x20 {
				return true
			}
		}
		return false
	}
	base := uint64(0x6161616161616161) // "aaaaaaaa"
	for pos := 0; pos < 8; pos++ {
		for c := 0; c < 256; c++ {
			w := base&^(0xff<<(8*pos)) | uint64(c)<<(8*pos)
			if got, want := specialInWord(w), ref(w); got != want {
				t.Fatalf("byte %#x at %d: got %v, want %v", c, pos, got, want)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1_000_000; i++ {
		w := r.Uint64()
		if i%2 == 0 {
			w |= 0x2020202020202020 // mostly printable, so "no" answers are tested too
		}
		if got, want := specialInWord(w), ref(w); got != want {
			t.Fatalf("%#016x: got %v, want %v", w, got, want)
		}
	}
}

// TestParseStringEveryPosition puts an escape, a control character or the
// closing quote at every offset of strings up to 40 bytes long, so that
// the eight-byte scan meets them in every lane and at every tail length;
// encoding/json is the reference.
func TestParseStringEveryPosition(t *testing.T) {
	for n := 0; n <= 40; n++ {
		for pos := 0; pos <= n; pos++ {
			for _, ins := range []string{`\"`, `\\`, `\n`, `\u00e9`, "\x01", "\x1f", "é"} {
				body := strings.Repeat("b", pos) + ins + strings.Repeat("c", n-pos)
				in := `"` + body + `"`
				var want string
				werr := json.Unmarshal([]byte(in), &want)
				p, root, err := parseDoc(in)
				if (err != nil) != (werr != nil) {
					t.Fatalf("%q: error %v, encoding/json %v", in, err, werr)
				}
				if err == nil && p.node(root).str != want {
					t.Fatalf("%q: got %q, want %q", in, p.node(root).str, want)
				}
			}
			// Unterminated: the scan must stop at the end, not read past it.
			if _, _, err := parseDoc(`"` + strings.Repeat("d", n)); err == nil {
				t.Fatalf("unterminated string of %d bytes accepted", n)
			}
		}
	}
}

// intByFloat is how parser.int read every number before smallInt.
func intByFloat(s string) (int64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// FuzzSmallInt: where smallInt reads a literal, it reads what ParseFloat
// did; where it declines, parser.int still reads it through ParseFloat.
func FuzzSmallInt(f *testing.F) {
	for _, s := range []string{"0", "-0", "7", "-12", "1764770000000", "999999999999999", "9999999999999999",
		"-999999999999999", "01", "1.0", "1e3", "-", "", "+1", "1 ", "9007199254740993"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := smallInt(s)
		if !ok {
			return
		}
		w, wok := intByFloat(s)
		if !wok || v != w {
			t.Fatalf("smallInt(%q) = %d, ParseFloat reads %d, %v", s, v, w, wok)
		}
	})
}

func TestParserIntReadsAsBefore(t *testing.T) {
	for _, lit := range []string{"0", "-0", "42", "-42", "1764770000000", "999999999999999", "1000000000000000",
		"9007199254740992", "9007199254740993", "1e3", "1.5", "2.0", "-1E2", "1e400"} {
		var p parser
		root, err := p.parse([]byte(`{"n":`+lit+`}`), 8)
		if err != nil {
			t.Fatalf("%s: %v", lit, err)
		}
		v, ok := p.int(p.get(root, "n"))
		w, wok := intByFloat(lit)
		if v != w || ok != wok {
			t.Errorf("int(%s) = %d, %v; before %d, %v", lit, v, ok, w, wok)
		}
	}
}
