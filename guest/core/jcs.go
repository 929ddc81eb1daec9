package core

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// appendCanonical appends node i in the JSON Canonicalization Scheme
// (RFC 8785): object members sorted by their UTF-16 code units, numbers in
// ECMAScript form, strings with the minimal escapes. The arguments of a
// request are bound to its requestState through the SHA-256 of this form,
// so two clients that order or space the same arguments differently still
// match, and any change of value does not.
func (p *parser) appendCanonical(dst []byte, i int32) ([]byte, *Error) {
	n := &p.nodes[i]
	switch n.kind {
	case jNumber:
		f, err := strconv.ParseFloat(n.str, 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, newError(CodeNumberOutOfRange, "number "+quote(n.str)+" is outside the IEEE 754 double range")
		}
		return appendES6Number(dst, f), nil
	case jArray:
		dst = append(dst, '[')
		for k, m := range p.kids(i) {
			if k > 0 {
				dst = append(dst, ',')
			}
			var err *Error
			if dst, err = p.appendCanonical(dst, m.val); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case jObject:
		kids := p.kids(i)
		sorted := kids
		if !slices.IsSortedFunc(kids, cmpMemberUTF16) {
			sorted = slices.Clone(kids)
			slices.SortFunc(sorted, cmpMemberUTF16)
		}
		dst = append(dst, '{')
		for k, m := range sorted {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, m.key)
			dst = append(dst, ':')
			var err *Error
			if dst, err = p.appendCanonical(dst, m.val); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	default:
		return p.appendCompact(dst, i), nil
	}
}

func cmpMemberUTF16(a, b jmember) int { return compareUTF16(a.key, b.key) }

// compareUTF16 orders strings by their UTF-16 code units, as RFC 8785
// requires. It differs from byte order only where a supplementary
// character (a surrogate pair) meets one in U+E000..U+FFFF.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ua, ub := utf16Lead(ra), utf16Lead(rb)
			if ua != ub {
				if ua < ub {
					return -1
				}
				return 1
			}
			// Same lead unit: both are supplementary; the trail decides.
			if ra < rb {
				return -1
			}
			return 1
		}
		a, b = a[na:], b[nb:]
	}
	switch {
	case a == "" && b == "":
		return 0
	case a == "":
		return -1
	default:
		return 1
	}
}

func utf16Lead(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + ((r - 0x10000) >> 10)
	}
	return r
}

// checkExactNumbers refuses a number in node i that a double does not
// hold as written: RFC 8785 binds numbers as doubles, but a server gets the
// client's bytes, and one that reads integers exactly (Python, Go's int64)
// would see 9007199254740993 where 9007199254740992 was bound. I-JSON
// (RFC 7493), which RFC 8785 asks for, excludes such numbers too.
func (p *parser) checkExactNumbers(i int32) *Error {
	n := &p.nodes[i]
	switch n.kind {
	case jNumber:
		f, err := strconv.ParseFloat(n.str, 64)
		if err != nil || math.IsInf(f, 0) {
			return newError(CodeNumberOutOfRange, "number "+quote(n.str)+" is outside the IEEE 754 double range")
		}
		var b [32]byte
		if !sameDecimal(n.str, string(strconv.AppendFloat(b[:0], f, 'e', -1, 64))) {
			return newError(CodeNumberOutOfRange, "number "+quote(n.str)+" has more precision than an IEEE 754 double holds (RFC 8785 binds numbers as doubles): send it as a string")
		}
	case jArray, jObject:
		for _, m := range p.kids(i) {
			if err := p.checkExactNumbers(m.val); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameDecimal reports whether two JSON numbers have the same decimal
// value.
func sameDecimal(a, b string) bool {
	na, da, ea, ok1 := decimalParts(a)
	nb, db, eb, ok2 := decimalParts(b)
	return ok1 && ok2 && na == nb && da == db && ea == eb
}

// decimalParts reads a JSON number as sign, significant digits (no
// leading or trailing zeros; "" for zero) and the exponent of the last
// digit. Zero has no sign.
func decimalParts(s string) (neg bool, digits string, exp int, ok bool) {
	if s != "" && s[0] == '-' {
		neg, s = true, s[1:]
	}
	mant := s
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil {
			return false, "", 0, false
		}
		exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits = strings.TrimLeft(intPart+frac, "0")
	exp -= len(frac)
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp++
	}
	if digits == "" {
		return false, "", 0, true
	}
	return neg, digits, exp, true
}

// appendES6Number formats f as ECMAScript's Number.prototype.toString does
// (the shortest round-tripping digits; plain notation for 1e-6 <= |f| <
// 1e21, otherwise exponent notation without a leading zero in the
// exponent).
func appendES6Number(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0') // also -0
	}
	abs := math.Abs(f)
	if abs >= 1e-6 && abs < 1e21 {
		return strconv.AppendFloat(dst, f, 'f', -1, 64)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'e', -1, 64)
	// Go writes e+07 / e-07; ECMAScript writes e+7 / e-7.
	for j := start; j < len(dst); j++ {
		if dst[j] == 'e' {
			k := j + 2 // after the sign
			for k < len(dst)-1 && dst[k] == '0' {
				dst = append(dst[:k], dst[k+1:]...)
			}
			break
		}
	}
	return dst
}
