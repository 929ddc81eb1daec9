package core

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// A strict, single-pass JSON parser into an arena. It exists because the
// guard needs things general decoders do not give together: duplicate-key
// and case-collision detection, a depth limit, rejection of invalid UTF-8
// and lone surrogates, numbers kept as their literal text (so that a huge
// exponent never reaches a big-number library), and the raw byte span of
// every value (to pass arguments and schemas through untouched). See
// RATIONALE.md, "JSON in the guest".

type jkind uint8

const (
	jNull jkind = iota
	jFalse
	jTrue
	jNumber
	jString
	jArray
	jObject
)

func (k jkind) String() string {
	switch k {
	case jNull:
		return "null"
	case jFalse, jTrue:
		return "boolean"
	case jNumber:
		return "number"
	case jString:
		return "string"
	case jArray:
		return "array"
	default:
		return "object"
	}
}

// jnode is one parsed value. For strings str is the decoded text, for
// numbers the literal. Members of arrays and objects live in
// parser.members[first : first+n].
type jnode struct {
	kind       jkind
	str        string
	start, end int32
	first, n   int32
}

type jmember struct {
	key string
	val int32
}

// parser parses into an arena it reuses between documents. Strings
// without escapes alias the source bytes, which the guard reuses from call
// to call: anything kept beyond one call (configuration, the form cache)
// must be cloned with strings.Clone.
type parser struct {
	src      []byte
	pos      int
	maxDepth int
	nodes    []jnode
	members  []jmember
	stack    []jmember
	// interrupt, when set, is asked every checkEvery values.
	interrupt func() bool
}

const (
	checkEvery  = 4096
	wideMembers = 16 // members from which duplicate checks use a map
)

const defaultMaxDepth = 64

// reset prepares the parser for a new document, keeping its buffers.
func (p *parser) reset(src []byte, maxDepth int) {
	p.src = src
	p.pos = 0
	p.maxDepth = maxDepth
	p.nodes = p.nodes[:0]
	p.members = p.members[:0]
	p.stack = p.stack[:0]
}

// parse parses one whole JSON document and returns the root node index.
func (p *parser) parse(src []byte, maxDepth int) (int32, *Error) {
	if !utf8.Valid(src) {
		p.reset(nil, maxDepth)
		return -1, newError(CodeInvalidUTF8, "the JSON text is not valid UTF-8")
	}
	return p.parseValid(src, maxDepth)
}

// parseValid parses a document known to be valid UTF-8: a state payload
// the core wrote itself and whose MAC was just verified.
func (p *parser) parseValid(src []byte, maxDepth int) (int32, *Error) {
	p.reset(src, maxDepth)
	root, err := p.value(0)
	if err != nil {
		return -1, err
	}
	p.skipWS()
	if p.pos != len(p.src) {
		return -1, p.syntax("unexpected data after the JSON value")
	}
	return root, nil
}

func (p *parser) node(i int32) *jnode { return &p.nodes[i] }

func (p *parser) raw(i int32) []byte {
	n := &p.nodes[i]
	return p.src[n.start:n.end]
}

func (p *parser) kids(i int32) []jmember {
	n := &p.nodes[i]
	return p.members[n.first : n.first+n.n]
}

// get returns the member of object i named key, or -1.
//
// Not inlined: it was inlined at some 165 sites, and its loop at each made
// guard.wasm larger by 112 KB and every caller longer to fetch; one copy
// stays in the cache (BENCHMARKS.md, "One copy of the member lookup").
//
//go:noinline
func (p *parser) get(i int32, key string) int32 {
	if i < 0 || p.nodes[i].kind != jObject {
		return -1
	}
	for _, m := range p.kids(i) {
		if m.key == key {
			return m.val
		}
	}
	return -1
}

func (p *parser) kindOf(i int32) jkind {
	if i < 0 {
		return jNull
	}
	return p.nodes[i].kind
}

func (p *parser) syntax(msg string) *Error {
	return newError(CodeJSONSyntax, msg+" at byte "+itoa(p.pos))
}

func (p *parser) skipWS() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (int32, *Error) {
	if err := p.checkpoint(); err != nil {
		return -1, err
	}
	p.skipWS()
	if p.pos >= len(p.src) {
		return -1, p.syntax("unexpected end of JSON input")
	}
	start := p.pos
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return -1, err
		}
		return p.add(jnode{kind: jString, str: s, start: int32(start), end: int32(p.pos)}), nil
	case c == '-' || (c >= '0' && c <= '9'):
		if err := p.number(); err != nil {
			return -1, err
		}
		return p.add(jnode{kind: jNumber, str: unsafe.String(&p.src[start], p.pos-start), start: int32(start), end: int32(p.pos)}), nil
	case c == 't':
		return p.literal("true", jTrue)
	case c == 'f':
		return p.literal("false", jFalse)
	case c == 'n':
		return p.literal("null", jNull)
	default:
		return -1, p.syntax("invalid character " + quoteByte(c))
	}
}

func (p *parser) add(n jnode) int32 {
	p.nodes = append(p.nodes, n)
	return int32(len(p.nodes) - 1)
}

func (p *parser) checkpoint() *Error {
	if p.interrupt != nil && len(p.nodes)%checkEvery == 0 && p.interrupt() {
		return errInterrupted
	}
	return nil
}

func (p *parser) literal(word string, k jkind) (int32, *Error) {
	start := p.pos
	if len(p.src)-p.pos < len(word) || string(p.src[p.pos:p.pos+len(word)]) != word {
		return -1, p.syntax("invalid literal")
	}
	p.pos += len(word)
	return p.add(jnode{kind: k, start: int32(start), end: int32(p.pos)}), nil
}

func (p *parser) object(depth int) (int32, *Error) {
	if depth > p.maxDepth {
		return -1, newError(CodeTooDeep, "JSON nesting is deeper than "+itoa(p.maxDepth)+" levels")
	}
	start := p.pos
	p.pos++ // '{'
	self := p.add(jnode{kind: jObject, start: int32(start)})
	base := len(p.stack)
	var seen map[string]struct{} // only for wide objects: keeps the check linear
	p.skipWS()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
	} else {
		for {
			p.skipWS()
			if p.pos >= len(p.src) || p.src[p.pos] != '"' {
				return -1, p.syntax("expected a string key")
			}
			key, err := p.str()
			if err != nil {
				return -1, err
			}
			p.skipWS()
			if p.pos >= len(p.src) || p.src[p.pos] != ':' {
				return -1, p.syntax("expected ':' after an object key")
			}
			p.pos++
			v, err := p.value(depth)
			if err != nil {
				return -1, err
			}
			if n := len(p.stack) - base; n < wideMembers {
				for _, m := range p.stack[base:] {
					if m.key == key {
						return -1, newError(CodeDuplicateKey, "duplicate object key "+quote(key))
					}
				}
			} else {
				if seen == nil {
					seen = make(map[string]struct{}, 2*n)
					for _, m := range p.stack[base:] {
						seen[m.key] = struct{}{}
					}
				}
				if _, dup := seen[key]; dup {
					return -1, newError(CodeDuplicateKey, "duplicate object key "+quote(key))
				}
				seen[key] = struct{}{}
			}
			p.stack = append(p.stack, jmember{key: key, val: v})
			p.skipWS()
			if p.pos >= len(p.src) {
				return -1, p.syntax("unexpected end of JSON input in an object")
			}
			if p.src[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.src[p.pos] == '}' {
				p.pos++
				break
			}
			return -1, p.syntax("expected ',' or '}' in an object")
		}
	}
	p.close(self, base)
	return self, nil
}

func (p *parser) array(depth int) (int32, *Error) {
	if depth > p.maxDepth {
		return -1, newError(CodeTooDeep, "JSON nesting is deeper than "+itoa(p.maxDepth)+" levels")
	}
	start := p.pos
	p.pos++ // '['
	self := p.add(jnode{kind: jArray, start: int32(start)})
	base := len(p.stack)
	p.skipWS()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
	} else {
		for {
			v, err := p.value(depth)
			if err != nil {
				return -1, err
			}
			p.stack = append(p.stack, jmember{val: v})
			p.skipWS()
			if p.pos >= len(p.src) {
				return -1, p.syntax("unexpected end of JSON input in an array")
			}
			if p.src[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.src[p.pos] == ']' {
				p.pos++
				break
			}
			return -1, p.syntax("expected ',' or ']' in an array")
		}
	}
	p.close(self, base)
	return self, nil
}

// close moves a container's members from the stack into the arena so that
// they are contiguous.
func (p *parser) close(self int32, base int) {
	n := &p.nodes[self]
	n.end = int32(p.pos)
	n.first = int32(len(p.members))
	n.n = int32(len(p.stack) - base)
	p.members = append(p.members, p.stack[base:]...)
	p.stack = p.stack[:base]
}

func (p *parser) number() *Error {
	s := p.src
	i := p.pos
	if s[i] == '-' {
		i++
	}
	if i >= len(s) {
		p.pos = i
		return p.syntax("invalid number")
	}
	switch {
	case s[i] == '0':
		i++
	case s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return p.syntax("invalid number")
	}
	if i < len(s) && s[i] == '.' {
		i++
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			p.pos = i
			return p.syntax("invalid number")
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			p.pos = i
			return p.syntax("invalid number")
		}
	}
	p.pos = i
	return nil
}

// str parses a string starting at the opening quote and returns its
// decoded text. The input is known to be valid UTF-8.
func (p *parser) str() (string, *Error) {
	s := p.src
	i := p.pos + 1
	start := i
	// Eight bytes at a time while none of them is a quote, a backslash or
	// a control character: long strings (a requestState is ~1 KB of
	// base64url) are most of what the guest scans, and a byte loop costs
	// several times more in wasm than natively.
	for i+8 <= len(s) && !specialInWord(*(*uint64)(unsafe.Pointer(&s[i]))) {
		i += 8
	}
	for i < len(s) {
		c := s[i]
		if c == '"' {
			p.pos = i + 1
			if i == start {
				return "", nil
			}
			// Zero-copy: the string aliases the source (see parser).
			return unsafe.String(&s[start], i-start), nil
		}
		if c == '\\' {
			return p.strSlow(start)
		}
		if c < 0x20 {
			p.pos = i
			return "", p.syntax("control character in a string")
		}
		i++
	}
	p.pos = i
	return "", p.syntax("unterminated string")
}

const (
	swarOnes  = 0x0101010101010101
	swarHighs = 0x8080808080808080
)

// specialInWord reports whether any byte of w (eight bytes of a JSON
// string, read little-endian) is '"', '\\' or below 0x20. It may not say
// which; the byte loop finds it. A false "yes" only costs that loop.
func specialInWord(w uint64) bool {
	q := w ^ (swarOnes * '"')
	b := w ^ (swarOnes * '\\')
	zeroQ := (q - swarOnes) &^ q
	zeroB := (b - swarOnes) &^ b
	ctl := (w - swarOnes*0x20) &^ w
	return (zeroQ|zeroB|ctl)&swarHighs != 0
}

func (p *parser) strSlow(start int) (string, *Error) {
	s := p.src
	buf := make([]byte, 0, 32)
	i := start
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return string(buf), nil
		case c < 0x20:
			p.pos = i
			return "", p.syntax("control character in a string")
		case c != '\\':
			buf = append(buf, c)
			i++
			continue
		}
		if i+1 >= len(s) {
			break
		}
		i++
		switch s[i] {
		case '"', '\\', '/':
			buf = append(buf, s[i])
			i++
		case 'b':
			buf = append(buf, '\b')
			i++
		case 'f':
			buf = append(buf, '\f')
			i++
		case 'n':
			buf = append(buf, '\n')
			i++
		case 'r':
			buf = append(buf, '\r')
			i++
		case 't':
			buf = append(buf, '\t')
			i++
		case 'u':
			r, ok := hex4(s, i+1)
			if !ok {
				p.pos = i
				return "", p.syntax("invalid \\u escape")
			}
			i += 5
			if utf16.IsSurrogate(r) {
				if r >= 0xDC00 || i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
					p.pos = i
					return "", newError(CodeInvalidUTF8, "lone UTF-16 surrogate in a string escape")
				}
				r2, ok := hex4(s, i+2)
				if !ok || r2 < 0xDC00 || r2 > 0xDFFF {
					p.pos = i
					return "", newError(CodeInvalidUTF8, "lone UTF-16 surrogate in a string escape")
				}
				r = utf16.DecodeRune(r, r2)
				i += 6
			}
			buf = utf8.AppendRune(buf, r)
		default:
			p.pos = i
			return "", p.syntax("invalid escape character")
		}
	}
	p.pos = i
	return "", p.syntax("unterminated string")
}

func hex4(s []byte, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// checkCaseKeys refuses an object whose keys differ only in case: a form
// answer "Email" beside "email" is either a client bug or smuggling.
func (p *parser) checkCaseKeys(i int32, what string) *Error {
	return p.checkCaseKeysOf(i, what, "")
}

// checkCaseKeysOf is checkCaseKeys for what of the member named of: the
// message is built only when there is an error to report.
func (p *parser) checkCaseKeysOf(i int32, what, of string) *Error {
	kids := p.kids(i)
	if len(kids) < wideMembers {
		for a := 1; a < len(kids); a++ {
			for b := 0; b < a; b++ {
				if strings.EqualFold(kids[a].key, kids[b].key) {
					return caseDup(what, of, kids[b].key, kids[a].key)
				}
			}
		}
		return nil
	}
	seen := make(map[string]string, len(kids))
	for k, m := range kids {
		if k%checkEvery == checkEvery-1 && p.interrupt != nil && p.interrupt() {
			return errInterrupted
		}
		f := foldKey(m.key)
		if prev, dup := seen[f]; dup {
			return caseDup(what, of, prev, m.key)
		}
		seen[f] = m.key
	}
	return nil
}

func caseDup(what, of, a, b string) *Error {
	if of != "" {
		what += " to " + quote(of)
	}
	return newError(CodeCaseDuplicateKey, what+" has keys that differ only in case: "+quote(a)+" and "+quote(b))
}

// foldKey maps s to a canonical member of its simple case-folding class,
// so that two strings are EqualFold exactly when their foldKeys are equal.
func foldKey(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		b = utf8.AppendRune(b, min)
	}
	return string(b)
}

// --- encoding helpers -----------------------------------------------------

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Only the characters RFC 8785
// requires are escaped, so the output is also canonical. Bytes that are
// not UTF-8 pass as they are: hosts build envelopes with it
// (AppendJSONString), and the parser must refuse a principal or a
// requestState that is not UTF-8, never read two of them as one.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	last := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[last:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		last = i + 1
	}
	dst = append(dst, s[last:]...)
	return append(dst, '"')
}

// compact returns node i without insignificant white space, in a buffer
// sized once: the compact form is never longer than the text it came
// from (only escapes the source already had are written).
func (p *parser) compact(i int32) []byte {
	n := &p.nodes[i]
	return p.appendCompact(make([]byte, 0, n.end-n.start), i)
}

// appendCompact appends node i without insignificant white space, keeping
// member order and number literals as written.
func (p *parser) appendCompact(dst []byte, i int32) []byte {
	n := &p.nodes[i]
	switch n.kind {
	case jNull:
		return append(dst, "null"...)
	case jTrue:
		return append(dst, "true"...)
	case jFalse:
		return append(dst, "false"...)
	case jNumber:
		return append(dst, n.str...)
	case jString:
		return appendString(dst, n.str)
	case jArray:
		dst = append(dst, '[')
		for k, m := range p.kids(i) {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = p.appendCompact(dst, m.val)
		}
		return append(dst, ']')
	default:
		dst = append(dst, '{')
		for k, m := range p.kids(i) {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, m.key)
			dst = append(dst, ':')
			dst = p.appendCompact(dst, m.val)
		}
		return append(dst, '}')
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// quote is s as a JSON string for a message, cut after 64 bytes.
// Messages quote what decoding may have made (a percent-decoded URL
// parameter), so bytes that are not UTF-8 become U+FFFD here: a response
// is always JSON.
func quote(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) > 64 {
		s = cutUTF8(s, 64) + "…"
	}
	return string(appendString(nil, s))
}

// cutUTF8 is s cut to at most n bytes at a character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return "'" + string(c) + "'"
	}
	return "0x" + string([]byte{hexDigits[c>>4], hexDigits[c&0xF]})
}

// AppendJSONString appends s as a JSON string literal (RFC 8785 escaping).
// Hosts use it to build request envelopes.
func AppendJSONString(dst []byte, s string) []byte { return appendString(dst, s) }
