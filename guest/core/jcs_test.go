package core

// RFC 8785 (JSON Canonicalization Scheme) tests, from the RFC's own
// examples, and a differential fuzz target against github.com/gowebpki/jcs.

import (
	"bytes"
	"math"
	"math/big"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/gowebpki/jcs"
)

// The sample of RFC 8785 section 3.2.2 and its canonical form (3.2.4).
const (
	rfc8785Input = `{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	rfc8785Output = `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`

	// Section 3.2.3: sorting by UTF-16 code units.
	rfc8785SortInput = `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`
)

var rfc8785SortOutput = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\"," +
	"\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"

func canonical(tb testing.TB, doc string) (string, *Error) {
	tb.Helper()
	var p parser
	root, err := p.parse([]byte(doc), defaultMaxDepth)
	if err != nil {
		tb.Fatalf("parse %q: %v", doc, err)
	}
	out, cerr := p.appendCanonical(nil, root)
	return string(out), cerr
}

func mustCanonical(tb testing.TB, doc string) string {
	tb.Helper()
	out, err := canonical(tb, doc)
	if err != nil {
		tb.Fatalf("canonical %q: %v", doc, err)
	}
	return out
}

func TestCanonicalRFC8785Examples(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{rfc8785Input, rfc8785Output},
		{rfc8785SortInput, rfc8785SortOutput},
	} {
		if got := mustCanonical(t, c.in); got != c.want {
			t.Errorf("canonical form\n got %s\nwant %s", got, c.want)
		}
		if got, err := jcs.Transform([]byte(c.in)); err != nil || string(got) != c.want {
			t.Errorf("the reference disagrees with the RFC: %s %v", got, err)
		}
	}
}

// TestES6NumberAppendixB is the table of RFC 8785 Appendix B: IEEE 754
// bit patterns and their ECMAScript serialisation.
func TestES6NumberAppendixB(t *testing.T) {
	for _, c := range []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"}, // minus zero
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	} {
		f := math.Float64frombits(c.bits)
		if got := string(appendES6Number(nil, f)); got != c.want {
			t.Errorf("%016x: got %s, want %s", c.bits, got, c.want)
		}
		// The same through the parser, from Go's shortest literal.
		lit := strconv.FormatFloat(f, 'g', -1, 64)
		if got := mustCanonical(t, lit); got != c.want {
			t.Errorf("literal %s: got %s, want %s", lit, got, c.want)
		}
		if ref, err := jcs.NumberToJSON(f); err != nil || ref != c.want {
			t.Errorf("%016x: the reference gives %s (%v)", c.bits, ref, err)
		}
	}
}

func TestCanonicalNumberLiterals(t *testing.T) {
	for _, c := range [][2]string{
		{"1e21", "1e+21"}, {"1E21", "1e+21"}, {"1e+21", "1e+21"}, {"1e20", "100000000000000000000"},
		{"1e-7", "1e-7"}, {"0.0000001", "1e-7"}, {"0.000001", "0.000001"}, {"1e-6", "0.000001"},
		{"-0", "0"}, {"-0.0", "0"}, {"0e10", "0"}, {"-0e-10", "0"},
		{"333333333.33333329", "333333333.3333333"},
		{"5e-324", "5e-324"}, {"4.9e-324", "5e-324"}, {"2.5e-324", "5e-324"},
		{"2.4e-324", "0"}, {"1e-400", "0"}, {"-1e-400", "0"}, // underflow rounds to zero, as in ECMAScript
		{"1.7976931348623157e308", "1.7976931348623157e+308"},
		{"1.7976931348623158e308", "1.7976931348623157e+308"}, // rounds down to the largest double
		{"-1.7976931348623157e308", "-1.7976931348623157e+308"},
		{"1E30", "1e+30"}, {"4.50", "4.5"}, {"2e-3", "0.002"}, {"0.000000000000000000000000001", "1e-27"},
		{"100", "100"}, {"1e2", "100"}, {"1.0", "1"}, {"-1.5", "-1.5"}, {"0.1", "0.1"}, {"123e-2", "1.23"},
		{"9007199254740993", "9007199254740992"}, {"1e308", "1e+308"}, {"1e-10", "1e-10"},
		{"123456789012345678901234567890", "1.2345678901234568e+29"},
		{"0." + strings.Repeat("0", 400) + "1e400", "0.1"},
	} {
		if got := mustCanonical(t, c[0]); got != c[1] {
			t.Errorf("%s: got %s, want %s", c[0], got, c[1])
		}
	}
}

func TestCanonicalNumberOutOfRange(t *testing.T) {
	for _, doc := range []string{
		"1e309", "-1e309", "1.7976931348623159e308", "1e1000001", "-1E+400",
		`[1, 2, 1e400]`, `{"a":{"b":[0.5, 1e999]}}`, "1" + strings.Repeat("0", 400),
	} {
		_, err := canonical(t, doc)
		if err == nil || err.Code != CodeNumberOutOfRange {
			t.Errorf("%.40s: got %v, want %s", doc, err, CodeNumberOutOfRange)
		}
		if err != nil && !strings.Contains(err.Message, "IEEE 754") {
			t.Errorf("%.40s: unclear message %q", doc, err.Message)
		}
	}
}

func TestCanonicalUTF16KeyOrder(t *testing.T) {
	// In UTF-8 byte order U+E000..U+FFFF sort before supplementary
	// characters; in UTF-16 code units (D800..DBFF leads) after them.
	in := `{"\uffff":1,"\ue000":2,"\ud83d\ude00":3,"\ud800\udc00":4,"\ud7ff":5,"\udbff\udfff":6,"\ud83d\ude01":7,"z":8,"":9,"zz":10}`
	want := "{\"\":9,\"z\":8,\"zz\":10,\"\ud7ff\":5,\"\U00010000\":4,\"\U0001F600\":3,\"\U0001F601\":7,\"\U0010FFFF\":6,\"\ue000\":2,\"\uffff\":1}"
	if got := mustCanonical(t, in); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if ref, err := jcs.Transform([]byte(in)); err != nil || string(ref) != want {
		t.Errorf("reference: %q %v", ref, err)
	}
}

// TestCompareUTF16 checks compareUTF16 against comparing utf16.Encode.
func TestCompareUTF16(t *testing.T) {
	pool := []rune{0, 'A', 'a', 0x7f, 0x80, 0x7ff, 0x800, 0xd7ff, 0xe000, 0xfb33, 0xfffd, 0xffff,
		0x10000, 0x103ff, 0x10400, 0x1f600, 0x1f601, 0x10fffe, 0x10ffff}
	r := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		n := r.IntN(4)
		rs := make([]rune, n)
		for i := range rs {
			rs[i] = pool[r.IntN(len(pool))]
		}
		return string(rs)
	}
	for i := 0; i < 200000; i++ {
		a, b := word(), word()
		want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		if got := compareUTF16(a, b); got != want {
			t.Fatalf("compareUTF16(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
}

// TestCanonicalMatchesReference runs the generated corpus of json_test.go
// through both canonicalisers.
func TestCanonicalMatchesReference(t *testing.T) {
	both := 0
	for _, doc := range jsonCorpus(3000) {
		if checkCanonical(t, doc) {
			both++
		}
	}
	if both < 1000 {
		t.Fatalf("only %d documents accepted by both", both)
	}
}

// checkCanonical compares the core's canonical form with the reference's
// on a document both accept, and reports whether both did.
func checkCanonical(t *testing.T, data []byte) bool {
	t.Helper()
	var p parser
	root, err := p.parse(data, defaultMaxDepth)
	if err != nil {
		return false
	}
	ours, cerr := p.appendCanonical(nil, root)
	theirs, jerr := jcs.Transform(bytes.Clone(data))
	if cerr != nil {
		if cerr.Code != CodeNumberOutOfRange {
			t.Fatalf("%q: %v", data, cerr)
		}
		if jerr == nil {
			t.Fatalf("%q: refused (%v) but the reference accepts it: %s", data, cerr, theirs)
		}
		return false
	}
	// Canonical output is canonical: it parses, and maps to itself.
	var q parser
	r2, err := q.parse(ours, defaultMaxDepth)
	if err != nil {
		t.Fatalf("%q: canonical form %q does not parse: %v", data, ours, err)
	}
	if again, _ := q.appendCanonical(nil, r2); !bytes.Equal(again, ours) {
		t.Fatalf("not idempotent: %q -> %q", ours, again)
	}
	if jerr != nil {
		return false
	}
	if !bytes.Equal(ours, theirs) {
		t.Fatalf("%q:\n ours   %q\n theirs %q", data, ours, theirs)
	}
	return true
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{rfc8785Input, rfc8785SortInput, `[1e21,-0,5e-324]`, `{"b":1,"a":{"d":[],"c":""}}`, `"\ud83d\ude00\u0001"`} {
		f.Add([]byte(s))
	}
	for _, doc := range jsonCorpus(40) {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkCanonical(t, data)
	})
}

// TestArgumentNumbersBoundExactly: arguments are bound through their
// RFC 8785 form, whose numbers are doubles, while a server reads the
// client's bytes. A number a double does not hold as written would let
// a retry change it unseen (9007199254740993 for 9007199254740992), so
// an ask with one is refused.
func TestArgumentNumbersBoundExactly(t *testing.T) {
	g := newConfigured(t, "")
	reqs := `{"c":{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}}`
	ask := func(args string) map[string]any {
		return checkResponse(t, run(g, tcall{op: "ask", label: "x", args: args, rest: `,"inputRequests":` + reqs}.env()))
	}
	for _, n := range []string{"0", "-0", "0.1", "1.0", "100", "1e21", "1E+2", "5e-324", "1.7976931348623157e308",
		"9007199254740992", "0.30000000000000004", "123456789012345", "-2.5e-3"} {
		if r := ask(`{"n":` + n + `}`); r["ok"] != true {
			t.Errorf("%s: refused: %v", n, r)
		}
	}
	for _, n := range []string{"9007199254740993", "1.0000000000000001", "1e-400", "12345678901234567890",
		"3.14159265358979323846", "-9007199254740993"} {
		r := ask(`{"a":[{"n":` + n + `}]}`)
		e, _ := r["error"].(map[string]any)
		if e == nil || e["code"] != CodeArgumentsMalformed || !strings.Contains(e["message"].(string), "as a string") {
			t.Errorf("%s: want %s, got %v", n, CodeArgumentsMalformed, r)
		}
	}
}

// FuzzSameDecimal checks sameDecimal against math/big's exact rationals
// on pairs of JSON numbers.
func FuzzSameDecimal(f *testing.F) {
	for _, s := range [][2]string{{"1", "1.0"}, {"100", "1e2"}, {"1E+2", "100.00"}, {"-0", "0"}, {"0.1", "1e-1"},
		{"9007199254740993", "9.007199254740992e+15"}, {"1.0000000000000001", "1e+00"}, {"5e-324", "4.9e-324"}, {"-2.50", "-2.5e0"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, s := range []string{a, b} {
			if len(s) > 40 || !jsonNumberRE.MatchString(s) {
				return
			}
		}
		ra, ok1 := new(big.Rat).SetString(a)
		rb, ok2 := new(big.Rat).SetString(b)
		if !ok1 || !ok2 {
			t.Skip()
		}
		if got, want := sameDecimal(a, b), ra.Cmp(rb) == 0; got != want {
			t.Fatalf("sameDecimal(%s, %s) = %v, big.Rat says %v", a, b, got, want)
		}
	})
}

var jsonNumberRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]{1,3})?$`)
