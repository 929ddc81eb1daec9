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
//   - Latin and Cyrillic words are matched against a phrase table (secretTables below): a phrase is a
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
	typ := strings.ToLower(strings.TrimSpace(f.Type))
	if typ == "boolean" || typ == "null" || typ == "object" || f.Choice {
		return secretNone, ""
	}
	if nonSecretFormats[strings.ToLower(strings.TrimSpace(f.Format))] {
		return secretNone, ""
	}
	tb := tables()

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
		return classByIndex[res.ci], res.reason(f)
	}

	masked := strings.EqualFold(strings.TrimSpace(f.Format), "password")
	if !masked && !f.WriteOnly {
		return secretNone, ""
	}
	ci := ciPassword
	if ev, ok := fld.anyEvidence(); ok && (!numeric || numericClasses&(1<<ev.ci) != 0) {
		ci = ev.ci
	}
	if masked {
		return classByIndex[ci], `format "password" marks a masked ` + classWords[ci]
	}
	if strings.TrimSpace(f.Name) == "" {
		return classByIndex[ci], "writeOnly marks a hidden " + classWords[ci]
	}
	return classByIndex[ci], clip("writeOnly on " + quoteExcerpt(f.Name, 60) + " marks a hidden " + classWords[ci])
}

// fieldClass is the detector's verdict on one form field as hosts and
// policies see it (the policy input's "fields", guest/ABI.md).
type fieldClass struct {
	class    secretClass // "" when the field asks for no secret
	reason   string
	language string // the evidence's language, when the vocabulary records it; else ""
}

// classifyField is detectSecret's verdict with what a policy may need.
func classifyField(f *fieldInfo) fieldClass {
	c, r := detectSecret(f)
	return fieldClass{class: c, reason: r}
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
	ci       int   // class index, or ciMask
	a, b     int   // first and last token (Latin matches); -1 for CJK matches
	seg      int   // segment
	weak     bool  // an abbreviation valid in names only
	soft     bool  // a generic word that context made a secret ("code" near "sent")
	negated  bool  // turned off by a negator
	startTok int16 // position of the first content token of its segment it starts at (for descriptions)
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
	if len(text) > maxTextLen {
		cut := maxTextLen
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	nb, cb := *nbp, *cbp
	toks := make([]token, 0, len(text)/4+2)
	segs := make([]segment, 0, 2)

	seg := segment{cs: int32(len(cb))}
	curStart := -1     // start of the current word in nb
	curScript := 0     // 1 Latin, 2 Cyrillic, 3 other letters, 4 digits
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
			script := 3
			switch {
			case unicode.IsDigit(r):
				script = 4
			case r < 0x250:
				script = 1
			case unicode.Is(unicode.Cyrillic, r):
				script = 2
			}
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
			l1, l2 := foldRune(r)
			nb = utf8.AppendRune(nb, l1)
			cb = utf8.AppendRune(cb, l1)
			if l2 != 0 {
				nb = utf8.AppendRune(nb, l2)
				cb = utf8.AppendRune(cb, l2)
			}
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
		s.matches = append(s.matches, match{ci: r.ci, a: i, b: end, seg: int(s.toks[i].seg), weak: r.nameOnly, soft: r.soft})
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
				s.matches = append(s.matches, match{ci: p.ci, a: -1, b: -1, seg: si})
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
		if len(text) > max {
			cut := max
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
			text = text[:cut]
		}
		q := strconv.Quote(text)
		if len(q) <= max+12 || text == "" {
			return q
		}
		max = len(text) * 2 / 3
	}
}

// clip bounds a reason to maxReasonLen bytes.
func clip(r string) string {
	if len(r) <= maxReasonLen {
		return r
	}
	cut := maxReasonLen
	for cut > 0 && !utf8.RuneStart(r[cut]) {
		cut--
	}
	return r[:cut]
}

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
}

type cjkPat struct {
	pat        string
	ci         int
	ctx, noctx uint32
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
}

var (
	secretTableOnce sync.Once
	secretTableVal  *secretTable
)

func tables() *secretTable {
	secretTableOnce.Do(func() { secretTableVal = buildSecretTable(secretTables) })
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

var classNames = map[string]int{
	"client_secret": ciClientSecret, "cvv": ciCVV, "pin": ciPIN, "otp": ciOTP, "recovery_code": ciRecovery,
	"password": ciPassword, "private_key": ciPrivateKey, "payment_card": ciCard, "access_token": ciAccessToken,
	"api_key": ciAPIKey, "mask": ciMask,
}

// buildSecretTable parses the table text. Its format, one statement a line ("#" starts a comment, a line
// starting with a space continues the previous one):
//
//	rule CLASS [name] [alone] [ctx=G,G] [noctx=G] : phrase | phrase …   Latin/Cyrillic phrases ({a,b} expands)
//	cjk CLASS [ctx=G] [noctx=G] : pattern | …                            CJK substrings (also mixed: "api密钥")
//	neg seg|near|adj CLASSES : word | …                                  negators (CLASSES: comma list or all)
//	fneg CLASSES : word | …      cjkneg CLASSES : pattern | …      cjkfneg CLASSES : pattern | …
//	ctx G : word | …             cjkctx G : pattern | …
//	stop : word | …   prep : word | …   neutral : …   identity : …   vocab : …   novocab : …   suffix : …
//
// Words are written normalised (lower case, no accents). A trailing * makes a stem.
func buildSecretTable(src string) *secretTable {
	tb := &secretTable{
		first:     map[string][]*rule{},
		firstStem: map[string][]*rule{},
		ctxGroups: map[string]uint32{},
		ctxWords:  wordMask{map[string]uint32{}, map[string]uint32{}},
		fieldNeg:  wordMask{map[string]uint32{}, map[string]uint32{}},
		identity:  wordMask{map[string]uint32{}, map[string]uint32{}},
		neg:       map[string][]negator{},
		negStem:   negStems{},
		stop:      map[string]uint8{},
		neutral:   map[string]bool{},
		vocab:     map[string]bool{},
	}
	group := func(name string) uint32 {
		if b, ok := tb.ctxGroups[name]; ok {
			return b
		}
		b := uint32(1) << len(tb.ctxGroups)
		if len(tb.ctxGroups) >= 32 {
			panic("secret tables: too many context groups")
		}
		tb.ctxGroups[name] = b
		return b
	}
	groups := func(list string) (m uint32) {
		for _, g := range strings.Split(list, ",") {
			m |= group(g)
		}
		return m
	}
	classMask := func(list string) (m uint32) {
		if list == "all" {
			return 1<<numClasses - 1
		}
		for _, c := range strings.Split(list, ",") {
			ci, ok := classNames[c]
			if !ok {
				panic("secret tables: unknown class " + c)
			}
			m |= 1 << ci
		}
		return m
	}
	addVocab := func(w string) {
		w = strings.TrimSuffix(w, "*")
		if len(w) >= 2 && tb.stop[w] == 0 && isASCIIWord(w) {
			tb.vocab[w] = true
		}
	}
	order := 0
	var novocab []string

	// Join continuation lines.
	var stmts []string
	for _, line := range strings.Split(src, "\n") {
		if k := strings.Index(line, "#"); k >= 0 {
			line = line[:k]
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if (line[0] == ' ' || line[0] == '\t') && len(stmts) > 0 {
			stmts[len(stmts)-1] += " " + strings.TrimSpace(line)
			continue
		}
		stmts = append(stmts, strings.TrimSpace(line))
	}
	type statement struct {
		head  []string
		items []string
	}
	parsed := make([]statement, 0, len(stmts))
	for _, st := range stmts {
		colon := strings.Index(st, " : ")
		if colon < 0 {
			panic("secret tables: no ' : ' in " + st)
		}
		var items []string
		for _, it := range strings.Split(st[colon+3:], "|") {
			it = strings.TrimSpace(it)
			switch {
			case it == "":
			case strings.IndexByte(it, '{') >= 0:
				items = append(items, expandBraces(it)...)
			default:
				items = append(items, it)
			}
		}
		parsed = append(parsed, statement{strings.Fields(st[:colon]), items})
	}
	// Stopwords first: the vocabulary leaves them out.
	for pass := 0; pass < 2; pass++ {
		for _, st := range parsed {
			head, items := st.head, st.items
			kind := head[0]
			if (kind == "stop" || kind == "prep") != (pass == 0) {
				continue
			}
			switch kind {
			case "stop", "prep":
				f := uint8(tkStop)
				if kind == "prep" {
					f |= tkPrep
				}
				for _, w := range items {
					tb.stop[w] |= f
				}
			case "rule":
				ci := classNames[head[1]]
				r0 := rule{ci: ci}
				for _, fl := range head[2:] {
					switch {
					case fl == "name":
						r0.nameOnly = true
					case fl == "alone":
						r0.alone = true
					case fl == "soft":
						r0.soft = true
					case strings.HasPrefix(fl, "ctx="):
						r0.ctx = groups(fl[4:])
					case strings.HasPrefix(fl, "noctx="):
						r0.noctx = groups(fl[6:])
					default:
						panic("secret tables: bad flag " + fl)
					}
				}
				for _, ph := range items {
					r := r0
					r.order = order
					order++
					for _, w := range strings.Fields(ph) {
						r.words = append(r.words, wordPat{w: strings.TrimSuffix(w, "*"), stem: strings.HasSuffix(w, "*")})
						addVocab(w)
					}
					rp := &r
					if r.words[0].stem {
						tb.firstStem[r.words[0].w] = append(tb.firstStem[r.words[0].w], rp)
					} else {
						tb.first[r.words[0].w] = append(tb.first[r.words[0].w], rp)
					}
				}
			case "cjk":
				p0 := cjkPat{ci: classNames[head[1]]}
				for _, fl := range head[2:] {
					switch {
					case strings.HasPrefix(fl, "ctx="):
						p0.ctx = groups(fl[4:])
					case strings.HasPrefix(fl, "noctx="):
						p0.noctx = groups(fl[6:])
					default:
						panic("secret tables: bad flag " + fl)
					}
				}
				for _, it := range items {
					p := p0
					p.pat = strings.ToLower(strings.ReplaceAll(it, " ", ""))
					tb.cjk = append(tb.cjk, p)
				}
			case "neg":
				scope := map[string]int{"seg": scopeSeg, "near": scopeNear, "adj": scopeAdj}[head[1]]
				n := negator{scope: scope, mask: classMask(head[2])}
				for _, w := range items {
					if strings.HasSuffix(w, "*") {
						st := strings.TrimSuffix(w, "*")
						tb.negStem[st] = append(tb.negStem[st], n)
					} else {
						tb.neg[w] = append(tb.neg[w], n)
					}
					addVocab(w)
				}
			case "fneg":
				m := classMask(head[1])
				for _, w := range items {
					tb.fieldNeg.add(w, m)
					addVocab(w)
				}
			case "cjkneg", "cjkfneg":
				m := classMask(head[1])
				for _, it := range items {
					p := maskPat{pat: strings.ToLower(strings.ReplaceAll(it, " ", "")), mask: m}
					if kind == "cjkneg" {
						tb.cjkNeg = append(tb.cjkNeg, p)
					} else {
						tb.cjkFieldNeg = append(tb.cjkFieldNeg, p)
					}
				}
			case "ctx":
				g := group(head[1])
				for _, w := range items {
					tb.ctxWords.add(w, g)
					addVocab(w)
				}
			case "cjkctx":
				g := group(head[1])
				for _, it := range items {
					tb.cjkCtx = append(tb.cjkCtx, maskPat{pat: strings.ToLower(strings.ReplaceAll(it, " ", "")), mask: g})
				}
			case "identity":
				for _, w := range items {
					tb.identity.add(w, 1)
					addVocab(w)
				}
			case "neutral":
				for _, w := range items {
					tb.neutral[w] = true
					addVocab(w)
				}
			case "vocab":
				for _, w := range items {
					addVocab(w)
				}
			case "suffix":
				tb.suffixes = append(tb.suffixes, items...)
			case "novocab":
				novocab = append(novocab, items...)
			default:
				panic("secret tables: unknown statement " + kind)
			}
		}
	}
	for _, w := range novocab {
		delete(tb.vocab, w)
	}
	// Longest CJK patterns first (stable, so table order breaks ties).
	for i := 1; i < len(tb.cjk); i++ {
		for j := i; j > 0 && len(tb.cjk[j].pat) > len(tb.cjk[j-1].pat); j-- {
			tb.cjk[j], tb.cjk[j-1] = tb.cjk[j-1], tb.cjk[j]
		}
	}
	return tb
}

func isASCIIWord(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

// expandBraces expands "{a,b} c" into "a c", "b c"; an empty alternative drops the word ("{,credit} card").
func expandBraces(s string) []string {
	raw := expandRaw(s)
	out := raw[:0]
	for _, r := range raw {
		if r = strings.Join(strings.Fields(r), " "); r != "" {
			out = append(out, r)
		}
	}
	return out
}

func expandRaw(s string) []string {
	open := strings.IndexByte(s, '{')
	if open < 0 {
		return []string{s}
	}
	cl := strings.IndexByte(s[open:], '}')
	if cl < 0 {
		panic("secret tables: unclosed brace in " + s)
	}
	cl += open
	var out []string
	for _, alt := range strings.Split(s[open+1:cl], ",") {
		for _, rest := range expandRaw(s[cl+1:]) {
			out = append(out, s[:open]+alt+rest)
		}
	}
	return out
}

// secretTables is the vocabulary of the detector. Words are normalised: lower case, no accents (contraseña →
// contrasena, Schlüssel → schlussel, ё → е). See buildSecretTable for the format.
const secretTables = `
# ---- words skipped inside phrases -------------------------------------------------------------------------
prep : of | for | to | from | by | on | in | at | with | into | de | del | da | do | das | dos | du | des | di
  | della | dello | delle | dei | degli | dal | al | a | para | por | pour | par | sur | fur | von | vom | zum | zur
  | der | im | am | per | для | от | к | на | из | с | по | во
stop : the | an | your | my | our | this | that | and | or | is | are | be | please | here | you | we | it | its | as
  | s | el | la | los | las | un | una | unos | tu | tus | su | sus | mi | y | o | en | con | que | ingresa | ingrese
  | introduce | escribe | os | as | um | uma | seu | sua | seus | meu | minha | e | ou | na | nos | nas | com
  | informe | digite | insira | le | les | l | d | une | votre | vos | ton | ta | tes | mon | ma | et | au | aux | avec
  | saisissez | entrez | saisir | die | das | dem | den | ein | eine | einen | einer | ihr | ihre | ihren | ihrer | dein
  | deine | deinen | und | oder | mit | bitte | geben | sie | il | lo | i | gli | tuo | tua | tuoi | suo | inserisci
  | inserire | ваш | ваша | ваше | вашего | вашей | вашу | ваши | твой | твоя | и | или | в | введите | укажите | это
  | enter | paste | provide

# ---- passwords --------------------------------------------------------------------------------------------
rule password : password* | passwd | passcode* | passphrase* | pass phrase | passwort* | kennwort* | passw
  | mot passe | mots passe | motdepasse | contrasena* | senha* | palavra passe | palavras passe | palavrapasse
  | парол* | парольн* фраз* | parola ordine | credentials | credential | creds | login secret
  | secret word | memorable word | memorable information | кодов* слово | секретн* слово | palabra secreta
  | recovery password | keystore password | key password | phrase secrete | frase secreta | phrase passe
  | pass code | contrasena aplicacion | secret answer | parola segreta | geheimwort | codeword | code word
rule password name : pw | pwd | pass | psw | pswd | pword | pwrd | parol | parolya | mima | pasuwado | pasuwaado
  | bimilbeonho | bimilbunho | bimil beonho
# a security-question answer, when the field speaks of a security or secret question
rule password ctx=qa : maiden name | answer | answers | respuesta | reponse | antwort | ответ | resposta | risposta | otvet
  | sicherheitsantwort
# "clave" is the usual Latin-American word for a password, but also any key: it needs login context.
rule pin : clave {cajero,tarjeta,atm,debito,credito} | clave {de,del} cajero
rule otp : clave dinamica | clave {sms,temporal,otp,token}
rule private_key : clave privada | llave privada
rule api_key : clave {api,secreta api} | api clave | llave {api,secreta} | api llave
rule password alone ctx=pwclave : clave | claves

# ---- API keys and app secrets -----------------------------------------------------------------------------
rule api_key : api key* | apikey* | api secret | app secret | app key | application key | application secret
  | secret key* | secretkey | secret access key | access key | developer key | dev key | subscription key
  | auth key | authkey | service key | server key | write key | admin key | consumer key | master api key
  | {webhook,signing,shared,jwt,hmac,encryption,integration} secret | hmac key | secret | secret api key
  | {api,apis} schlussel | api schluessel | apischlussel | api ключ* | ключ* api | апи ключ*
  | {chave,cle,clef,chiave} {api,apis} | api {chave,cle,chiave}
  | {clave,chave} secreta | cle secrete | chiave segreta | секретн* ключ* | geheim* schlussel | geheimschlussel
  | zugangsschlussel | ключ* доступа | {cle,clef} acces | chiave accesso | geheimnis | segredo | secreto | segreto
  | секрет | секрета
rule api_key noctx=nfe : chave acesso
rule api_key name : sk | miyao

# ---- access tokens ----------------------------------------------------------------------------------------
rule access_token : token | access token | accesstoken | refresh token | bearer | bearer token | auth token
  | authtoken | session token | id token | personal access token | oauth token | jwt | jwt token
  | session cookie | auth cookie | authorization header | auth header | authorization token | jeton
  | jeton acces | token {acceso,acesso,accesso,acces} | zugriffstoken | zugangstoken | sitzungstoken
  | токен | токена | токеном | токену | токен доступа | secret token | access token secret | token secret
rule access_token name : tok | pat | lingpai

# ---- OAuth client secrets ---------------------------------------------------------------------------------
rule client_secret : client secret | clientsecret | consumer secret | oauth secret | secret client
  | {secreto,segredo,segreto,secret} {cliente,client} | client geheimnis | clientgeheimnis | секрет клиент*
  | клиентск* секрет*

# ---- private keys, seeds, mnemonics -----------------------------------------------------------------------
rule private_key : private key* | privatekey | privkey | priv key | signing key | encryption key | decryption key
  | seed phrase | seed words | seed word | wallet seed | mnemonic | mnemonic phrase | mnemonic words
  | recovery phrase | secret recovery phrase | backup phrase | keystore | keystore json | wif | xprv
  | wallet secret | wallet key | frase semilla | frase {recuperacion,recuperacao,recupero} | semilla
  | chave privada | frase semente | cle privee | clef privee | phrase {recuperation,mnemonique,graine}
  | phrase secrete recuperation | privater schlussel | private schlussel | privaten schlussel | privatschlussel
  | wiederherstellungsphrase | chiave privata | frase {mnemonica,seed} | recovery seed | seed {phrase,words}
  | {cle,clef} chiffrement | clave cifrado | chave criptografia | verschlusselungsschlussel | ключ* шифровани* | закрыт* ключ* | приватн* ключ*
  | сид фраз* | мнемоническ* фраз* | мнемоник* | фраз* восстановлени* | секретн* фраз* | seed phrasen
rule private_key name : siyao | zhujici | privkey
rule private_key ctx=wallet : seed

# ---- card numbers -----------------------------------------------------------------------------------------
rule payment_card : card {number,numbers,num,no,nr} | cardnumber | ccnum | ccn | cc {number,num,no,nr}
  | {credit,debit,payment,bank} card | {credit,debit,payment,bank} card number | primary account number
  | {numero,no,n,nr,num} {tarjeta,carte,cartao,carta} | tarjeta {credito,debito} | carte {bancaire,bleue,credit}
  | cartao {credito,debito} | carta {credito,debito} | kartennummer | kreditkartennummer | kreditkarte
  | kreditkarten nummer | karten nummer | nummer {karte,kreditkarte,debitkarte,bankkarte}
  | номер карт* | номер карточк* | {кредитн*,банковск*,дебетов*} карт*
rule payment_card ctx=card : pan
rule payment_card name : kahao
rule mask : pan card | pan number | card holder | cardholder | card type | gift card | sim card | id card

# ---- card security codes ----------------------------------------------------------------------------------
rule cvv : cvv | cvc | cvn | csc | cvv2 | cvc2 | card verification {code,value,number} | card security code
  | card verification | verification value | cryptogramme | cryptogramme visuel | kartenprufnummer
  | prufnummer | kartenprufziffer | prufziffer | {cvv,cvc} {code,codigo,kod,код,codice}
rule cvv ctx=card : cid
# a "security code" is the card's when the field speaks of a card, a one-time code when it was sent
rule cvv ctx=card : security code | {codigo,code,codice} {seguridad,seguranca,securite,sicurezza}
  | sicherheitscode | код безопасности
rule otp ctx=sent : security code | {codigo,code,codice} {seguridad,seguranca,securite,sicurezza}
  | sicherheitscode | код безопасности
rule cvv : security code | {codigo,code,codice} {seguridad,seguranca,securite,sicurezza} | sicherheitscode
  | код безопасности

# ---- PINs -------------------------------------------------------------------------------------------------
rule otp ctx=sms : pin
rule pin : pin | pins | pin code | pin number | pincode | puk | geheimzahl | geheimnummer | pin nummer
  | code confidentiel | code secret | numero secreto | codice segreto | senha cartao | senha {do,de} cartao
  | пин | пин код | пинкод | mpin | tpin | upi pin | atm pin | transaction pin
  | {withdrawal,transaction,payment,trading,trade} password | withdrawal pin
rule pin ctx=card : nip
rule pin name : zhifu mima | qukuan mima | jiaoyi mima | anshobango | ansho bango | anshou bangou
rule otp name : injeung beonho | injeungbeonho

# ---- one-time codes ---------------------------------------------------------------------------------------
rule otp : otp | otps | totp | hotp | otp code | one time {code,codes,password,passcode,pin,token} | onetime
  | 2 fa | 2 fa code | mfa | mfa code | tfa | two factor | two factor code | 2 step code | 2 sv | 2 sv code
  | verification code* | verify code | verification pin | verification number | confirmation code* | sms code*
  | text code | login code | sign in code | signin code | magic code | auth code | authentication code
  | authenticator code | reset code | password reset code | email code | one time | push tan | sms tan
  | chip tan | photo tan | m tan | mtan | pushtan | smstan | chiptan | phototan | tan nummer | einmalcode
  | einmalpasswort | einmal passwort | einmal code | einmalkennwort | bestatigungscode | verifizierungscode
  | verifikationscode | authentifizierungscode | anmeldecode | codigo {verificacion,confirmacion,sms,otp,autenticacion}
  | codigo un solo uso | codigo {verificacao,confirmacao,autenticacao,acesso} | senha {uso unico,unica,otp}
  | code {verification,confirmation,sms,otp,authentification,2fa} | code usage unique | code 2 fa
  | mot passe usage unique | mot passe unique | codice {verifica,conferma,otp,monouso,sms,autenticazione}
  | password monouso | код подтверждени* | код {смс,sms} | {смс,sms} код | одноразов* код* | одноразов* парол*
  | проверочн* код* | код верификац* | код аутентификац* | код из смс | код из sms | yanzhengma
  | contrasena un solo uso | clave un solo uso | codigo unico uso | одноразов* пин*
rule otp ctx=tan : tan
rule otp soft ctx=sent : code | codes | codigo | codice | код | kod
rule otp soft ctx=sentdigits : code | codes | codigo | codice | код | kod

# ---- backup and recovery codes ----------------------------------------------------------------------------
rule recovery_code : recovery code* | backup code* | recovery key* | scratch code* | emergency code*
  | rescue code* | backup verification code* | codigo {respaldo,recuperacion,recuperacao,backup,emergencia}
  | codigos {respaldo,recuperacion,recuperacao} | code {secours,recuperation,recup,recuperacion}
  | codes {secours,recuperation} | wiederherstellungscode* | backup code | notfallcode* | резервн* код*
  | код* восстановлени* | {codice,codici} {recupero,backup,emergenza,riserva} | codigos {backup,emergencia} | codes {backup,recuperation} | clave recuperacion | chave recuperacao
  | {cle,clef} recuperation | ключ* восстановлени* | wiederherstellungsschlussel | recovery codes

# ---- phrases that name no secret but hold secret-looking words --------------------------------------------
rule mask : public key* | publishable key* | pubkey | pub key | clave publica | chave publica | cle publique
  | clef publique | offentlicher schlussel | offentliche schlussel | chiave pubblica | публичн* ключ*
  | открыт* ключ* | passkey | passkeys | key word | keyword | palabra clave | palavra chave | parola chiave
  | mot cle | ключев* слов* | secret question | security question | pregunta secreta | question secrete
  | secret santa | csrf token | xsrf token | boarding pass | token count | tokens | jetons | токенов | токены
  | api key id | access key id | key id | token id | secret id | clabe

# ---- CJK: substrings, longest wins ------------------------------------------------------------------------
cjk password : 密码 | 密碼 | 口令 | 登录密码 | パスワード | パスフレーズ | 合言葉 | 비밀번호 | 비번 | 패스워드 | 암호
  | パスコード | 秘密の答え | 秘密の質問の答え | 秘密の質問の回答 | 質問の答え | 密保答案 | 密保问题答案 | 安全问题答案 | 安全問題答案
  | 密码问题答案 | 보안 질문 답변 | 보안질문의 답 | 비밀 질문 답변 | 질문 답변
cjk pin : 取款密码 | 提款密码 | 支付密码 | 付款密码 | 交易密码 | 银行卡密码 | 卡密码 | 取款密碼 | 支付密碼
  | pin码 | pin碼 | 暗証番号 | pinコード | 카드 비밀번호 | 결제 비밀번호 | 간편 비밀번호 | 계좌 비밀번호 | 핀 번호
  | pin 번호
cjk otp : 验证码 | 驗證碼 | 校验码 | 校驗碼 | 动态码 | 动态密码 | 動態密碼 | 一次性密码 | 一次性密碼 | 短信码
  | 动态口令 | 认证码 | 確認コード | 認証コード | 認証番号 | ワンタイムパスワード | ワンタイムコード | 検証コード
  | 인증번호 | 인증 코드 | 확인 코드 | 일회용 비밀번호 | 일회용 코드 | otp | 보안카드 | 보안 카드
cjk otp ctx=sent : 安全码 | セキュリティコード | 보안 코드
cjk cvv : 安全码 | 卡验证码 | cvv码 | cvc码 | セキュリティコード | カード確認番号 | 보안 코드 | 카드 보안 코드 | cvc 번호
  | cvv 번호
cjk recovery_code : 备用码 | 备用验证码 | 备份码 | 恢复码 | 恢复代码 | 救援码 | 備用碼 | 恢復碼 | バックアップコード
  | リカバリーコード | リカバリコード | 復旧コード | 予備コード | 回復コード | 복구 코드 | 백업 코드 | 예비 코드
cjk payment_card : 卡号 | 卡號 | 银行卡号 | 信用卡号 | カード番号 | クレジットカード番号 | 카드 번호 | 신용카드 번호
  | 카드 넘버 | 信用卡 | 银行卡 | クレジットカード | 신용카드
cjk access_token : 令牌 | 访问令牌 | 權杖 | トークン | アクセストークン | 토큰 | 액세스 토큰 | 접근 토큰
cjk api_key : 密钥 | 秘钥 | 金鑰 | api密钥 | api金鑰 | apiキー | api키 | シークレットキー | アクセスキー | 시크릿 키
  | 비밀 키 | 액세스 키 | 访问密钥 | 应用密钥
cjk client_secret : 客户端密钥 | 客户端密码 | 客戶端密鑰 | 客戶端密碼 | 用戶端密碼 | 用户端密钥 | 用戶端密鑰 | クライアントシークレット | 클라이언트 시크릿 | 클라이언트 비밀
cjk private_key : 私钥 | 私鑰 | 助记词 | 助記詞 | 恢复短语 | 种子短语 | 助记短语 | 秘密鍵 | 秘密キー | プライベートキー
  | ニーモニック | シードフレーズ | リカバリーフレーズ | 復元フレーズ | 개인 키 | 프라이빗 키 | 니모닉 | 시드 구문 | 복구 구문
  | 시드 문구 | 복구 문구
cjk mask : 公钥 | 公鑰 | 公開鍵 | 公開キー | パブリックキー | 공개 키 | 퍼블릭 키 | 秘密の質問 | 密保问题 | 安全问题
  | 보안 질문 | 비밀 질문 | 图形验证码 | 图片验证码 | 图形码 | 画像認証 | 보안 문자 | 암호화 | 암호문 | 关键词 | 關鍵詞
  | キーワード | 키워드 | 令牌数 | トークン数 | 토큰 수 | 토큰 개수 | 密码提示 | 비밀번호 관리 | 암호 관리 | 密码管理
  | 密碼管理 | パスワード管理 | パスワードマネージャ

# ---- negators: modifiers anywhere in the segment ----------------------------------------------------------
neg seg all : min | max | minimum | maximum | minimal | maximal | length | len | count | counts | limit | limits
  | hint | hints | reminder | policy | policies | strength | complexity | requirement* | rule | rules | expiry
  | expiration | expires | expire | expired | expiring | exp | ttl | lifetime | rotation | history | age | days
  | manager | managers | generator | meter | placeholder | fingerprint | checksum | algorithm | algo | bits
  | prefix | suffix | masked | preview | hash | hashed | digest | salt | attempts | attempt | retries | tries
  | interval | timeout | seconds | minutes | hours | duration | period | frequency | cycle | last | ultimos | ultimas | derniers | dernieres | letzten | letzte
  | последн* | ultime | ultimi | changed | updated | created | modified | rotated | minimo | minima | maximo | maxima | longitud | cantidad | limite | pista
  | recordatorio | politica | fuerza | complejidad | requisito* | regla | reglas | caducidad | vencimiento
  | expiracion | gestor | generador | algoritmo | comprimento | tamanho | quantidade | dica | lembrete | forca
  | requisitos | regras | validade | expiracao | gerenciador | gerador | longueur | taille | nombre | nb | indice
  | rappel | politique | force | exigence* | regle | regles | validite | gestionnaire | generateur | algorithme
  | mindest | mindestlange | lange | anzahl | grenze | hinweis | erinnerung | richtlinie | starke | komplexitat
  | anforderung* | regel | regeln | ablauf | ablaufdatum | gultigkeit | verwaltung | algorithmus | massimo
  | massima | lunghezza | quantita | suggerimento | promemoria | complessita | requisiti | regole | scadenza
  | gestore | generatore | мин | макс | минимум | максимум | ограничени* | минимальн* | максимальн* | длин* | количеств* | кол | лимит* | подсказк*
  | напоминани* | политик* | сложност* | требовани* | правил* | срок* | истечени* | менеджер* | генератор*
  | алгоритм* | tishi | zuida | zuixiao | changdu | shuliang | dlina | podskazka | kolvo | maks
# switches next to the secret ("otp_enabled", "Enable 2FA", "password_protected")
neg near all : enable | enabled | disable | disabled | enabling | toggle | required | require | requires
  | protected | forgot | forgotten | habilitar | habilitado | habilitada | activar | activado | activada | ativar
  | ativado | ativada | activer | active | desactiver | aktivieren | aktiviert | deaktiviert | abilita | abilitato
  | abilitare | attiva | attivo | включить | включен* | отключ* | olvidada | olvidado | oublie | esqueceu | vergessen
  | dimenticata | забыли | protegido | protege | geschutzt | protetto | защищ* | reveal | show | hide
# what the field really is, right after the secret word or before it across a preposition
neg adj all : id | ids | identifier | name | names | label | nickname | alias | title | type | types | kind
  | format | field | column | attribute | param | parameter | variable | var | env | url | uri | link | endpoint
  | email | mail | address | phone | date | timestamp | path | file | filename | directory | dir
  | folder | location | provider | issuer | method | channel | mode | status | state | level | score | version
  | arn | ref | reference | owner | holder | scope | scopes | permission* | role | source | helper | store
  | header | note | notes | comment | comments | description | memo | message | messages | check | result
  | etiqueta | tipo | formato | campo | correo | direccion | telefono | fecha | ruta | archivo
  | proveedor | emisor | metodo | canal | modo | estado | nivel | version | titular | identificador | rotulo
  | apelido | endereco | telefone | data | caminho | arquivo | provedor | emissor | versao | nome
  | etiquette | libelle | surnom | champ | courriel | adresse | telephone | chemin | fichier | fournisseur
  | emetteur | methode | etat | niveau | titulaire | identifiant | bezeichnung | typ | art | feld | telefon
  | datum | pfad | datei | anbieter | verfahren | kanal | modus | inhaber | kennung | etichetta
  | indirizzo | percorso | fornitore | canale | modalita | stato | titolare | identificativo | имя
  | назван* | тип | формат | поле | почт* | адрес* | телефон* | дат* | путь | файл* | провайдер*
  | способ* | метод* | канал* | режим* | статус* | уровен* | владел* | идентификатор*
# tokens that are counts, cursors or crypto assets
neg seg access_token : page | pagination | paginate | next | previous | cursor | continuation | sync | csrf
  | xsrf | idempotency | device | invite | invitation | mint | contract | symbol | ticker | decimals | supply
  | balance | amount | price | erc | spl | nft | airdrop | usage | budget | quota | remaining | window | context
  | per | cost | spend | output | input | prompt | completion | generation | embedding | tokenizer | llm | model
  | rate | bucket | ring | chars | characters | words | numero | number | standard | numer* | число | limite
  | audience | aud | claim | claims | subject | introspection | revocation | signature
# public keys
neg seg api_key,private_key,client_secret : public | publishable | publica | publico | publique | offentlich*
  | pubblica | pubblico | публичн* | открыт* | kokai | gongyao | kokaikagi
neg seg api_key : top | classification | classified | santa
# passes that are not passwords
neg seg password : boarding | season | bus | ski | rail | transit | metro | museum | festival | parking | day
  | annual | backstage | hall | gate | free | rate | fail | count | santa | recovery | reset | forgot | through
  | thru | ticket | holder
# codes that are not one-time codes
neg seg otp,cvv,recovery_code : promo | coupon | discount | voucher | referral | invite | invitation | postal
  | zip | country | area | dial | currency | language | lang | source | tracking | rastreio | rastreo
  | seguimiento | suivi | sendungsverfolgung | bank | sort | swift | bic | branch | product | producto | produit
  | color | colour | error | status | reference | referencia | order | pedido | commande | booking | reservation
  | reserva | flight | vuelo | vol | ticket | billete | billet | pnr | gift | regalo | qr | bar | barcode | airport
  | iata | tax | fiscal | fiscale | region | регион* | state | city | district | activity | naics | ncm | cfop
  | promocional | promocion | promotion | rabatt | gutschein | скидк* | купон* | sconto | cupom | cupon | desconto
  | descuento | html | css | snippet | program | python | javascript | embed | invitacion | convite
  | amigo | affiliate | partner | postale | postleitzahl | plz | cep | cap | pais | land | страны | страна
  | airline | record | locator | promotional | itinerary | reservierung | buchung
  | reservacion | prenotazione
neg seg payment_card : nickname | alias | holder | cardholder | titular | titulaire | inhaber | karteninhaber
  | владел* | brand | bandeira | marca | marque | network | issuer | emisor | expiry | exp | expiration
  | vencimiento | validade | validite | ablauf | срок* | last | ultimos | ultimas | derniers | dernier | letzte
  | letzten | последн* | ultime | ultimi | masked | bin | prefix | loyalty | fidelidad | fidelite | treue*
  | bonus | membership | member | socio | miembro | library | biblioteca | bibliotheque | gift | regalo | cadeau
  | geschenk* | id | identity | identidad | identite | national | nacional | health | sanitaria | salud
  | insurance | seguro | student | estudiante | sim | pan | aadhaar | business | visiting | report | sd | memory
  | graphics | video | sound | green | yellow | red | trading | playing | ration | voter | transit | metro
  | discount | descuento | club | frequent | flyer | reward | rewards | points | puntos | pontos | punkte
  | vitale | sante | sus | лояльност* | бонусн* | скидочн* | клубн* | kunden | kundenkarte | mitglied*
neg seg pin : promo | coupon | voucher | referral | country | area | dial | language | color | colour | status
  | position | board | map | location | marker | icon | style | postal | zip | cap | cep | plz | postleitzahl
  | pinterest | pinned | drop
# where a code goes is a channel, not a code
neg seg otp : where | donde | adonde | wohin | куда | dove | onde | channel | canal | kanal | канал* | method
  | metodo | methode | delivery | entrega | livraison | zustellung | способ* | доставк*
# card PINs are not postal PIN codes; card numbers are not their last four digits
fneg pin : postal | postcode | zip | zipcode | delivery | shipping | cep | plz | postleitzahl | почтов* | индекс
  | latitude | longitude | map | marker | geo | location | postale | envio | entrega | livraison | lieferung
  | consegna | доставк*
fneg payment_card : last | ultimos | ultimas | derniers | letzten | последни* | ultime | ultimi | income | aadhaar
  | gstin | masked
fneg access_token : pagination | paginate | cursor | continuation | csrf | xsrf | mint | erc | spl | nft
fneg otp : captcha
fneg api_key : nfe | danfe | cte

cjkneg all : 最大 | 最小 | 最多 | 最少 | 上限 | 下限 | 数量 | 个数 | 個数 | 개수 | 최대 | 최소 | 长度 | 長度 | 長さ
  | 길이 | 文字数 | 字数 | 提示 | ヒント | 힌트 | 强度 | 強度 | 강도 | 策略 | ポリシー | 정책 | 规则 | ルール | 규칙
  | 要求 | 要件 | 管理器 | マネージャー | 매니저 | 过期 | 有效期 | 到期 | 有効期限 | 期限 | 만료 | 유효기간 | 启用
  | 有効化 | 활성화 | 开启 | 是否 | 类型 | 種類 | タイプ | 유형 | 종류 | 算法 | アルゴリズム | 알고리즘 | 名称
  | 名前 | 이름 | 标签 | ラベル | 라벨 | 方式 | 方法 | 방법 | 数 | 지갑 주소 | 地址 | アドレス | 주소 | 忘记 | 忘れ
cjkneg access_token : 令牌数 | トークン数 | 토큰 수 | 토큰수 | 한도 | 제한 | 计数 | 使用量
cjkneg api_key,private_key,client_secret : 公开 | 公開 | 공개
cjkneg payment_card : 会员 | 積分 | 积分 | 图书 | 学生 | 社保 | 医保 | 公交 | 身份 | sim | 礼品 | 会員 | ポイント
  | 図書 | 健康保険 | マイナンバー | 멤버십 | 포인트 | 교통 | 학생 | 도서관 | 기프트 | 后四位 | 后4位 | 末四位 | 下4桁
  | 下四桁 | 뒷자리 | 끝자리 | 持卡人 | 名義 | 卡组织 | 发卡 | 有效期
cjkfneg pin : 邮编 | 邮政 | 郵便 | 우편
cjkfneg payment_card : 后四位 | 后4位 | 末四位 | 末4位 | 下4桁 | 下四桁 | 뒷자리 | 끝자리 | 뒤 4자리
cjkfneg otp : 图形 | 图片中 | 画像 | 보안 문자

# ---- context groups ---------------------------------------------------------------------------------------
ctx card : card | cards | cc | credit | debit | tarjeta | tarjetas | carte | cartes | cartao | carta | karte
  | kreditkarte | girocard | ec | карт* | visa | mastercard | amex | american | discover | payment | pago
  | paiement | pagamento | zahlung | оплат* | bancomat | atm | cajero | guichet | geldautomat | банкомат* | cb
  | kahao | debito | credito | bankkarte | kartenprufnummer
ctx sent : sms | sent | send | sending | enviado | enviada | enviamos | envoye | envoyee | envoyons | recu | received
  | receive | recibido | recibida | recebido | recebida | recebeu | gesendet | geschickt | erhalten | отправлен*
  | отправим | получен* | пришл* | смс | authenticator | autenticador | authentificateur | emailed | texted
  | inbox | ricevuto | ricevuta | inviato | inviata | inviamo | whatsapp | telegram | mfa | 2fa | totp
  | emailed | mailed | texto | mensagem | mensaje | message | аутентификатор* | authentifikator
ctx sentdigits : digit | digits | digitos | chiffres | ziffern | цифр* | cifre | stellig* | stelligen
ctx sms : sms | смс | text | texto | mensaje | mensagem | message | whatsapp | sent | enviado | enviada | envoye
  | gesendet | отправлен* | inviato
ctx tan : push | pushtan | smstan | chiptan | mtan | banking | bank | uberweisung | freigabe | auftrag | sparkasse
  | volksbank | sms
ctx qa : security | secret | secreta | secreto | secrete | seguridad | seguranca | securite | sicherheit
  | sicherheits | sicherheitsfrage | geheimfrage | geheim | segreta | segreto | sicurezza | memorable
  | контрольн* | секретн* | mibao | himitsu | challenge
ctx pwclave : acceso | access | internet | banca | ingresar | ingreso | entrar | iniciar | sesion | login | usuario
  | cuenta | secreta | personal | unica | segura | web | online | linea | aplicacion | app | contrasena | password
  | nueva | actual | anterior | confirmar | repetir | firma | cajero | transaccional | transacciones
ctx nfe : nfe | danfe | cte | nota | fiscal
ctx wallet : wallet | wallets | billetera | cartera | carteira | portefeuille | kryptowallet | кошел* | crypto
  | bitcoin | btc | ethereum | eth | metamask | ledger | trezor | bip | bip39 | solana | phantom | qianbao

cjkctx card : 卡 | カード | 카드 | 信用 | 银行 | 銀行
cjkctx sent : 短信 | 发送 | 收到 | 手机 | 邮件 | メール | 送信 | 届い | 문자 | 발송 | 전송 | 받은 | sms | 認証アプリ
cjkctx sentdigits : 桁 | 자리 | 位数字
cjkctx sms : 短信 | 문자 | sms | ショートメッセージ
cjkctx wallet : 钱包 | 錢包 | ウォレット | 지갑
cjkctx qa : 秘密の質問 | 密保 | 安全问题 | 보안 질문 | 비밀 질문 | 安全問題

# ---- words that tell what a field is, when it is no secret ------------------------------------------------
identity : email | mail | correo | courriel | почта | url | uri | link | website | address | direccion
  | endereco | adresse | indirizzo | адрес* | username | user | usuario | utilisateur | benutzername | benutzer
  | логин | login | phone | telefono | telephone | telefon | телефон* | date | fecha | datum | дата | path
  | directory | folder | ruta | chemin | pfad | путь | name | nombre | nom | nome | имя | id | identifier
  | count | city | country | street | company | organization | organisation | project | repository | repo
  | workspace | team | region | language | title | description | comment | note | notes | message | query
  | search | keyword | nickname | label | postal | zip | iban | swift | bic | routing | passport
neutral : value | val | input | field | text | data | string | entry | response | reply | item | param | arg
  | here | x | y | v | f | q | in | out | enter | your | the | new | old | current | confirm | repeat | again
  | retype | de | la | el | le | do | da

# ---- extra known words for splitting glued names ----------------------------------------------------------
vocab : new | old | current | confirm | confirmation | repeat | retype | again | user | admin | root | db
  | database | smtp | ftp | wifi | wlan | app | application | service | account | login | signin | master
  | default | initial | temp | temporary | personal | bot | github | gitlab | slack | openai | stripe | aws
  | azure | gcp | google | hf | vault | wallet | bank | online | banking | mobile | sms | email | mail | code
  | codes | number | num | key | keys | card | cards | one | time | verify | security | neues | altes
  | aktuelles | kredit | karten | zugriffs | zugangs | sicherheits | bestatigungs | privat | geheim | einmal
  | web | site | portal | proxy | router | ssh | gpg | pgp | jwt | oauth | api | bearer | session | cookie
  | refresh | access | auth | client | consumer | private | public | seed | phrase | recovery | backup
  | verification | cvv | cvc | pin | otp | mfa | tfa | cc | tan | hint | word | words | question | answer
  | tokens | token | secret | secrets | pass | pw | pwd | passwd | password | passwords | passphrase
  | passcode | credit | debit | expiry | exp | ttl | count | limit | max | min | length | name | id | url
  | type | enabled | policy | manager | my | store | holder | last | first | short | long | alt | main
  | primary | secondary | backup | retry | nuevo | nueva | actual | neuer | neue | nouveau | nouvelle
  | actuel | novo | nova | atual | nuovo | nuova | attuale
# short words that must not be cut out of longer ones ("bartok" is no "bar tok")
novocab : tok | sk | pat | pan | cid | tan | nip | puk | wif | ccn | csc | cvn | aud | var | env | dir | bin | sd
  | red | day | bus | gate | hall | free | rate | fail | top | age | exp | len | ref | art | kind | points
  | stripe | salt | hash
suffix : password | passwort | kennwort | passwd | passcode | passphrase | token | apikey | privkey
  | privatekey | cardnumber | prufnummer | geheimzahl
`
