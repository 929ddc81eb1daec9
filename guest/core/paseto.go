package core

// PASETO v4.local (https://github.com/paseto-standard/paseto-spec,
// docs/01-Protocol-Versions/Version4.md) and the two PASERK types the core
// needs, k4.local and k4.lid (https://github.com/paseto-standard/paserk).
//
// The code is deterministic: the caller passes the nonce. It is written for
// the wasm build, where every allocation and every pass over the bytes
// costs: sealing streams the ciphertext through a stack buffer into the MAC
// and the base64 encoder (the pre-authentication encoding is never built),
// and opening decodes the token into dst's spare capacity once, then
// decrypts there in place.
//
// Nothing here formats key bytes, tokens or plaintext into an error.

import (
	"bytes"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"slices"

	"golang.org/x/crypto/blake2b"
	"golang.org/x/crypto/chacha20"
)

// errToken is the one opaque error for every failure to open a token (bad header, bad base64, short, bad tag, ...).
var errToken = errors.New("paseto: invalid token")

// errPaserkLocal is returned by parsePaserkLocal for any malformed k4.local string.
var errPaserkLocal = errors.New("paserk: invalid k4.local key")

const (
	v4LocalHeader = "v4.local."
	v4NonceSize   = 32
	v4TagSize     = 32
	// v4MinBodyChars is the base64url length of the shortest body, n || t
	// (64 bytes, empty message).
	v4MinBodyChars = (2*32*8 + 5) / 6

	paserkLocalPrefix = "k4.local."
	paserkLIDPrefix   = "k4.lid."
	paserkKeyChars    = (32*8 + 5) / 6 // 43
	paserkLIDBytes    = 33             // BLAKE2b-264
	paserkLIDChars    = 33 * 4 / 3     // 44

	// v4SealChunk is the stack buffer through which Seal streams
	// n || c || t to the base64 encoder.
	v4SealChunk = 512
)

// Domain-separation prefixes of the v4.local key derivation. Package-level
// slices so that hashing them costs no conversion.
var (
	v4EncKeyInfo  = []byte("paseto-encryption-key")
	v4AuthKeyInfo = []byte("paseto-auth-key-for-aead")
)

// v4LocalSeal appends a v4.local token to dst.
//
// dst grows at most once. msg, footer and implicit must not overlap dst's
// spare capacity. Only the caller's nonce makes tokens differ: a (key,
// nonce) pair must never seal two different messages.
func v4LocalSeal(dst []byte, key *[32]byte, nonce *[32]byte, msg, footer, implicit []byte) []byte {
	var ek, ak [32]byte
	var n2 [24]byte
	v4DeriveKeys(key, nonce, &ek, &n2, &ak)

	// One growth of dst for the whole token.
	enc := base64.RawURLEncoding
	total := len(v4LocalHeader) + enc.EncodedLen(v4NonceSize+len(msg)+v4TagSize)
	if len(footer) > 0 {
		total += 1 + enc.EncodedLen(len(footer))
	}
	dst = slices.Grow(dst, total)
	dst = append(dst, v4LocalHeader...)

	// The MAC is created here, not in a helper returning hash.Hash, so
	// that the compiler devirtualizes its calls and buf stays on the stack.
	mac, err := blake2b.New(32, ak[:])
	if err != nil {
		panic("paseto: blake2b setup") // unreachable: sizes are fixed
	}
	var head [v4PAEHeadSize]byte
	mac.Write(v4PAEHead(&head, nonce, len(msg)))
	stream, err := chacha20.NewUnauthenticatedCipher(ek[:], n2[:])
	if err != nil {
		panic("paseto: chacha20 setup") // unreachable: sizes are fixed
	}

	// buf holds raw bytes of n || c || t not yet encoded. Only whole 3-byte
	// groups are encoded before the end, so the output is exactly the
	// encoding of the whole body.
	var buf [v4SealChunk]byte
	fill := copy(buf[:], nonce[:])
	for len(msg) > 0 {
		k := min(len(buf)-fill, len(msg))
		c := buf[fill : fill+k]
		stream.XORKeyStream(c, msg[:k])
		mac.Write(c)
		msg = msg[k:]
		fill += k
		if fill == len(buf) {
			fill = v4FlushGroups(&dst, buf[:fill])
		}
	}
	var le [8]byte
	mac.Write(v4LE64(&le, len(footer)))
	mac.Write(footer)
	mac.Write(v4LE64(&le, len(implicit)))
	mac.Write(implicit)
	if fill+v4TagSize > len(buf) {
		fill = v4FlushGroups(&dst, buf[:fill])
	}
	mac.Sum(buf[fill:fill]) // appends in place: cap(buf[fill:fill]) >= 32
	fill += v4TagSize
	dst = enc.AppendEncode(dst, buf[:fill])

	if len(footer) > 0 {
		dst = append(dst, '.')
		dst = enc.AppendEncode(dst, footer)
	}
	clear(ek[:])
	clear(ak[:])
	clear(n2[:])
	return dst
}

// v4FlushGroups encodes the whole 3-byte groups of raw onto *dst, moves the
// 0..2 bytes left over to the front of raw and returns their count.
func v4FlushGroups(dst *[]byte, raw []byte) int {
	n := len(raw) - len(raw)%3
	*dst = base64.RawURLEncoding.AppendEncode(*dst, raw[:n])
	return copy(raw, raw[n:])
}

// v4LocalFooter returns the decoded footer of a v4.local token without verifying anything (the footer
// is needed to choose the key). It returns errToken when the token is not shaped like v4.local.
//
// "Shaped" means: exact header, a body long enough for n || t whose length is
// a possible unpadded base64 length, and a footer part (if present) that is
// strict, non-empty base64url. The body's characters are only checked by
// v4LocalOpen. A token without a footer gives (nil, nil).
func v4LocalFooter(token []byte) ([]byte, error) {
	body, f, ok := v4LocalSplit(token)
	if !ok || len(body)%4 == 1 {
		return nil, errToken
	}
	if f == nil {
		return nil, nil
	}
	n, ok := v4B64DecodedLen(len(f))
	if !ok {
		return nil, errToken
	}
	out := make([]byte, n)
	if !v4B64Decode(out, f) {
		return nil, errToken
	}
	return out, nil
}

// v4LocalOpen verifies and decrypts; the plaintext is appended to dst. footer is the expected decoded
// footer: it must equal the token's footer (constant time). Every failure returns errToken.
//
// On failure dst is returned unchanged (its spare capacity may have been
// written with undecrypted ciphertext). On success the plaintext occupies
// dst[len(dst):]; the decoded token is built in that same space, so at most
// one allocation happens, and none when dst has room for the decoded token.
// token, footer and implicit must not overlap dst's spare capacity.
func v4LocalOpen(dst []byte, key *[32]byte, token []byte, footer, implicit []byte) ([]byte, error) {
	raw, base, bodyEnd, ok := v4LocalDecode(dst, token)
	if !ok {
		return dst, errToken
	}
	nonce := (*[v4NonceSize]byte)(raw[base : base+v4NonceSize])
	c := raw[base+v4NonceSize : bodyEnd-v4TagSize]
	tag := raw[bodyEnd-v4TagSize : bodyEnd]
	footerOK := subtle.ConstantTimeCompare(raw[bodyEnd:], footer)

	var ek, ak, want [32]byte
	var n2 [24]byte
	v4DeriveKeys(key, nonce, &ek, &n2, &ak)
	v4Tag(&want, &ak, nonce, c, footer, implicit)
	clear(ak[:])

	if subtle.ConstantTimeCompare(tag, want[:])&footerOK != 1 {
		clear(ek[:])
		clear(n2[:])
		return dst, errToken
	}
	out := v4Decrypt(raw[base:], c, &ek, &n2)
	return raw[:base+out], nil
}

// v4LocalDecryptUnverified decrypts WITHOUT checking the tag. It exists only so that, after v4LocalOpen
// failed, the caller can read the bindings a token claims and check the tag against them (diagnose).
// The output is attacker-controlled (a stream cipher: flipped ciphertext bits flip the same plaintext
// bits); never use it for anything the tag has not confirmed. Returns errToken if the token is not
// shaped like v4.local.
func v4LocalDecryptUnverified(dst []byte, key *[32]byte, token []byte) ([]byte, error) {
	raw, base, bodyEnd, ok := v4LocalDecode(dst, token)
	if !ok {
		return dst, errToken
	}
	nonce := (*[v4NonceSize]byte)(raw[base : base+v4NonceSize])
	c := raw[base+v4NonceSize : bodyEnd-v4TagSize]
	var ek, ak [32]byte
	var n2 [24]byte
	v4DeriveKeys(key, nonce, &ek, &n2, &ak)
	clear(ak[:])
	out := v4Decrypt(raw[base:], c, &ek, &n2)
	return raw[:base+out], nil
}

// v4Decrypt moves c (which lies inside dst, after its start) to the start of
// dst, decrypts it in place, wipes ek and n2 and returns len(c).
func v4Decrypt(dst, c []byte, ek *[32]byte, n2 *[24]byte) int {
	p := dst[:copy(dst, c)]
	stream, err := chacha20.NewUnauthenticatedCipher(ek[:], n2[:])
	if err != nil {
		panic("paseto: chacha20 setup") // unreachable: sizes are fixed
	}
	stream.XORKeyStream(p, p)
	clear(ek[:])
	clear(n2[:])
	return len(p)
}

// v4LocalSplit checks the header and splits the rest of token into the
// encoded body and the encoded footer (nil when absent). A footer part that
// is present must be non-empty: a canonical token never ends with '.'.
func v4LocalSplit(token []byte) (body, footer []byte, ok bool) {
	if len(token) < len(v4LocalHeader) || string(token[:len(v4LocalHeader)]) != v4LocalHeader {
		return nil, nil, false
	}
	body = token[len(v4LocalHeader):]
	if i := bytes.IndexByte(body, '.'); i >= 0 {
		body, footer = body[:i], body[i+1:]
		if len(footer) == 0 {
			return nil, nil, false
		}
	}
	if len(body) < v4MinBodyChars {
		return nil, nil, false
	}
	return body, footer, true
}

// v4LocalDecode decodes n || c || t || footer into dst[len(dst):] (growing
// dst at most once) and returns the grown slice, the offset where the body
// starts and the offset where the body ends and the footer starts.
func v4LocalDecode(dst, token []byte) (raw []byte, base, bodyEnd int, ok bool) {
	body, f, ok := v4LocalSplit(token)
	if !ok {
		return nil, 0, 0, false
	}
	nb, ok1 := v4B64DecodedLen(len(body))
	nf, ok2 := v4B64DecodedLen(len(f))
	if !ok1 || !ok2 || nb < v4NonceSize+v4TagSize {
		return nil, 0, 0, false
	}
	base = len(dst)
	bodyEnd = base + nb
	raw = slices.Grow(dst, nb+nf)[:bodyEnd+nf]
	if !v4B64Decode(raw[base:bodyEnd], body) || !v4B64Decode(raw[bodyEnd:], f) {
		return nil, 0, 0, false
	}
	return raw, base, bodyEnd, true
}

// v4DeriveKeys computes, per the v4.local spec,
//
//	tmp = BLAKE2b-448(key = K, "paseto-encryption-key" || n); Ek = tmp[0:32]; n2 = tmp[32:56]
//	Ak  = BLAKE2b-256(key = K, "paseto-auth-key-for-aead" || n)
func v4DeriveKeys(key, nonce *[32]byte, ek *[32]byte, n2 *[24]byte, ak *[32]byte) {
	var tmp [blake2b.Size]byte
	h, err := blake2b.New(56, key[:])
	if err != nil {
		panic("paseto: blake2b setup") // unreachable: sizes are fixed
	}
	h.Write(v4EncKeyInfo)
	h.Write(nonce[:])
	h.Sum(tmp[:0])
	copy(ek[:], tmp[:32])
	copy(n2[:], tmp[32:56])

	h, err = blake2b.New(32, key[:])
	if err != nil {
		panic("paseto: blake2b setup")
	}
	h.Write(v4AuthKeyInfo)
	h.Write(nonce[:])
	h.Sum(tmp[:0])
	copy(ak[:], tmp[:32])
	clear(tmp[:])
}

// v4Tag computes t = BLAKE2b-256(key = Ak, PAE("v4.local.", n, c, f, i)),
// streaming the pieces into the hash.
func v4Tag(t *[32]byte, ak, nonce *[32]byte, c, footer, implicit []byte) {
	mac, err := blake2b.New(32, ak[:])
	if err != nil {
		panic("paseto: blake2b setup") // unreachable: sizes are fixed
	}
	var head [v4PAEHeadSize]byte
	var le [8]byte
	mac.Write(v4PAEHead(&head, nonce, len(c)))
	mac.Write(c)
	mac.Write(v4LE64(&le, len(footer)))
	mac.Write(footer)
	mac.Write(v4LE64(&le, len(implicit)))
	mac.Write(implicit)
	var sum [blake2b.Size]byte
	copy(t[:], mac.Sum(sum[:0]))
}

// v4PAEHeadSize is the length of the part of PAE(h, n, c, f, i) that
// precedes c.
const v4PAEHeadSize = 8 + 8 + len(v4LocalHeader) + 8 + v4NonceSize + 8

// v4PAEHead fills b with the part of PAE(h, n, c, f, i) that precedes c:
// LE64(5) || LE64(9) || "v4.local." || LE64(32) || n || LE64(len(c)).
func v4PAEHead(b *[v4PAEHeadSize]byte, nonce *[32]byte, clen int) []byte {
	p := v4AppendLE64(b[:0], 5)
	p = v4AppendLE64(p, len(v4LocalHeader))
	p = append(p, v4LocalHeader...)
	p = v4AppendLE64(p, v4NonceSize)
	p = append(p, nonce[:]...)
	return v4AppendLE64(p, clen)
}

// v4LE64 returns LE64(n) in b.
func v4LE64(b *[8]byte, n int) []byte {
	return v4AppendLE64(b[:0], n)
}

// v4AppendLE64 is PAE's LE64: little-endian, with the top bit cleared.
func v4AppendLE64(b []byte, n int) []byte {
	return binary.LittleEndian.AppendUint64(b, uint64(n)&^(1<<63))
}

// Strict base64url without padding: the alphabet A-Z a-z 0-9 - _ only (no
// '=', no CR/LF, which encoding/base64 would skip), and canonical trailing
// bits, so that every string decodes to one byte string and back.

// v4B64Inv maps a base64url character to its 6-bit value, anything else to 0xff.
var v4B64Inv = func() (t [256]byte) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := range t {
		t[i] = 0xff
	}
	for i := 0; i < len(alphabet); i++ {
		t[alphabet[i]] = byte(i)
	}
	return t
}()

// v4B64DecodedLen returns the decoded length of n unpadded base64 characters,
// and false when no string of that length is valid (n%4 == 1).
func v4B64DecodedLen(n int) (int, bool) {
	switch n % 4 {
	case 0:
		return n / 4 * 3, true
	case 2:
		return n/4*3 + 1, true
	case 3:
		return n/4*3 + 2, true
	}
	return 0, false
}

// v4B64Decode decodes src into out, whose length must be
// v4B64DecodedLen(len(src)). It reports false on any character outside the
// base64url alphabet and on non-zero trailing bits.
func v4B64Decode(out, src []byte) bool {
	t := &v4B64Inv
	j := 0
	for len(src) >= 4 && len(out)-j >= 3 {
		a, b, c, d := t[src[0]], t[src[1]], t[src[2]], t[src[3]]
		if a|b|c|d > 63 {
			return false
		}
		v := uint32(a)<<18 | uint32(b)<<12 | uint32(c)<<6 | uint32(d)
		o := out[j : j+3 : j+3]
		o[0], o[1], o[2] = byte(v>>16), byte(v>>8), byte(v)
		src = src[4:]
		j += 3
	}
	rest := out[j:]
	switch {
	case len(src) == 0 && len(rest) == 0:
		return true
	case len(src) == 2 && len(rest) == 1:
		a, b := t[src[0]], t[src[1]]
		if a|b > 63 || b&0x0f != 0 {
			return false
		}
		rest[0] = a<<2 | b>>4
		return true
	case len(src) == 3 && len(rest) == 2:
		a, b, c := t[src[0]], t[src[1]], t[src[2]]
		if a|b|c > 63 || c&0x03 != 0 {
			return false
		}
		v := uint32(a)<<12 | uint32(b)<<6 | uint32(c)
		rest[0], rest[1] = byte(v>>10), byte(v>>2)
		return true
	}
	return false
}

// paserkLocal returns the PASERK k4.local form of key: "k4.local." + base64url-nopad(key).
func paserkLocal(key *[32]byte) string {
	var b [len(paserkLocalPrefix) + paserkKeyChars]byte
	copy(b[:], paserkLocalPrefix)
	base64.RawURLEncoding.Encode(b[len(paserkLocalPrefix):], key[:])
	return string(b[:])
}

// parsePaserkLocal parses a k4.local PASERK strictly: exact prefix, exactly
// 43 base64url characters, no padding, canonical trailing bits. The error
// never contains the input.
func parsePaserkLocal(s string) ([32]byte, error) {
	var key [32]byte
	if len(s) != len(paserkLocalPrefix)+paserkKeyChars || s[:len(paserkLocalPrefix)] != paserkLocalPrefix {
		return key, errPaserkLocal
	}
	var enc [paserkKeyChars]byte
	copy(enc[:], s[len(paserkLocalPrefix):])
	ok := v4B64Decode(key[:], enc[:])
	clear(enc[:])
	if !ok {
		clear(key[:])
		return key, errPaserkLocal
	}
	return key, nil
}

// paserkLocalID returns the PASERK k4.lid of key (paserk operations/ID.md,
// versions 2 and 4): h = "k4.lid.", p = paserkLocal(key),
// d = BLAKE2b-264(h || p) (unkeyed, 33-byte output), result h || base64url(d).
func paserkLocalID(key *[32]byte) string {
	var in [len(paserkLIDPrefix) + len(paserkLocalPrefix) + paserkKeyChars]byte
	p := append(in[:0], paserkLIDPrefix...)
	p = append(p, paserkLocalPrefix...)
	base64.RawURLEncoding.Encode(in[len(p):], key[:])

	h, err := blake2b.New(paserkLIDBytes, nil)
	if err != nil {
		panic("paserk: blake2b setup")
	}
	h.Write(in[:])
	clear(in[:])
	var d [blake2b.Size]byte
	h.Sum(d[:0])

	var out [len(paserkLIDPrefix) + paserkLIDChars]byte
	copy(out[:], paserkLIDPrefix)
	base64.RawURLEncoding.Encode(out[len(paserkLIDPrefix):], d[:paserkLIDBytes])
	return string(out[:])
}
