package core

// Secret-field detector for form-mode elicitation schemas.
//
// The MCP spec forbids form mode for sensitive data (passwords, API keys, access tokens, payment credentials).
// detectSecret reads one flat form property (name, title, description, format, type, writeOnly, choice) and tells
// whether it asks the user to type such a secret.
//
// How it works
//
//   - Each text (the property name, the title, the description) is normalised: lower case, accents folded
//     (é→e, ß→ss, ё→е, full-width Latin→ASCII) and cut into words at spaces, punctuation, snake/kebab/dot
//     separators, camelCase humps, letter/digit and script changes. Glued ASCII words ("apikey", "newpassword",
//     "maxtokens") are split only when they split completely into known words; a few distinctive endings
//     ("…passwort", "…token") are split off otherwise. Punctuation such as ( ) , ; : / cuts a title into
//     segments, so "Password (min 8 characters)" is not mistaken for a length setting.
//   - Latin and Cyrillic words are matched against the phrases of vocab/*.txt (one file per language): a phrase is a
//     sequence of words, stopwords ("de", "of", "votre", …) are skipped and one unknown word may sit in between
//     ("Номер банковской карты", "private SSH key"). Chinese, Japanese and Korean are matched as substrings
//     of the segment with spaces removed; the longest pattern wins, so "ワンタイムパスワード" is an OTP and
//     "公開鍵" masks "鍵".
//   - Negators turn a match off: modifier words anywhere in the same segment (min, max, length, count, hint,
//     expiry, policy, 最大, 提示, …), identity words right after the match or before it across a preposition
//     ("token name", "ID de cliente", "Phone number for verification codes"), switch words next to it
//     ("otp_enabled"), and class-specific words anywhere in the field ("postal" turns off a PIN,
//     "last 4 digits" a card number).
//   - Some words need context from the whole field: "clave" is a password only next to login words,
//     "cid" is a CVV only near card words, a bare "code" is an OTP only when something says it was sent.
//
// Precedence (first that applies wins):
//  1. a boolean, or a choice (enum, oneOf, items.enum/anyOf: the user picks, does not type), is never a
//     secret, whatever its format or writeOnly say;
//  2. format email/uri/date/date-time/… is never a secret;
//  3. a non-negated match in the title decides; a negated one in the title ("Password hint") means none;
//     a generic word that only context made a secret ("code" in "Where should we send the code?") gives way
//     to a negated match in the name ("otp_channel");
//  4. otherwise a match in the name decides, unless the title names something else (an email, a URL, a
//     name, an id…). Abbreviations (pw, pwd, pass, tok, sk, pat, transliterations such as mima, parol) count
//     only when the title adds nothing beyond the name ("sk" titled "Sort key" is no secret) and, when the
//     description names something else ("pwd": "Working directory"), only if it also names a secret.
//     A negated match in the name ("password_min_length") means none;
//  5. otherwise the first sentence of the description, when the name and title name nothing else, and
//     either the name is opaque ("value", "input_7", "hf") or the secret opens the sentence ("Your GitHub
//     token", "Private SSH key used to connect");
//  6. the result of 3-5 is dropped for numbers when the class cannot be a number (API keys, tokens,
//     client secrets and private keys are never numbers, so "max_tokens" typed integer is a count);
//  7. format "password" or writeOnly on any other field is a secret by itself, even against a negator; its
//     class comes from any match in the text, else it is a password.
//
// Within one text, when several classes match, the more specific wins: client secret, CVV, PIN, OTP,
// recovery code, password, private key, card number, access token, API key ("Private key password" is a
// password, "Card PIN" a PIN, "API token" a token). "pk" alone is never evidence (primary, public or
// private key); "cid" is a CVV only near card words, otherwise an id.

import (
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// fieldInfo is what the detector reads of one form property.
type fieldInfo struct {
	Name        string // the property name as written (snake_case, camelCase, kebab-case, abbreviations)
	Title       string
	Description string
	Format      string // e.g. "password", "email"
	Type        string // "string", "number", "integer", "boolean", "array"
	WriteOnly   bool
	Choice      bool // the property is a single/multi-select (enum, oneOf, items.enum/anyOf): the user picks, does not type
}

// secretClass names what kind of secret a field asks for; "" means none.
type secretClass string

const (
	secretNone         secretClass = ""
	secretPassword     secretClass = "password"      // passwords, passphrases, passcodes, security-question answers
	secretAPIKey       secretClass = "api_key"       // API keys, app secrets
	secretAccessToken  secretClass = "access_token"  // access/refresh/bearer/auth/session tokens
	secretClientSecret secretClass = "client_secret" // OAuth client secrets
	secretPrivateKey   secretClass = "private_key"   // private keys, seed/mnemonic/recovery phrases, wallet secrets
	secretPaymentCard  secretClass = "payment_card"  // card numbers (PAN)
	secretCVV          secretClass = "cvv"           // CVV/CVC/CVN/CID/security code of a card
	secretPIN          secretClass = "pin"           // card/bank PIN, withdrawal PIN
	secretOTP          secretClass = "otp"           // one-time / verification / 2FA / SMS codes
	secretRecoveryCode secretClass = "recovery_code" // backup / recovery codes
)

// Class indexes, in priority order: when one text matches several classes, the lowest index wins.
const (
	ciClientSecret = iota
	ciCVV
	ciPIN
	ciOTP
	ciRecovery
	ciPassword
	ciPrivateKey
	ciCard
	ciAccessToken
	ciAPIKey
	numClasses
	ciMask = numClasses // a phrase that consumes words but names no secret ("public key")
)

var classByIndex = [numClasses]secretClass{
	secretClientSecret, secretCVV, secretPIN, secretOTP, secretRecoveryCode,
	secretPassword, secretPrivateKey, secretPaymentCard, secretAccessToken, secretAPIKey,
}

// classWords is how a reason names each class.
var classWords = [numClasses]string{
	"client secret", "card security code", "PIN", "one-time code", "recovery code",
	"password", "private key", "card number", "access token", "API key",
}

// Classes that can be typed as a number (a CVV, a PIN, an SMS code, a card number, a numeric passcode).
const numericClasses = 1<<ciCVV | 1<<ciPIN | 1<<ciOTP | 1<<ciRecovery | 1<<ciPassword | 1<<ciCard

// detectSecret reports whether a form field asks the user for a secret, which class, and a short English
// reason naming the evidence (e.g. `title "Nouveau mot de passe" means password`), for a lint message.
// The reason is at most maxReasonLen bytes and quotes only the schema's own text; it is "" when class is "".
func detectSecret(f *fieldInfo) (class secretClass, reason string) {
	if f == nil {
		return secretNone, ""
	}
	return detectSecretWith(tables(), f)
}

// detectSecretWith is detectSecret with the given tables.
func detectSecretWith(tb *secretTable, f *fieldInfo) (class secretClass, reason string) {
	class, reason, _ = detectSecretLang(tb, f)
	return class, reason
}

// detectSecretLang is detectSecretWith that also names the language of the evidence the reason quotes: the
// vocabulary file that holds the deciding term ("en" also for the acronyms every language uses). It is ""
// when no term decided, that is when the field is no secret or when format "password" or writeOnly made it
// one (even if a word chose its class: the reason names the keyword, and the verdict needs no vocabulary),
// and when the term is in several files (two languages share the word).
func detectSecretLang(tb *secretTable, f *fieldInfo) (class secretClass, reason, lang string) {
	if f == nil {
		return secretNone, "", ""
	}
	typ := strings.ToLower(strings.TrimSpace(f.Type))
	if typ == "boolean" || typ == "null" || typ == "object" || f.Choice {
		return secretNone, "", ""
	}
	if nonSecretFormats[strings.ToLower(strings.TrimSpace(f.Format))] {
		return secretNone, "", ""
	}

	var fld field
	fld.analyse(tb, f)
	fld.scanContext(tb)
	for i := range fld.src {
		fld.src[i].match(tb, &fld)
	}

	numeric := typ == "integer" || typ == "number"
	res := fld.decide(tb)
	if res.ok && numeric && numericClasses&(1<<res.ci) == 0 {
		res.ok = false
	}
	if res.ok {
		return classByIndex[res.ci], res.reason(f), tb.language(res.m.langs)
	}

	masked := strings.EqualFold(strings.TrimSpace(f.Format), "password")
	if !masked && !f.WriteOnly {
		return secretNone, "", ""
	}
	ci := ciPassword
	if ev, ok := fld.anyEvidence(); ok && (!numeric || numericClasses&(1<<ev.ci) != 0) {
		ci = ev.ci
	}
	if masked {
		return classByIndex[ci], `format "password" marks a masked ` + classWords[ci], ""
	}
	if strings.TrimSpace(f.Name) == "" {
		return classByIndex[ci], "writeOnly marks a hidden " + classWords[ci], ""
	}
	return classByIndex[ci], clip("writeOnly on " + quoteExcerpt(f.Name, 60) + " marks a hidden " + classWords[ci]), ""
}

// fieldClass is the detector's verdict on one form field as hosts and
// policies see it (the policy input's "fields", guest/ABI.md).
type fieldClass struct {
	class    secretClass // "" when the field asks for no secret
	reason   string
	language string // the language of the term the reason quotes (detectSecretLang); else ""
}

// classifyField is detectSecret's verdict with what a policy may need.
func classifyField(f *fieldInfo) fieldClass {
	c, r, l := detectSecretLang(tables(), f)
	return fieldClass{class: c, reason: r, language: l}
}

const maxReasonLen = 120

// nonSecretFormats are JSON Schema formats whose values are never secrets.
var nonSecretFormats = map[string]bool{
	"email": true, "idn-email": true, "uri": true, "url": true, "iri": true, "uri-reference": true,
	"iri-reference": true, "date": true, "date-time": true, "time": true, "duration": true,
	"hostname": true, "idn-hostname": true, "ipv4": true, "ipv6": true,
}

// ---------------------------------------------------------------------------------------------------------
// Text analysis

type srcKind uint8

const (
	srcName srcKind = iota
	srcTitle
	srcDesc
	numSrc
)

var srcLabel = [numSrc]string{"name", "title", "description"}

const (
	tkStop  = 1 << iota // a stopword: skipped in phrases
	tkPrep              // a preposition (also a stopword)
	tkDigit             // only digits
	tkCount             // "number" in "number of": a count
	tkGlued             // no separator before it (a camelCase hump, "cvv2")
)

type token struct {
	ns, ne int32 // the normalised word is norm[ns:ne]
	seg    int16 // segment number
	flags  uint8
}

type segment struct {
	cs, ce int32 // the segment's compact text is comp[cs:ce]
	os, oe int32 // and its original bytes orig[os:oe]
	ts, te int32 // its tokens are toks[ts:te]
	cjk    bool  // it holds Han, kana or Hangul
}

type match struct {
	ci       int    // class index, or ciMask
	a, b     int    // first and last token (Latin matches); -1 for CJK matches
	seg      int    // segment
	weak     bool   // an abbreviation valid in names only
	soft     bool   // a generic word that context made a secret ("code" near "sent")
	negated  bool   // turned off by a negator
	startTok int16  // position of the first content token of its segment it starts at (for descriptions)
	langs    uint32 // the vocabulary files that hold the term (bits index secretTable.langs)
}

type source struct {
	kind    srcKind
	orig    string
	norm    string // normalised words of the field, concatenated (shared by its three texts)
	comp    string // normalised text without spaces (for CJK), shared likewise
	toks    []token
	segs    []segment
	matches []match
	hasCJK  bool
}

func (s *source) word(i int) string { return s.norm[s.toks[i].ns:s.toks[i].ne] }

func (s *source) content(i int) bool { return s.toks[i].flags&(tkStop|tkDigit) == 0 }

type field struct {
	src      [numSrc]source
	ctx      uint32 // context groups present anywhere in the field
	fieldNeg uint32 // classes turned off by field-wide negators
}

// analyse normalises and tokenises the three texts of a field into one shared buffer of words and one of
// compact text (two allocations and two string conversions for the whole field).
func (f *field) analyse(tb *secretTable, fi *fieldInfo) {
	texts := [numSrc]string{fi.Name, fi.Title, fi.Description}
	n := 0
	for _, t := range texts {
		n += min(len(t), maxTextLen) + 8
	}
	nb := make([]byte, 0, n)
	cb := make([]byte, 0, n)
	for k := range f.src {
		f.src[k].analyse(tb, texts[k], srcKind(k), &nb, &cb)
		cb = append(cb, 0) // no CJK pattern spans two texts
	}
	norm, comp := string(nb), string(cb)
	for k := range f.src {
		f.src[k].norm, f.src[k].comp = norm, comp
	}
}

// analyse normalises and tokenises one text, appending its words to *nbp and its compact text to *cbp.
func (s *source) analyse(tb *secretTable, text string, kind srcKind, nbp, cbp *[]byte) {
	s.kind = kind
	s.orig = text
	if text == "" {
		return
	}
	text = cutUTF8(text, maxTextLen)
	nb, cb := *nbp, *cbp
	toks := make([]token, 0, len(text)/4+2)
	segs := make([]segment, 0, 2)

	seg := segment{cs: int32(len(cb))}
	curStart := -1     // start of the current word in nb
	curScript := 0     // wordScript of the current word
	var prev rune = -1 // previous raw rune inside the current word
	prevSpace := true  // previous rune was a space (for " - " as a separator)
	curGlued := false  // the current word follows another without a separator
	isName := kind == srcName

	endWord := func() {
		if curStart >= 0 && len(nb) > curStart {
			t := token{ns: int32(curStart), ne: int32(len(nb)), seg: int16(len(segs))}
			if curScript == 4 {
				t.flags |= tkDigit
			}
			if curGlued {
				t.flags |= tkGlued
			}
			toks = append(toks, t)
		}
		curStart = -1
		curScript = 0
		prev = -1
	}
	endSeg := func(at int) {
		endWord()
		seg.ce = int32(len(cb))
		seg.oe = int32(at)
		if seg.ce > seg.cs || len(toks) > 0 && int(toks[len(toks)-1].seg) == len(segs) {
			segs = append(segs, seg)
		} else if len(segs) == 0 && at == len(text) {
			segs = append(segs, seg)
		}
		seg = segment{cs: int32(len(cb)), os: int32(at)}
	}

	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		r = foldWidth(r)
		next := i + size
		switch {
		case unicode.Is(unicode.Mn, r):
			// combining accent: dropped, the word goes on
		case isCJK(r):
			endWord()
			cb = utf8.AppendRune(cb, unicode.ToLower(r))
			seg.cjk = true
			s.hasCJK = true
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			script := wordScript(r)
			glued := false
			if curStart >= 0 && (script != curScript || camelBreak(prev, r, text[next:])) {
				endWord()
				glued = true
			}
			if curStart < 0 {
				curStart = len(nb)
				curScript = script
				curGlued = glued
			}
			n0 := len(nb)
			nb = appendFolded(nb, r)
			cb = append(cb, nb[n0:]...)
			prev = r
		case !isName && isSegSep(r, prevSpace, text[next:]):
			endSeg(i)
			seg.os = int32(next)
		default:
			endWord()
		}
		prevSpace = r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == 0x3000
		i = next
	}
	endSeg(len(text))

	*nbp, *cbp = nb, cb
	s.segs = segs
	s.toks = splitCompounds(tb, nb, toks)
	for i := range s.segs {
		s.segs[i].ts, s.segs[i].te = -1, -1
	}
	for i, t := range s.toks {
		sg := &s.segs[t.seg]
		if sg.ts < 0 {
			sg.ts = int32(i)
		}
		sg.te = int32(i + 1)
	}
	for i := range s.segs {
		if s.segs[i].ts < 0 {
			s.segs[i].ts, s.segs[i].te = 0, 0
		}
	}
	for i, t := range s.toks {
		w := nb[t.ns:t.ne]
		if f, ok := tb.stop[string(w)]; ok {
			s.toks[i].flags |= f
		}
		if string(w) == "of" && i > 0 && string(nb[s.toks[i-1].ns:s.toks[i-1].ne]) == "number" && s.toks[i-1].seg == t.seg {
			s.toks[i-1].flags |= tkCount
		}
	}
}

// maxTextLen and maxMatches bound the work on hostile input; real titles and descriptions are far shorter.
const (
	maxTextLen = 2048
	maxMatches = 48
	negWindow  = 10 // content words read on each side of a match for negators
)

// camelBreak reports whether a word breaks before r: "apiKey" → api|Key, "APIKey" → API|Key, but "PINs" stays.
func camelBreak(prev, r rune, rest string) bool {
	if prev < 0 {
		return false
	}
	if unicode.IsLower(prev) && unicode.IsUpper(r) {
		return true
	}
	if unicode.IsUpper(prev) && unicode.IsUpper(r) {
		n, _ := utf8.DecodeRuneInString(rest)
		if unicode.IsLower(n) {
			// "PINs", "IDs", "APIs": a lone plural s is not a new word.
			if n == 's' {
				n2, _ := utf8.DecodeRuneInString(rest[1:])
				if len(rest) == 1 || !unicode.IsLetter(n2) {
					return false
				}
			}
			return true
		}
	}
	return false
}

// isSegSep reports whether r cuts a title or description into segments.
func isSegSep(r rune, prevSpace bool, rest string) bool {
	switch r {
	case '(', ')', '[', ']', '{', '}', ',', ';', ':', '.', '!', '?', '/', '|', '\\', '\n', '\u2014', '\u2013', '\u2022', '\u00b7',
		'\u3002', '\u3001', '\uff0c', '\uff1b', '\uff1a', '\uff08', '\uff09', '\u300c', '\u300d', '\u300e', '\u300f',
		'\u3010', '\u3011', '\uff1f', '\uff01', '\uff0f', '\uff5c', '\u00bf', '\u00a1', '"', '\u201c', '\u201d', '\u00ab', '\u00bb':
		return true
	case '-':
		// " - " between spaces is a dash, not a hyphen.
		return prevSpace && (rest == "" || rest[0] == ' ')
	}
	return false
}

func isCJK(r rune) bool {
	if r < 0x1100 {
		return false
	}
	return r == 0x30fc || unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// foldWidth maps full-width ASCII (Ａ, ０, ＿) to ASCII.
func foldWidth(r rune) rune {
	if r >= 0xff01 && r <= 0xff5e {
		return r - 0xfee0
	}
	return r
}

// wordScript tells which words r belongs to: 1 Latin, 2 Cyrillic, 3 other letters, 4 digits (a change cuts a word).
func wordScript(r rune) int {
	switch {
	case unicode.IsDigit(r):
		return 4
	case r < 0x250:
		return 1
	case unicode.Is(unicode.Cyrillic, r):
		return 2
	}
	return 3
}

// appendFolded appends r lower-cased and without accents.
func appendFolded(b []byte, r rune) []byte {
	l1, l2 := foldRune(r)
	b = utf8.AppendRune(b, l1)
	if l2 != 0 {
		b = utf8.AppendRune(b, l2)
	}
	return b
}

// foldRune lower-cases r and strips accents; ß and æ/œ give two letters.
func foldRune(r rune) (rune, rune) {
	r = unicode.ToLower(r)
	if r < 0x80 {
		return r, 0
	}
	switch r {
	case 'ß':
		return 's', 's'
	case 'æ':
		return 'a', 'e'
	case 'œ':
		return 'o', 'e'
	case 'ё':
		return 'е', 0
	case 'º', 'ª':
		return 'o', 0
	}
	if int(r) < len(latinFold) && latinFold[r] != 0 {
		return latinFold[r], 0
	}
	return r, 0
}

// latinFold maps accented Latin letters (Latin-1 Supplement, Latin Extended-A) to their base letter.
var latinFold = func() (t [0x180]rune) {
	for base, letters := range map[rune]string{
		'a': "àáâãäåāăą", 'c': "çćĉċč", 'd': "ďđð", 'e': "èéêëēĕėęě", 'g': "ĝğġģ", 'h': "ĥħ",
		'i': "ìíîïĩīĭįı", 'j': "ĵ", 'k': "ķ", 'l': "ĺļľŀł", 'n': "ñńņňŉ", 'o': "òóôõöøōŏő",
		'r': "ŕŗř", 's': "śŝşš", 't': "ţťŧ", 'u': "ùúûüũūŭůűų", 'w': "ŵ", 'y': "ýÿŷ", 'z': "źżž",
	} {
		for _, r := range letters {
			t[r] = base
		}
	}
	return t
}()

// splitCompounds splits glued ASCII words into known words ("apikey" → api key, "maxtokens" → max tokens),
// only when the whole word is covered; otherwise it splits off a distinctive ending ("zugriffstoken").
func splitCompounds(tb *secretTable, nb []byte, toks []token) []token {
	var out []token
	for i, t := range toks {
		parts, np := tb.segmentWord(nb[t.ns:t.ne])
		if np < 2 {
			if out != nil {
				out = append(out, t)
			}
			continue
		}
		if out == nil {
			out = make([]token, 0, len(toks)+np)
			out = append(out, toks[:i]...)
		}
		at, flags := t.ns, t.flags
		for _, n := range parts[:np] {
			out = append(out, token{ns: at, ne: at + int32(n), seg: t.seg, flags: flags})
			at += int32(n)
			flags |= tkGlued
		}
	}
	if out == nil {
		return toks
	}
	return out
}

// segmentWord returns the lengths of the parts of w and their number, 0 when w stays whole.
func (tb *secretTable) segmentWord(w []byte) (parts [maxSegWord / 2]uint8, np int) {
	n := len(w)
	if n < 5 || n > maxSegWord || tb.vocab[string(w)] {
		return parts, 0
	}
	for i := 0; i < n; i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return parts, 0
		}
	}
	// best[i]: fewest known words covering w[:i]; from[i]: where the last one starts.
	var best, from [maxSegWord + 1]int8
	for i := 1; i <= n; i++ {
		best[i] = -1
		for j := 0; j <= i-2; j++ {
			if best[j] < 0 || (j > 0 && best[j] == 0) {
				continue
			}
			if !tb.vocab[string(w[j:i])] {
				continue
			}
			if c := best[j] + 1; best[i] < 0 || c < best[i] {
				best[i] = c
				from[i] = int8(j)
			}
		}
	}
	if best[n] >= 2 {
		np = int(best[n])
		for i, k := n, np-1; i > 0; k-- {
			j := int(from[i])
			parts[k] = uint8(i - j)
			i = j
		}
		return parts, np
	}
	for _, suf := range tb.suffixes {
		if n >= len(suf)+3 && string(w[n-len(suf):]) == suf {
			parts[0], parts[1] = uint8(n-len(suf)), uint8(len(suf))
			return parts, 2
		}
	}
	return parts, 0
}

// maxSegWord is the longest glued word that is split.
const maxSegWord = 40

// scanContext records which context groups and field-wide negators occur anywhere in the field.
func (f *field) scanContext(tb *secretTable) {
	for k := range f.src {
		s := &f.src[k]
		for i := range s.toks {
			if s.toks[i].flags&tkDigit != 0 {
				continue
			}
			w := s.word(i)
			f.ctx |= tb.ctxWords.lookup(w)
			f.fieldNeg |= tb.fieldNeg.lookup(w)
		}
	}
	if f.src[srcName].hasCJK || f.src[srcTitle].hasCJK || f.src[srcDesc].hasCJK {
		comp := f.src[srcName].comp // shared by the three texts
		for _, p := range tb.cjkCtx {
			if f.ctx&p.mask != p.mask && strings.Contains(comp, p.pat) {
				f.ctx |= p.mask
			}
		}
		for _, p := range tb.cjkFieldNeg {
			if f.fieldNeg&p.mask != p.mask && strings.Contains(comp, p.pat) {
				f.fieldNeg |= p.mask
			}
		}
	}
}

// match finds the phrase and CJK matches of one text and marks the negated ones.
func (s *source) match(tb *secretTable, f *field) {
	// Latin and Cyrillic phrases, longest first, left to right.
	for i := 0; i < len(s.toks) && len(s.matches) < maxMatches; {
		if s.toks[i].flags&tkStop != 0 {
			i++
			continue
		}
		r, end := tb.bestRule(s, i, f.ctx)
		if r == nil {
			i++
			continue
		}
		s.matches = append(s.matches, match{ci: r.ci, a: i, b: end, seg: int(s.toks[i].seg), weak: r.nameOnly, soft: r.soft, langs: r.langs})
		i = end + 1
	}
	// Chinese, Japanese, Korean: substrings of each segment, longest first.
	if s.hasCJK {
		for si, sg := range s.segs {
			if sg.cjk {
				s.matchCJK(tb, f, si, s.comp[sg.cs:sg.ce])
			}
		}
	}
	for k := range s.matches {
		m := &s.matches[k]
		if m.ci == ciMask {
			continue
		}
		m.negated = s.negated(tb, f, m)
		if m.a >= 0 && s.kind == srcDesc {
			n := 0
			for j := int(s.segs[m.seg].ts); j < m.a && n < 100; j++ {
				if s.content(j) && s.toks[j].flags&tkGlued == 0 {
					n++
				}
			}
			m.startTok = int16(n)
		}
	}
}

func (s *source) matchCJK(tb *secretTable, f *field, si int, comp string) {
	type span struct{ a, b, ci int }
	var taken []span
	for _, p := range tb.cjk { // sorted longest first
		if len(p.pat) > len(comp) {
			continue
		}
		if p.ctx != 0 && f.ctx&p.ctx == 0 || p.noctx != 0 && f.ctx&p.noctx != 0 {
			continue
		}
		for off := 0; off <= len(comp)-len(p.pat); {
			k := strings.Index(comp[off:], p.pat)
			if k < 0 {
				break
			}
			a, b := off+k, off+k+len(p.pat)
			free := true
			for _, t := range taken {
				if a < t.b && t.a < b {
					free = false
					break
				}
			}
			if free && len(s.matches) < maxMatches {
				taken = append(taken, span{a, b, p.ci})
				s.matches = append(s.matches, match{ci: p.ci, a: -1, b: -1, seg: si, langs: p.langs})
			}
			off = b
		}
	}
}

// negated reports whether a negator turns match m off.
func (s *source) negated(tb *secretTable, f *field, m *match) bool {
	bit := uint32(1) << m.ci
	if f.fieldNeg&bit != 0 {
		return true
	}
	sg := s.segs[m.seg]
	lo, hi := int(sg.ts), int(sg.te)
	if m.a < 0 {
		// A CJK match: its segment is short and has no word order to read, so every word counts as next to it.
		for j := lo; j < hi && j < lo+4*negWindow; j++ {
			if s.content(j) && s.negatesAt(tb, j, bit, true, true, false) {
				return true
			}
		}
	} else {
		// Walk left, noting whether a preposition lies between the word and the match, then right.
		// Only negWindow content words on each side are read: a negator farther away in a long sentence
		// speaks of something else.
		prep, seen := false, 0
		for j := m.a - 1; j >= lo && seen < negWindow; j-- {
			if s.toks[j].flags&tkPrep != 0 {
				prep = true
			}
			if !s.content(j) {
				continue
			}
			if s.negatesAt(tb, j, bit, seen == 0, false, prep) {
				return true
			}
			seen++
		}
		seen = 0
		for j := m.b + 1; j < hi && seen < negWindow; j++ {
			if !s.content(j) {
				continue
			}
			if s.negatesAt(tb, j, bit, seen == 0, seen == 0, false) {
				return true
			}
			seen++
		}
	}
	// CJK negators of the segment apply to every match in it.
	if sg.cjk {
		comp := s.comp[sg.cs:sg.ce]
		for _, p := range tb.cjkNeg {
			if p.mask&bit != 0 && strings.Contains(comp, p.pat) {
				return true
			}
		}
	}
	return false
}

// negatesAt reports whether word j turns off class bit: near means j is the content word next to the match,
// next that it follows the match, prepBefore that it precedes the match across a preposition.
func (s *source) negatesAt(tb *secretTable, j int, bit uint32, near, next, prepBefore bool) bool {
	if s.toks[j].flags&tkCount != 0 {
		return true
	}
	hit := func(ns []negator) bool {
		for _, n := range ns {
			if n.mask&bit == 0 {
				continue
			}
			switch n.scope {
			case scopeSeg:
				return true
			case scopeNear:
				if near {
					return true
				}
			case scopeAdj:
				if next || prepBefore {
					return true
				}
			}
		}
		return false
	}
	w := s.word(j)
	if hit(tb.neg[w]) {
		return true
	}
	found := false
	forStems(w, func(stem string) {
		if !found {
			found = hit(tb.negStem[stem])
		}
	})
	return found
}

// verdict is the best evidence of one text.
type verdict struct {
	ok      bool
	ci      int
	src     srcKind
	m       *match
	s       *source
	negSeen bool
}

// best returns the best non-negated match of a text (strong before weak, then by class priority).
func (s *source) best(allowWeak bool) verdict {
	v := verdict{src: s.kind, s: s}
	for k := range s.matches {
		m := &s.matches[k]
		if m.ci == ciMask {
			continue
		}
		if m.negated {
			v.negSeen = true
			continue
		}
		if m.weak && !allowWeak {
			continue
		}
		if !v.ok || (v.m.weak && !m.weak) || (v.m.weak == m.weak && m.ci < v.ci) {
			v.ok, v.ci, v.m = true, m.ci, m
		}
	}
	return v
}

// decide applies the precedence between title, name and description.
func (f *field) decide(tb *secretTable) verdict {
	name, title, desc := &f.src[srcName], &f.src[srcTitle], &f.src[srcDesc]

	// A generic word made a secret by context ("code" near "sent") gives way to a text that names the
	// field as something else ("otp_channel").
	anyNeg := name.best(true).negSeen || title.best(true).negSeen
	tv := title.best(false)
	if tv.ok {
		if tv.m.soft && anyNeg {
			return verdict{}
		}
		return tv
	}
	if tv.negSeen {
		return verdict{}
	}
	titleAdds := f.titleAddsInfo(tb)
	titleIdentity := title.hasIdentity(tb)
	nv := name.best(!titleAdds)
	dv := desc.best(false)
	if nv.ok && !titleIdentity {
		// An abbreviation ("pwd") gives way to a description that names something else ("working directory").
		if !nv.m.weak || dv.ok || !desc.hasIdentity(tb) {
			return nv
		}
	}
	if nv.negSeen || nv.ok {
		return verdict{}
	}
	if titleIdentity || name.hasIdentity(tb) || titleAdds && title.hasCJK {
		return verdict{}
	}
	// The description is trusted in its first sentence only, when the secret opens it ("Your GitHub
	// token", "Your 12-word seed phrase" even on a field named "words"), or when the name says nothing
	// ("value", "input_7") and the title adds nothing.
	if !dv.ok || dv.m.seg != 0 {
		return verdict{}
	}
	if dv.m.a < 0 || dv.m.startTok <= 1 {
		return dv
	}
	if !name.hasNegator(tb) && name.opaque(tb) && !titleAdds && dv.m.startTok <= 4 {
		return dv
	}
	return verdict{}
}

// hasNegator reports whether a text holds a negator word ("scopes", "length", "name").
func (s *source) hasNegator(tb *secretTable) bool {
	for i := range s.toks {
		if !s.content(i) {
			continue
		}
		w := s.word(i)
		if tb.neg[w] != nil {
			return true
		}
		found := false
		forStems(w, func(stem string) { found = found || tb.negStem[stem] != nil })
		if found {
			return true
		}
	}
	return false
}

// anyEvidence returns a non-negated match from any text, for classing a format:password/writeOnly field.
func (f *field) anyEvidence() (verdict, bool) {
	for _, k := range []srcKind{srcTitle, srcName, srcDesc} {
		if v := f.src[k].best(true); v.ok {
			return v, true
		}
	}
	return verdict{}, false
}

// titleAddsInfo reports whether the title says something the name does not ("Sort key" for "sk").
func (f *field) titleAddsInfo(tb *secretTable) bool {
	t := &f.src[srcTitle]
	if t.hasCJK {
		return true
	}
	n := &f.src[srcName]
	for i := range t.toks {
		if !t.content(i) {
			continue
		}
		w := t.word(i)
		if tb.neutral[w] {
			continue
		}
		found := false
		for j := range n.toks {
			if n.word(j) == w {
				found = true
				break
			}
		}
		if !found {
			return true
		}
	}
	return false
}

// hasIdentity reports whether a text names a non-secret thing (an email, a URL, a name, an id, a path…).
func (s *source) hasIdentity(tb *secretTable) bool {
	for i := range s.toks {
		if s.content(i) && tb.identity.lookup(s.word(i)) != 0 {
			return true
		}
	}
	return false
}

// opaque reports whether a name carries no meaning of its own ("value", "input_7", "hf").
func (s *source) opaque(tb *secretTable) bool {
	if s.hasCJK {
		return false
	}
	for i := range s.toks {
		if !s.content(i) {
			continue
		}
		w := s.word(i)
		if len(w) > 2 && !tb.neutral[w] {
			return false
		}
	}
	return true
}

// reason builds the lint message for a text verdict.
func (v verdict) reason(f *fieldInfo) string {
	s := v.s
	text := s.orig
	if len(text) > 60 {
		sg := s.segs[v.m.seg]
		text = strings.TrimSpace(s.orig[sg.os:sg.oe])
		if text == "" {
			text = s.orig
		}
	}
	return clip(srcLabel[v.src] + " " + quoteExcerpt(text, 60) + " means " + classWords[v.ci])
}

// quoteExcerpt quotes at most max bytes of text (cut at a rune boundary), Go-style.
func quoteExcerpt(text string, max int) string {
	text = strings.TrimSpace(text)
	for {
		text = cutUTF8(text, max)
		q := strconv.Quote(text)
		if len(q) <= max+12 || text == "" {
			return q
		}
		max = len(text) * 2 / 3
	}
}

// clip bounds a reason to maxReasonLen bytes.
func clip(r string) string { return cutUTF8(r, maxReasonLen) }

// ---------------------------------------------------------------------------------------------------------
// Tables

type wordPat struct {
	w    string
	stem bool // w is a stem: up to maxStemTail more letters may follow ("парол*" matches "пароля")
}

const maxStemTail = 3

func (p wordPat) matches(w string) bool {
	if !p.stem {
		return w == p.w
	}
	return strings.HasPrefix(w, p.w) && utf8.RuneCountInString(w[len(p.w):]) <= maxStemTail
}

type rule struct {
	words    []wordPat
	ci       int
	nameOnly bool   // an abbreviation: only in property names, and weak evidence
	alone    bool   // also matches with no context when it is the only word of its text
	soft     bool   // generic word: loses to a negated match in another text
	ctx      uint32 // needs one of these context groups in the field (unless alone)
	noctx    uint32 // must not have any of these
	order    int
	langs    uint32 // the vocabulary files that hold it (bits index secretTable.langs)
}

type cjkPat struct {
	pat        string
	ci         int
	ctx, noctx uint32
	langs      uint32 // the vocabulary files that hold it
}

type maskPat struct {
	pat  string
	mask uint32
}

const (
	scopeSeg  = iota // anywhere in the same segment
	scopeNear        // the content word right before or after the match
	scopeAdj         // the content word right after the match, or before it across a preposition
)

type negator struct {
	scope int
	mask  uint32 // classes it turns off
}

// wordMask maps words (exact, or by stem) to a bit mask.
type wordMask struct {
	exact map[string]uint32
	stems map[string]uint32
}

func (m *wordMask) add(w string, bits uint32) {
	if strings.HasSuffix(w, "*") {
		m.stems[strings.TrimSuffix(w, "*")] |= bits
	} else {
		m.exact[w] |= bits
	}
}

func (m *wordMask) lookup(w string) uint32 {
	bits := m.exact[w]
	forStems(w, func(stem string) { bits |= m.stems[stem] })
	return bits
}

// forStems calls fn with each prefix of w that leaves at most maxStemTail letters.
func forStems(w string, fn func(string)) {
	n := utf8.RuneCountInString(w)
	cut := len(w)
	for k := 0; k <= maxStemTail && k < n; k++ {
		fn(w[:cut])
		_, size := utf8.DecodeLastRuneInString(w[:cut])
		cut -= size
	}
}

type negStems map[string][]negator

type secretTable struct {
	first       map[string][]*rule // rules by their first word
	firstStem   map[string][]*rule // rules whose first word is a stem, by that stem
	cjk         []cjkPat           // longest first
	cjkNeg      []maskPat
	cjkFieldNeg []maskPat
	cjkCtx      []maskPat
	ctxGroups   map[string]uint32
	ctxWords    wordMask
	fieldNeg    wordMask
	identity    wordMask
	neg         map[string][]negator
	negStem     negStems
	stop        map[string]uint8
	neutral     map[string]bool
	vocab       map[string]bool // known words for splitting glued names
	suffixes    []string
	langs       []string // the vocabulary files' languages ("es" for vocab/es.txt), by bit of rule.langs
}

// language names the one vocabulary file among langs, or "" when the term is in several (or none).
func (tb *secretTable) language(langs uint32) string {
	if langs == 0 || langs&(langs-1) != 0 {
		return ""
	}
	for i := range tb.langs {
		if langs == 1<<i {
			return tb.langs[i]
		}
	}
	return ""
}

var (
	secretTableOnce sync.Once
	secretTableVal  *secretTable
)

// tables returns the detector's tables, built from the embedded data files on first use. A mistake in
// those files is a build error in effect: TestVocabLoads fails on it.
func tables() *secretTable {
	secretTableOnce.Do(func() {
		tb, err := loadVocab(embeddedVocab())
		if err != nil {
			panic("secret detector vocabulary: " + err.Error())
		}
		secretTableVal = tb
	})
	return secretTableVal
}

// bestRule finds the longest rule matching at token i; it returns the rule and its last token.
func (tb *secretTable) bestRule(s *source, i int, ctx uint32) (*rule, int) {
	w := s.word(i)
	var best *rule
	bestEnd, bestLen, bestGaps := -1, 0, 0
	try := func(rs []*rule) {
		for _, r := range rs {
			if r.nameOnly && s.kind != srcName {
				continue
			}
			end, gaps, ok := s.phraseAt(r.words, i)
			if !ok {
				continue
			}
			if r.ctx != 0 && ctx&r.ctx == 0 && !(r.alone && s.onlyContent(i, end)) {
				continue
			}
			if r.noctx != 0 && ctx&r.noctx != 0 {
				continue
			}
			n := len(r.words)
			if best == nil || n > bestLen || n == bestLen && (gaps < bestGaps || gaps == bestGaps && r.order < best.order) {
				best, bestEnd, bestLen, bestGaps = r, end, n, gaps
			}
		}
	}
	try(tb.first[w])
	forStems(w, func(stem string) { try(tb.firstStem[stem]) })
	return best, bestEnd
}

// phraseAt matches words starting at token i: stopwords are skipped, and one other word may sit between two
// phrase words. It stays inside one segment.
func (s *source) phraseAt(words []wordPat, i int) (end, gaps int, ok bool) {
	if !words[0].matches(s.word(i)) {
		return 0, 0, false
	}
	seg := s.toks[i].seg
	j := i
	for _, p := range words[1:] {
		gap := 0
		k := j + 1
		for ; k < len(s.toks) && s.toks[k].seg == seg; k++ {
			if p.matches(s.word(k)) {
				break
			}
			if s.toks[k].flags&tkStop != 0 && k-j <= 4 {
				continue
			}
			gap++
			if gap > 1 {
				return 0, 0, false
			}
		}
		if k >= len(s.toks) || s.toks[k].seg != seg {
			return 0, 0, false
		}
		gaps += gap
		j = k
	}
	return j, gaps, true
}

// onlyContent reports whether tokens a..b hold the only content words of their segment ("Clave:",
// "Clave (mínimo 8 caracteres)").
func (s *source) onlyContent(a, b int) bool {
	sg := s.segs[s.toks[a].seg]
	for j := int(sg.ts); j < int(sg.te); j++ {
		if (j < a || j > b) && s.content(j) {
			return false
		}
	}
	return true
}
