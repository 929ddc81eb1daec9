package core

// The secret detector's vocabulary: one data file per language in vocab/ (vocab/README.md describes the
// format), embedded in guard.wasm and turned into a secretTable once, on first use.

import (
	"embed"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

//go:embed vocab/*.txt
var vocabFS embed.FS

// vocabFile is one data file: its name (for errors) and its text.
type vocabFile struct {
	name string
	text string
}

// embeddedVocab returns the embedded data files in name order.
func embeddedVocab() []vocabFile {
	ents, err := vocabFS.ReadDir("vocab")
	if err != nil {
		panic("vocab: " + err.Error())
	}
	files := make([]vocabFile, 0, len(ents))
	for _, e := range ents {
		b, err := vocabFS.ReadFile("vocab/" + e.Name())
		if err != nil {
			panic("vocab: " + err.Error())
		}
		files = append(files, vocabFile{name: "vocab/" + e.Name(), text: string(b)})
	}
	return files
}

// vocabError is a mistake in a data file, reported as file:line: message.
type vocabError struct {
	file string
	line int
	msg  string
}

func (e *vocabError) Error() string { return e.file + ":" + strconv.Itoa(e.line) + ": " + e.msg }

var classNames = map[string]int{
	"client_secret": ciClientSecret, "cvv": ciCVV, "pin": ciPIN, "otp": ciOTP, "recovery_code": ciRecovery,
	"password": ciPassword, "private_key": ciPrivateKey, "payment_card": ciCard, "access_token": ciAccessToken,
	"api_key": ciAPIKey,
}

type sectionKind uint8

const (
	secClass    sectionKind = iota // [password], [pin if=card], …: phrases that name a secret
	secMask                        // [not-secret]: phrases that consume secret-looking words
	secOff                         // [off CLASSES SCOPE]: negators
	secContext                     // [context G]
	secStop                        // [stop]
	secPrep                        // [prep]
	secIdentity                    // [identity]
	secNeutral                     // [neutral]
	secSplit                       // [split]
	secNoSplit                     // [nosplit]
	secEnding                      // [ending]
)

var plainSections = map[string]sectionKind{
	"not-secret": secMask, "stop": secStop, "prep": secPrep, "identity": secIdentity, "neutral": secNeutral,
	"split": secSplit, "nosplit": secNoSplit, "ending": secEnding,
}

// scopeField marks a negator that turns its classes off anywhere in the field.
const scopeField = scopeAdj + 1

var offScopes = map[string]int{"segment": scopeSeg, "next": scopeNear, "after": scopeAdj, "field": scopeField}

type vocabSection struct {
	kind       sectionKind
	ci         int
	nameOnly   bool
	alone      bool
	soft       bool
	ctx, noctx uint32
	mask       uint32 // classes of an [off …] section
	scope      int
	group      uint32 // the group of a [context …] section
}

// loadVocab builds the detector's tables from data files. Any mistake is reported with its file and line.
func loadVocab(files []vocabFile) (*secretTable, error) {
	tb := &secretTable{
		first:     make(map[string][]*rule, 1024),
		firstStem: make(map[string][]*rule, 64),
		ctxGroups: map[string]uint32{},
		ctxWords:  wordMask{make(map[string]uint32, 256), map[string]uint32{}},
		fieldNeg:  wordMask{make(map[string]uint32, 64), map[string]uint32{}},
		identity:  wordMask{make(map[string]uint32, 128), map[string]uint32{}},
		neg:       make(map[string][]negator, 1024),
		negStem:   negStems{},
		stop:      make(map[string]uint8, 256),
		neutral:   make(map[string]bool, 64),
		vocab:     make(map[string]bool, 2048),
	}
	// Stopwords first, from every file: phrases drop them, and the splitting vocabulary leaves them out.
	for _, f := range files {
		err := tb.parseVocab(f, true, func(sec *vocabSection, word, _ string) string {
			fl := uint8(tkStop)
			if sec.kind == secPrep {
				fl |= tkPrep
			}
			tb.stop[word] |= fl
			return ""
		})
		if err != nil {
			return nil, err
		}
	}
	if len(files) > 32 {
		return nil, &vocabError{files[32].name, 1, "more than 32 vocabulary files"}
	}
	b := vocabBuilder{tb: tb, seen: make(map[string]int, 2048)}
	for i, f := range files {
		tb.langs = append(tb.langs, strings.TrimSuffix(path.Base(f.name), ".txt"))
		b.lang = 1 << i
		if err := tb.parseVocab(f, false, b.add); err != nil {
			return nil, err
		}
	}
	b.finish()
	return tb, nil
}

type ruleAt struct {
	r   *rule
	key [4]int
}

type cjkAt struct {
	p   cjkPat
	key [4]int
}

// vocabBuilder adds the terms of the data files to a table.
type vocabBuilder struct {
	tb      *secretTable
	rules   []ruleAt
	cjks    []cjkAt
	seen    map[string]int // list entries already added, with their index in rules or cjks (else -1):
	key     []byte         // a term shared by two files counts once, with both languages
	novocab []string
	lang    uint32 // the bit of the file being read
}

// once reports whether a list entry of section sec is new, and else the index it was given.
func (b *vocabBuilder) once(sec *vocabSection, term string, words []wordPat, index int) (bool, int) {
	k := append(b.key[:0], byte(sec.kind), byte(sec.ci), byte(sec.scope))
	for _, f := range [...]bool{sec.nameOnly, sec.alone, sec.soft} {
		if f {
			k = append(k, 1)
		} else {
			k = append(k, 0)
		}
	}
	for _, m := range [...]uint32{sec.ctx, sec.noctx, sec.mask, sec.group} {
		k = append(k, byte(m), byte(m>>8), byte(m>>16), byte(m>>24))
	}
	k = append(k, term...)
	for _, w := range words {
		k = append(k, ' ')
		k = append(k, w.w...)
		if w.stem {
			k = append(k, '*')
		}
	}
	b.key = k
	if at, ok := b.seen[string(k)]; ok {
		return false, at
	}
	b.seen[string(k)] = index
	return true, 0
}

func (b *vocabBuilder) addVocab(w string) {
	w = strings.TrimSuffix(w, "*")
	if len(w) >= 2 && b.tb.stop[w] == 0 && isASCIIWord(w) {
		b.tb.vocab[w] = true
	}
}

// add adds one term of section sec; it returns a message when the term is wrong.
func (b *vocabBuilder) add(sec *vocabSection, norm, cjk string) string {
	tb := b.tb
	n := len(b.rules) + len(b.cjks)
	if cjk != "" {
		at := -1
		if sec.kind == secClass || sec.kind == secMask {
			at = len(b.cjks)
		}
		if isNew, at := b.once(sec, cjk, nil, at); !isNew {
			if at >= 0 {
				b.cjks[at].p.langs |= b.lang
			}
			return ""
		}
		switch sec.kind {
		case secClass, secMask:
			ci := sec.ci
			if sec.kind == secMask {
				ci = ciMask
			}
			conditional := 1
			if sec.ctx|sec.noctx != 0 {
				conditional = 0
			}
			b.cjks = append(b.cjks, cjkAt{cjkPat{pat: cjk, ci: ci, ctx: sec.ctx, noctx: sec.noctx, langs: b.lang}, [4]int{-len(cjk), conditional, ci, n}})
		case secOff:
			p := maskPat{pat: cjk, mask: sec.mask}
			if sec.scope == scopeField {
				tb.cjkFieldNeg = append(tb.cjkFieldNeg, p)
			} else {
				tb.cjkNeg = append(tb.cjkNeg, p)
			}
		case secContext:
			tb.cjkCtx = append(tb.cjkCtx, maskPat{pat: cjk, mask: sec.group})
		}
		return ""
	}
	w := norm // one word, except in [CLASS] and [not-secret]
	switch sec.kind {
	case secClass, secMask:
		r := &rule{ci: sec.ci, nameOnly: sec.nameOnly, alone: sec.alone, soft: sec.soft, ctx: sec.ctx, noctx: sec.noctx, langs: b.lang}
		if sec.kind == secMask {
			r.ci = ciMask
		}
		for rest := norm; rest != ""; {
			w, rest, _ = strings.Cut(rest, " ")
			stem, isStem := strings.CutSuffix(w, "*")
			if tb.stop[stem] != 0 {
				continue
			}
			r.words = append(r.words, wordPat{w: stem, stem: isStem})
			b.addVocab(w)
		}
		if len(r.words) == 0 {
			return "the term holds only stopwords"
		}
		if isNew, at := b.once(sec, "", r.words, len(b.rules)); !isNew {
			b.rules[at].r.langs |= b.lang
			return ""
		}
		// When one phrase has several rules ("security code" is a CVV near a card, an OTP when sent, else
		// a CVV), the rules that need context come first, then full words before abbreviations, then the
		// more specific class.
		conditional, abbrev := 1, 0
		if r.ctx|r.noctx != 0 {
			conditional = 0
		}
		if r.nameOnly {
			abbrev = 1
		}
		b.rules = append(b.rules, ruleAt{r, [4]int{conditional, abbrev, r.ci, n}})
	case secOff:
		if sec.scope == scopeField {
			tb.fieldNeg.add(w, sec.mask)
		} else if isNew, _ := b.once(sec, w, nil, -1); isNew {
			ng := negator{scope: sec.scope, mask: sec.mask}
			if stem, ok := strings.CutSuffix(w, "*"); ok {
				tb.negStem[stem] = append(tb.negStem[stem], ng)
			} else {
				tb.neg[w] = append(tb.neg[w], ng)
			}
		}
		b.addVocab(w)
	case secContext:
		tb.ctxWords.add(w, sec.group)
		b.addVocab(w)
	case secIdentity:
		tb.identity.add(w, 1)
		b.addVocab(w)
	case secNeutral:
		tb.neutral[w] = true
		b.addVocab(w)
	case secSplit:
		b.addVocab(w)
	case secNoSplit:
		b.novocab = append(b.novocab, w)
	case secEnding:
		if isNew, _ := b.once(sec, w, nil, -1); isNew {
			tb.suffixes = append(tb.suffixes, w)
		}
	}
	return ""
}

// finish orders the rules and CJK patterns and indexes the rules by their first word.
func (b *vocabBuilder) finish() {
	tb := b.tb
	for _, w := range b.novocab {
		delete(tb.vocab, w)
	}
	slices.SortStableFunc(b.rules, func(x, y ruleAt) int { return slices.Compare(x.key[:], y.key[:]) })
	for i, ra := range b.rules {
		r := ra.r
		r.order = i
		if r.words[0].stem {
			tb.firstStem[r.words[0].w] = append(tb.firstStem[r.words[0].w], r)
		} else {
			tb.first[r.words[0].w] = append(tb.first[r.words[0].w], r)
		}
	}
	// Longest CJK patterns first; among equals, those that need context, then the more specific class.
	slices.SortStableFunc(b.cjks, func(x, y cjkAt) int { return slices.Compare(x.key[:], y.key[:]) })
	tb.cjk = make([]cjkPat, len(b.cjks))
	for i := range b.cjks {
		tb.cjk[i] = b.cjks[i].p
	}
}

// parseVocab reads one data file and calls add for each term, with its section. With stopOnly it reads
// only the terms of [stop] and [prep] (and every section header).
func (tb *secretTable) parseVocab(f vocabFile, stopOnly bool, add func(sec *vocabSection, norm, cjk string) string) error {
	var sec *vocabSection
	text := f.text
	for line := 1; text != ""; line++ {
		raw, rest, _ := strings.Cut(text, "\n")
		text = rest
		fail := func(msg string) error { return &vocabError{f.name, line, msg} }
		if !utf8.ValidString(raw) {
			return fail("not UTF-8")
		}
		if k := strings.IndexByte(raw, '#'); k >= 0 {
			raw = raw[:k]
		}
		t := strings.TrimSpace(raw)
		if t == "" {
			continue
		}
		if t[0] == '[' {
			if t[len(t)-1] != ']' {
				return fail("a section header ends with ]")
			}
			s, msg := tb.parseSection(strings.Fields(t[1 : len(t)-1]))
			if msg != "" {
				return fail(msg)
			}
			sec = s
			continue
		}
		if sec == nil {
			return fail("a term before the first [section]")
		}
		if stopOnly != (sec.kind == secStop || sec.kind == secPrep) {
			continue
		}
		norm, cjk, msg := normTerm(t)
		if msg != "" {
			return fail(msg)
		}
		if cjk != "" {
			switch {
			case sec.kind == secClass && (sec.nameOnly || sec.alone || sec.soft):
				return fail("a CJK term cannot be name-only, alone or soft")
			case sec.kind == secOff && (sec.scope == scopeNear || sec.scope == scopeAdj):
				return fail("a CJK term can turn classes off only in its segment or field")
			case sec.kind != secClass && sec.kind != secMask && sec.kind != secOff && sec.kind != secContext:
				return fail("this section takes no CJK terms")
			}
		} else if sec.kind != secClass && sec.kind != secMask {
			if n := strings.Count(norm, " ") + 1; n != 1 {
				return fail("this section takes one word a line, " + strconv.Quote(t) + " is " + strconv.Itoa(n))
			}
			if strings.HasSuffix(norm, "*") && sec.kind != secOff && sec.kind != secContext && sec.kind != secIdentity {
				return fail("this section takes no stems (*)")
			}
		}
		if msg := add(sec, norm, cjk); msg != "" {
			return fail(msg)
		}
	}
	return nil
}

// parseSection reads the fields of a section header; it returns a message when they are wrong.
func (tb *secretTable) parseSection(fs []string) (*vocabSection, string) {
	if len(fs) == 0 {
		return nil, "empty section header"
	}
	if k, ok := plainSections[fs[0]]; ok {
		if len(fs) != 1 {
			return nil, "[" + fs[0] + "] takes nothing more"
		}
		return &vocabSection{kind: k}, ""
	}
	switch fs[0] {
	case "off":
		if len(fs) != 3 {
			return nil, "write [off CLASSES SCOPE], e.g. [off all segment]"
		}
		sec := &vocabSection{kind: secOff}
		if fs[1] == "all" {
			sec.mask = 1<<numClasses - 1
		} else {
			for _, c := range strings.Split(fs[1], ",") {
				ci, ok := classNames[c]
				if !ok {
					return nil, "unknown class " + strconv.Quote(c)
				}
				sec.mask |= 1 << ci
			}
		}
		scope, ok := offScopes[fs[2]]
		if !ok {
			return nil, "unknown scope " + strconv.Quote(fs[2]) + " (segment, next, after or field)"
		}
		sec.scope = scope
		return sec, ""
	case "context":
		if len(fs) != 2 {
			return nil, "write [context NAME]"
		}
		g, msg := tb.groups(fs[1])
		if msg != "" {
			return nil, msg
		}
		return &vocabSection{kind: secContext, group: g}, ""
	}
	ci, ok := classNames[fs[0]]
	if !ok {
		return nil, "unknown section " + strconv.Quote(fs[0])
	}
	sec := &vocabSection{kind: secClass, ci: ci}
	for _, m := range fs[1:] {
		var msg string
		switch {
		case m == "name-only":
			sec.nameOnly = true
		case m == "alone":
			sec.alone = true
		case m == "soft":
			sec.soft = true
		case strings.HasPrefix(m, "if="):
			sec.ctx, msg = tb.groups(m[3:])
		case strings.HasPrefix(m, "unless="):
			sec.noctx, msg = tb.groups(m[7:])
		default:
			msg = "unknown modifier " + strconv.Quote(m)
		}
		if msg != "" {
			return nil, msg
		}
	}
	return sec, ""
}

// groups returns the bits of a comma list of context group names, adding new groups.
func (tb *secretTable) groups(list string) (uint32, string) {
	var m uint32
	for _, g := range strings.Split(list, ",") {
		if g == "" || strings.Trim(g, "abcdefghijklmnopqrstuvwxyz0123456789_-") != "" {
			return 0, "bad context name " + strconv.Quote(g)
		}
		b, ok := tb.ctxGroups[g]
		if !ok {
			if len(tb.ctxGroups) >= 32 {
				return 0, "more than 32 context groups"
			}
			b = uint32(1) << len(tb.ctxGroups)
			tb.ctxGroups[g] = b
		}
		m |= b
	}
	return m, ""
}

// normTerm normalises a term the way the detector normalises a text: Latin and Cyrillic words in lower case
// without accents, cut at spaces, punctuation and letter/digit or script changes, joined by one space; a
// trailing * marks a stem. A term holding Chinese, Japanese or Korean becomes one substring pattern (letters
// and CJK characters only) instead.
func normTerm(t string) (norm, cjk, msg string) {
	if plainTerm(t) {
		return t, "", "" // already normalised: most lines are
	}
	for _, r := range t {
		if isCJK(foldWidth(r)) {
			var b []byte
			for _, r := range t {
				r = foldWidth(r)
				switch {
				case r == '*':
					return "", "", "a CJK term cannot be a stem (*)"
				case isCJK(r):
					b = utf8.AppendRune(b, unicode.ToLower(r))
				case unicode.IsLetter(r) || unicode.IsDigit(r):
					b = appendFolded(b, r)
				}
			}
			return "", string(b), ""
		}
	}
	var buf [128]byte
	out := buf[:0]
	inWord, script := false, 0 // script 5: a * ended the word
	for _, r := range t {
		r = foldWidth(r)
		switch {
		case unicode.Is(unicode.Mn, r):
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if script == 5 {
				return "", "", "a * must end a word"
			}
			s := wordScript(r)
			if inWord && s != script || !inWord && len(out) > 0 {
				out = append(out, ' ')
			}
			inWord, script = true, s
			out = appendFolded(out, r)
		case r == '*':
			if !inWord {
				return "", "", "a * must end a word"
			}
			out = append(out, '*')
			inWord, script = false, 5
		default:
			if script == 5 && !unicode.IsSpace(r) {
				return "", "", "a * must end a word"
			}
			inWord, script = false, 0
		}
	}
	if len(out) == 0 {
		return "", "", "no word in the term"
	}
	return string(out), "", ""
}

// plainTerm reports whether t is already normalised: lower-case ASCII words separated by one space, each
// maybe ending in *.
func plainTerm(t string) bool {
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c >= 'a' && c <= 'z':
		case c == ' ':
			if i == 0 || i == len(t)-1 || t[i-1] == ' ' {
				return false
			}
		case c == '*':
			if i == 0 || t[i-1] < 'a' || t[i-1] > 'z' || i+1 < len(t) && t[i+1] != ' ' {
				return false
			}
		default:
			return false
		}
	}
	return t != ""
}

func isASCIIWord(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}
