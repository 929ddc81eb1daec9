package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode"
	"unicode/utf8"
)

// Member is one member of a JSON object: its key (a slice of the object
// unless the key had escapes) and the span of its value.
type Member struct {
	Key []byte
	// Start and End bound the value; Name is where the member's name
	// begins (its opening quote), so b[Name:End] is the member as written.
	Start, End int
	Name       int
}

var (
	ErrNotObject = errors.New("not a JSON object")
	ErrDupKey    = errors.New("duplicate key")
	ErrTruncated = errors.New("truncated JSON")
)

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipSpace returns the index of the first byte at or after i that is
// not JSON white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// SkipString returns the index after the string that starts at b[i] ('"').
func SkipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// SkipValue returns the index after the value that starts at b[i], or -1
// when b ends first. It trusts b to be valid JSON (the caller checked), and
// only needs to stay within bounds when it is not (a truncated prefix).
func SkipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				if i = SkipString(b, i); i < 0 {
					return -1
				}
				i--
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}

// Object lists the members of the object in b. A duplicate key is
// an error (two parsers that keep different copies are how messages get
// smuggled). On a truncated or invalid b it returns the members read so
// far with an error.
func Object(b []byte) ([]Member, error) {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, ErrNotObject
	}
	ms := make([]Member, 0, 8)
	var seen map[string]struct{} // keys, once there are more than linearDupScan
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return ms, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return ms, ErrTruncated
		}
		name := i
		ke := SkipString(b, i)
		if ke < 0 {
			return ms, ErrTruncated
		}
		key := b[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if json.Unmarshal(b[i:ke], &k) != nil {
				return ms, ErrTruncated
			}
			key = []byte(k)
		}
		i = SkipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return ms, ErrTruncated
		}
		i = SkipSpace(b, i+1)
		ve := SkipValue(b, i)
		if ve < 0 || ve == i {
			return ms, ErrTruncated
		}
		if seen != nil {
			if _, dup := seen[string(key)]; dup {
				return ms, ErrDupKey
			}
			seen[string(key)] = struct{}{}
		} else {
			for _, m := range ms {
				if bytes.Equal(m.Key, key) {
					return ms, ErrDupKey
				}
			}
			if len(ms) == linearDupScan {
				// Past a few members a set: comparing each key with every
				// earlier one made a 1 MiB object of short keys cost
				// seconds of CPU, from any client.
				seen = make(map[string]struct{}, 2*linearDupScan)
				for _, m := range ms {
					seen[string(m.Key)] = struct{}{}
				}
				seen[string(key)] = struct{}{}
			}
		}
		ms = append(ms, Member{Key: key, Start: i, End: ve, Name: name})
		i = SkipSpace(b, ve)
		if i >= len(b) {
			return ms, ErrTruncated
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case '}':
			return ms, nil
		default:
			return ms, ErrTruncated
		}
	}
}

// linearDupScan is how many members Object checks for a repeat by
// comparison before it builds a set.
const linearDupScan = 16

// Find returns the member key of ms.
func Find(ms []Member, key string) (Member, bool) {
	for _, m := range ms {
		if string(m.Key) == key {
			return m, true
		}
	}
	return Member{}, false
}

// Get returns the value of the member key of the JSON object obj, which
// must be valid JSON (json.Valid, or the guard's own output). Keys match
// exactly (encoding/json would also match other cases). ok is false when
// obj is not an object, repeats a key, or has no member key.
func Get(obj []byte, key string) (val []byte, ok bool) {
	ms, err := Object(obj)
	if err != nil {
		return nil, false
	}
	m, ok := Find(ms, key)
	if !ok {
		return nil, false
	}
	return obj[m.Start:m.End], true
}

// String decodes a JSON string value (with its quotes); false if raw is
// not a string.
func String(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// MayContain reports whether the JSON text b may hold the string word
// anywhere, escapes included: a cheap test before a decode. Only a \u
// escape can spell a letter, a digit or '_' another way.
func MayContain(b []byte, word string) bool {
	return bytes.Contains(b, []byte(word)) || bytes.Contains(b, []byte(`\u`))
}

// FoldName maps a member name to one spelling of its case-folding class:
// FoldName(a) == FoldName(b) exactly when strings.EqualFold(a, b), which
// is how encoding/json matches a name to a field (so "reque\u017ftState",
// with a long s, is requestState to it). A reader of exact names and one
// that ignores case keep different members only where two names fold
// together, or where a name folds to one the other reads.
func FoldName(k string) string {
	ascii := true
	for i := 0; i < len(k); i++ {
		if c := k[i]; c >= utf8.RuneSelf || 'a' <= c && c <= 'z' {
			ascii = false
			break
		}
	}
	if ascii {
		return k
	}
	out := make([]byte, 0, len(k))
	for _, r := range k {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			out = append(out, byte(r))
			continue
		}
		// The smallest rune of its fold orbit.
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				r = r2
				break
			}
			r = r2
		}
		out = utf8.AppendRune(out, r)
	}
	return string(out)
}
