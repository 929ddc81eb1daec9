package core

// The secret detector's vocabulary: one data file per language in vocab/ (vocab/README.md describes the
// format), embedded in guard.wasm and turned into a secretTable once, on first use.

import (
	"embed"
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

type vocabEntry struct {
	sec   *vocabSection
	file  string
	line  int
	words []string // normalised words, a trailing * marks a stem
	cjk   string   // a CJK substring pattern instead of words
}

// loadVocab builds the detector's tables from data files. Any mistake is reported with its file and line.
func loadVocab(files []vocabFile) (*secretTable, error) {
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
	var entries []vocabEntry
	for _, f := range files {
		var err error
		if entries, err = tb.parseVocab(f, entries); err != nil {
			return nil, err
		}
	}
	// Stopwords first: phrases drop them, and the splitting vocabulary leaves them out.
	for _, e := range entries {
		switch e.sec.kind {
		case secStop:
			tb.stop[e.words[0]] |= tkStop
		case secPrep:
			tb.stop[e.words[0]] |= tkStop | tkPrep
		}
	}
	addVocab := func(w string) {
		w = strings.TrimSuffix(w, "*")
		if len(w) >= 2 && tb.stop[w] == 0 && isASCIIWord(w) {
			tb.vocab[w] = true
		}
	}
	type ruleAt struct {
		r   *rule
		key [4]int
	}
	var rules []ruleAt
	type cjkAt struct {
		p   cjkPat
		key [4]int
	}
	var cjks []cjkAt
	seen := map[string]bool{}
	var novocab []string
	for n, e := range entries {
		sec := e.sec
		// The same term in two files (a word shared by two languages) counts once.
		key := string(rune('a'+sec.kind)) + strconv.Itoa(sec.ci) + "/" + strconv.FormatUint(uint64(sec.ctx), 16) + "/" +
			strconv.FormatUint(uint64(sec.noctx), 16) + "/" + strconv.FormatUint(uint64(sec.mask), 16) + "/" +
			strconv.Itoa(sec.scope) + "/" + strconv.FormatUint(uint64(sec.group), 16) + "/" +
			strconv.FormatBool(sec.nameOnly) + strconv.FormatBool(sec.alone) + strconv.FormatBool(sec.soft) + "/" +
			e.cjk + "/" + strings.Join(e.words, " ")
		if seen[key] {
			continue
		}
		seen[key] = true
		if e.cjk != "" {
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
				cjks = append(cjks, cjkAt{cjkPat{pat: e.cjk, ci: ci, ctx: sec.ctx, noctx: sec.noctx}, [4]int{-len(e.cjk), conditional, ci, n}})
			case secOff:
				p := maskPat{pat: e.cjk, mask: sec.mask}
				if sec.scope == scopeField {
					tb.cjkFieldNeg = append(tb.cjkFieldNeg, p)
				} else {
					tb.cjkNeg = append(tb.cjkNeg, p)
				}
			case secContext:
				tb.cjkCtx = append(tb.cjkCtx, maskPat{pat: e.cjk, mask: sec.group})
			}
			continue
		}
		switch sec.kind {
		case secClass, secMask:
			r := &rule{ci: sec.ci, nameOnly: sec.nameOnly, alone: sec.alone, soft: sec.soft, ctx: sec.ctx, noctx: sec.noctx}
			if sec.kind == secMask {
				r.ci = ciMask
			}
			for _, w := range e.words {
				if tb.stop[strings.TrimSuffix(w, "*")] != 0 {
					continue
				}
				r.words = append(r.words, wordPat{w: strings.TrimSuffix(w, "*"), stem: strings.HasSuffix(w, "*")})
				addVocab(w)
			}
			if len(r.words) == 0 {
				return nil, &vocabError{e.file, e.line, "the term holds only stopwords"}
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
			rules = append(rules, ruleAt{r, [4]int{conditional, abbrev, r.ci, n}})
		case secOff:
			w := e.words[0]
			if sec.scope == scopeField {
				tb.fieldNeg.add(w, sec.mask)
			} else {
				ng := negator{scope: sec.scope, mask: sec.mask}
				if stem, ok := strings.CutSuffix(w, "*"); ok {
					tb.negStem[stem] = append(tb.negStem[stem], ng)
				} else {
					tb.neg[w] = append(tb.neg[w], ng)
				}
			}
			addVocab(w)
		case secContext:
			tb.ctxWords.add(e.words[0], sec.group)
			addVocab(e.words[0])
		case secIdentity:
			tb.identity.add(e.words[0], 1)
			addVocab(e.words[0])
		case secNeutral:
			tb.neutral[e.words[0]] = true
			addVocab(e.words[0])
		case secSplit:
			addVocab(e.words[0])
		case secNoSplit:
			novocab = append(novocab, e.words[0])
		case secEnding:
			tb.suffixes = append(tb.suffixes, e.words[0])
		}
	}
	for _, w := range novocab {
		delete(tb.vocab, w)
	}
	slices.SortStableFunc(rules, func(a, b ruleAt) int { return slices.Compare(a.key[:], b.key[:]) })
	for i, ra := range rules {
		r := ra.r
		r.order = i
		if r.words[0].stem {
			tb.firstStem[r.words[0].w] = append(tb.firstStem[r.words[0].w], r)
		} else {
			tb.first[r.words[0].w] = append(tb.first[r.words[0].w], r)
		}
	}
	// Longest CJK patterns first; among equals, those that need context, then the more specific class.
	slices.SortStableFunc(cjks, func(a, b cjkAt) int { return slices.Compare(a.key[:], b.key[:]) })
	tb.cjk = make([]cjkPat, len(cjks))
	for i := range cjks {
		tb.cjk[i] = cjks[i].p
	}
	return tb, nil
}

// parseVocab reads one data file, appending its terms to entries.
func (tb *secretTable) parseVocab(f vocabFile, entries []vocabEntry) ([]vocabEntry, error) {
	var sec *vocabSection
	text := f.text
	for line := 1; text != ""; line++ {
		raw, rest, _ := strings.Cut(text, "\n")
		text = rest
		fail := func(msg string) ([]vocabEntry, error) { return nil, &vocabError{f.name, line, msg} }
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
		words, cjk, msg := normTerm(t)
		if msg != "" {
			return fail(msg)
		}
		e := vocabEntry{sec: sec, file: f.name, line: line, words: words, cjk: cjk}
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
			if len(words) != 1 {
				return fail("this section takes one word a line, " + strconv.Quote(t) + " is " + strconv.Itoa(len(words)))
			}
			if strings.HasSuffix(words[0], "*") && sec.kind != secOff && sec.kind != secContext && sec.kind != secIdentity {
				return fail("this section takes no stems (*)")
			}
		}
		entries = append(entries, e)
	}
	return entries, nil
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
// without accents, cut at spaces, punctuation and letter/digit or script changes; a trailing * marks a stem.
// A term holding Chinese, Japanese or Korean becomes one substring pattern (letters and CJK characters only).
func normTerm(t string) (words []string, cjk, msg string) {
	for _, r := range t {
		if isCJK(foldWidth(r)) {
			var b []byte
			for _, r := range t {
				r = foldWidth(r)
				switch {
				case r == '*':
					return nil, "", "a CJK term cannot be a stem (*)"
				case isCJK(r):
					b = utf8.AppendRune(b, unicode.ToLower(r))
				case unicode.IsLetter(r) || unicode.IsDigit(r):
					b = appendFolded(b, r)
				}
			}
			return nil, string(b), ""
		}
	}
	var cur []byte
	script := 0
	for _, r := range t {
		r = foldWidth(r)
		switch {
		case unicode.Is(unicode.Mn, r):
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if script == 5 {
				return nil, "", "a * must end a word"
			}
			s := wordScript(r)
			if len(cur) > 0 && s != script {
				words = append(words, string(cur))
				cur = cur[:0]
			}
			script = s
			cur = appendFolded(cur, r)
		case r == '*':
			if len(cur) == 0 {
				return nil, "", "a * must end a word"
			}
			words = append(words, string(cur)+"*")
			cur = cur[:0]
			script = 5 // nothing may follow in the same word
		default:
			if script == 5 && !unicode.IsSpace(r) {
				return nil, "", "a * must end a word"
			}
			if len(cur) > 0 {
				words = append(words, string(cur))
				cur = cur[:0]
			}
			script = 0
		}
	}
	if len(cur) > 0 {
		if script == 5 {
			return nil, "", "a * must end a word"
		}
		words = append(words, string(cur))
	}
	if len(words) == 0 {
		return nil, "", "no word in the term"
	}
	return words, "", ""
}

func isASCIIWord(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}
