package core

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"strconv"
	"unsafe"
)

// callCtx is what every ask and resume is bound to.
type callCtx struct {
	nowMs     int64
	now       int64 // unix seconds
	rand      [randBytes]byte
	principal string
	method    string
	target    string
	args      [32]byte // SHA-256 of the RFC 8785 form of the arguments
	argsB64   string
	caps      int32  // ClientCapabilities node in the envelope, or -1
	up        string // the upstream's identity (upstream.* ops), else ""
	// pol is the policy version an approval round is bound to (the
	// envelope's "approval"), else "".
	pol string
}

// readCall reads the bindings, clock and entropy of an ask or resume.
func (g *Guard) readCall(root int32, c *callCtx, needRand bool) *Error {
	if err := g.readClock(root, c, needRand); err != nil {
		return err
	}
	p := &g.p
	return g.readBindings(c, p.get(root, "principal"), p.get(root, "method"), p.get(root, "target"), p.get(root, "arguments"), p.get(root, "capabilities"))
}

// readClock reads "now" and, when needed, "rand".
func (g *Guard) readClock(root int32, c *callCtx, needRand bool) *Error {
	p := &g.p
	ms, ok := p.int(p.get(root, "now"))
	if !ok || ms <= 0 || ms > maxNowMs {
		return newError(CodeRequestNoEntropy, "request needs \"now\": the host's clock in Unix milliseconds")
	}
	c.nowMs, c.now = ms, ms/1000
	if needRand {
		r, ok := p.string(p.get(root, "rand"))
		if !ok || b64.DecodedLen(len(r)) != randBytes {
			return newError(CodeRequestNoEntropy, "request needs \"rand\": "+itoa(randBytes)+" fresh random bytes, base64url without padding")
		}
		// The token's own decoder: as strict as validB64URL, in one pass.
		if !v4B64Decode(c.rand[:], bytesOf(r)) {
			return newError(CodeRequestNoEntropy, "\"rand\" is not valid base64url")
		}
	}
	return nil
}

// readBindings reads what a state is bound to from the given nodes (of
// the envelope, or of the client's request for the upstream.* ops).
func (g *Guard) readBindings(c *callCtx, principal, method, target, args, caps int32) *Error {
	p := &g.p
	var ok bool
	if c.principal, ok = p.string(principal); !ok || c.principal == "" || len(c.principal) > maxPrincipalLen {
		return newError(CodeRequestMalformed, "request needs \"principal\": the authenticated caller, a non-empty string")
	}
	c.method, _ = p.string(method)
	switch c.method {
	case "tools/call", "prompts/get", "resources/read":
	default:
		return newError(CodeMethodNotAllowed, "input_required is allowed only for tools/call, prompts/get and resources/read, not "+quote(c.method))
	}
	if c.target, ok = p.string(target); !ok || c.target == "" {
		return newError(CodeRequestMalformed, "request needs \"target\": the tool or prompt name, or the resource URI")
	}
	canon := g.buf[:0]
	if args < 0 || p.kindOf(args) == jNull {
		canon = append(canon, "{}"...)
	} else {
		err := p.checkExactNumbers(args)
		if err == nil {
			canon, err = p.appendCanonical(canon, args)
		}
		if err != nil {
			return &Error{Code: CodeArgumentsMalformed, Message: "arguments: " + err.Message}
		}
	}
	g.buf = canon
	c.args = sha256.Sum256(canon)
	c.argsB64 = b64.EncodeToString(c.args[:])
	c.caps = caps
	if c.caps >= 0 && p.kindOf(c.caps) != jObject && p.kindOf(c.caps) != jNull {
		return newError(CodeRequestMalformed, "\"capabilities\" must be the request's ClientCapabilities object")
	}
	return nil
}

// appendImplicit appends the PASETO implicit assertion: the request's
// bindings as one canonical JSON object. It is authenticated but never
// sent, so a state presented by another principal, for another method,
// target, arguments or audience fails to open.
func (g *Guard) appendImplicit(dst []byte, c *callCtx) []byte {
	return appendImplicitOf(dst, g.audience, c.principal, c.method, c.target, c.argsB64, c.up, c.pol)
}

func appendImplicitOf(dst []byte, aud, principal, method, target, argsB64, up, pol string) []byte {
	dst = append(dst, `{"args":`...)
	dst = appendString(dst, argsB64)
	dst = append(dst, `,"aud":`...)
	dst = appendString(dst, aud)
	dst = append(dst, `,"ctx":"`+implicitContext+`","method":`...)
	dst = appendString(dst, method)
	dst = append(dst, `,"principal":`...)
	dst = appendString(dst, principal)
	dst = append(dst, `,"target":`...)
	dst = appendString(dst, target)
	if up != "" {
		// Only a proxy's states carry it, so a server's state never opens
		// at a proxy, nor a proxy's at another upstream's proxy.
		dst = append(dst, `,"up":`...)
		dst = appendString(dst, up)
	}
	if pol != "" {
		// Only an approval's states carry it: an approval opens only
		// under the policy version that required it, and only where the
		// host expects an approval.
		dst = append(dst, `,"pol":`...)
		dst = appendString(dst, pol)
	}
	return append(dst, '}')
}

// stateOut is what an ask or re-ask seals.
type stateOut struct {
	op    string
	round int
	// upRound is, in a proxy's state, the round at which the upstream
	// asked what is pending: the proxy's own re-asks keep it, so every
	// state of one upstream round forwards under one ledger key.
	upRound int
	ttl     int64
	pend    []byte // JSON object: key -> {method, params[, base]}
	ans     []byte // JSON object: key -> accepted answer, or nil
	app     string // base64url progress bytes of the application
	ups     string // the upstream's own requestState (upstream.* ops)
	// hasUps: the upstream sent a requestState, which may be "".
	hasUps bool
}

// seal builds the payload and appends the token to dst.
func (g *Guard) seal(dst []byte, c *callCtx, s *stateOut) []byte {
	pl := g.buf[:0]
	pl = append(pl, `{"v":1,"iat":`...)
	pl = appendTime(pl, c.now)
	pl = append(pl, `,"exp":`...)
	pl = appendTime(pl, c.now+s.ttl)
	pl = append(pl, `,"aud":`...)
	pl = appendString(pl, g.audience)
	pl = append(pl, `,"sub":`...)
	pl = appendString(pl, c.principal)
	pl = append(pl, `,"method":`...)
	pl = appendString(pl, c.method)
	pl = append(pl, `,"target":`...)
	pl = appendString(pl, c.target)
	pl = append(pl, `,"args":`...)
	pl = appendString(pl, c.argsB64)
	pl = append(pl, `,"op":`...)
	pl = appendString(pl, s.op)
	pl = append(pl, `,"rnd":`...)
	pl = strconv.AppendInt(pl, int64(s.round), 10)
	pl = append(pl, `,"pend":`...)
	pl = append(pl, s.pend...)
	if len(s.ans) > 0 {
		pl = append(pl, `,"ans":`...)
		pl = append(pl, s.ans...)
	}
	if s.app != "" {
		pl = append(pl, `,"app":`...)
		pl = appendString(pl, s.app)
	}
	if c.up != "" {
		pl = append(pl, `,"up":`...)
		pl = appendString(pl, c.up)
	}
	if c.up != "" {
		pl = append(pl, `,"urd":`...)
		pl = strconv.AppendInt(pl, int64(cmp.Or(s.upRound, s.round)), 10)
	}
	if s.hasUps {
		pl = append(pl, `,"ups":`...)
		pl = appendString(pl, s.ups)
	}
	if c.pol != "" {
		pl = append(pl, `,"pol":`...)
		pl = appendString(pl, c.pol)
	}
	pl = append(pl, '}')
	g.buf = pl
	k := &g.keys[0]
	var nonce [32]byte
	copy(nonce[:], c.rand[:32])
	var ib [512]byte
	implicit := g.appendImplicit(ib[:0], c)
	return v4LocalSeal(dst, &k.key, &nonce, pl, k.footer, implicit)
}

// stateIn is an opened state. Node indexes refer to g.sp.
type stateIn struct {
	iat, exp int64
	op       string
	round    int
	upRound  int // a proxy's state: see stateOut.upRound
	pend     int32
	ans      int32
	app      string
	ups      string // the upstream's requestState, for a proxy's state
	hasUps   bool   // the upstream sent one (it may be "")
}

// open verifies a requestState against the call's bindings. Every failure
// is the same client-facing error with a precise internal reason.
func (g *Guard) open(c *callCtx, token string) (*stateIn, *Error) {
	if len(token) > g.maxState {
		return nil, stateError(ReasonOversize)
	}
	tb := bytesOf(token)
	footer, err := v4LocalFooter(tb)
	if err != nil || len(footer) > maxFooterLen {
		if bytes.HasPrefix(tb, []byte("v4.local.")) && bytes.Count(tb, []byte(".")) == 3 {
			// Shaped like ours with a footer that no longer decodes:
			// an edited token, not a foreign one.
			return nil, stateError(ReasonTampered)
		}
		return nil, stateError(ReasonMalformed)
	}
	var key *keyEntry
	for i := range g.keys {
		if bytes.Equal(footer, g.keys[i].footer) {
			key = &g.keys[i]
			break
		}
	}
	if key == nil {
		if bytes.HasPrefix(footer, []byte(`{"kid":"k4.lid.`)) && bytes.HasSuffix(footer, []byte(`"}`)) && bytes.Count(footer, []byte(`"`)) == 4 {
			return nil, stateError(ReasonUnknownKey)
		}
		// Not a footer we write: let the MAC, which covers the footer,
		// refuse the token, so that an edited footer is "tampered" for
		// the same reason as an edited body.
		var ib [512]byte
		if _, err := v4LocalOpen(g.pt[:0], &g.keys[0].key, tb, footer, g.appendImplicit(ib[:0], c)); err == nil {
			return nil, stateError(ReasonMalformed) // cannot happen: we never seal such a footer
		}
		return nil, stateError(ReasonTampered)
	}
	var ib [512]byte
	implicit := g.appendImplicit(ib[:0], c)
	pt, err := v4LocalOpen(g.pt[:0], &key.key, tb, footer, implicit)
	if err != nil {
		return nil, stateError(g.diagnose(c, key, tb, footer))
	}
	g.pt = pt
	st, perr := g.readPayload(pt)
	if perr != nil {
		return nil, perr
	}
	if c.now >= st.exp {
		return nil, stateError(ReasonExpired)
	}
	if st.iat > c.now+clockSkewSeconds {
		return nil, stateError(ReasonNotYetValid)
	}
	return st, nil
}

// diagnose finds why a token that failed to open failed. The payload
// repeats the bindings the state was sealed for; they are read without
// authentication and believed only if the MAC verifies against an
// implicit assertion rebuilt from them. XChaCha20 is a stream cipher, so
// a flipped ciphertext bit is the same flipped plaintext bit: without
// that check an attacker could pick the reason (a log label and a metric
// operators alert on). A token that was edited in any way fails the MAC
// whatever the assertion, and is "tampered".
func (g *Guard) diagnose(c *callCtx, key *keyEntry, tb, footer []byte) string {
	pt, err := v4LocalDecryptUnverified(nil, &key.key, tb)
	if err != nil {
		// Its footer names one of our keys: an edited token of ours.
		return ReasonTampered
	}
	var sp parser
	root, perr := sp.parse(pt, stateMaxDepth)
	if perr != nil || sp.kindOf(root) != jObject {
		return ReasonTampered
	}
	field := func(k string) string { s, _ := sp.string(sp.get(root, k)); return s }
	aud, sub, method, target, args, up, pol := field("aud"), field("sub"), field("method"), field("target"), field("args"), field("up"), field("pol")
	implicit := appendImplicitOf(nil, aud, sub, method, target, args, up, pol)
	// Not into pt: the strings above may alias it.
	if _, err := v4LocalOpen(nil, &key.key, tb, footer, implicit); err != nil {
		return ReasonTampered
	}
	switch {
	case aud != g.audience:
		return ReasonAudience
	case sub != c.principal:
		return ReasonPrincipal
	case method != c.method:
		return ReasonMethod
	case target != c.target:
		return ReasonTarget
	case args != c.argsB64:
		return ReasonArguments
	case up != c.up:
		return ReasonUpstream
	case pol != c.pol:
		return ReasonPolicy
	}
	return ReasonTampered
}

func (g *Guard) readPayload(pt []byte) (*stateIn, *Error) {
	sp := &g.sp
	root, err := sp.parseValid(pt, stateMaxDepth) // authenticated: written by us
	if err == errInterrupted {
		return nil, err
	}
	if err != nil || sp.kindOf(root) != jObject {
		return nil, stateError(ReasonMalformed)
	}
	if v, ok := sp.int(sp.get(root, "v")); !ok || v != stateVersion {
		return nil, stateError(ReasonVersion)
	}
	st := &stateIn{pend: sp.get(root, "pend"), ans: sp.get(root, "ans")}
	var ok1, ok2, ok3 bool
	iat, _ := sp.string(sp.get(root, "iat"))
	exp, _ := sp.string(sp.get(root, "exp"))
	st.iat, ok1 = parseTime(iat)
	st.exp, ok2 = parseTime(exp)
	st.op, ok3 = sp.string(sp.get(root, "op"))
	rnd, ok4 := sp.int(sp.get(root, "rnd"))
	st.round = int(rnd)
	st.upRound = st.round
	if urd, ok := sp.int(sp.get(root, "urd")); ok && urd >= 1 && urd <= rnd {
		st.upRound = int(urd)
	}
	st.app, _ = sp.string(sp.get(root, "app"))
	st.ups, st.hasUps = sp.string(sp.get(root, "ups"))
	if !ok1 || !ok2 || !ok3 || !ok4 || sp.kindOf(st.pend) != jObject || (st.ans >= 0 && sp.kindOf(st.ans) != jObject) {
		return nil, stateError(ReasonMalformed)
	}
	return st, nil
}

// bytesOf views a string's bytes without copying; callers never write.
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// --- RFC 3339 times, as PASETO's registered claims want them -------------

func appendTime(dst []byte, unix int64) []byte {
	days := unix / 86400
	secs := unix % 86400
	if secs < 0 {
		secs += 86400
		days--
	}
	y, m, d := civilFromDays(days)
	dst = append(dst, '"')
	dst = append4(dst, y)
	dst = append(dst, '-')
	dst = append2(dst, m)
	dst = append(dst, '-')
	dst = append2(dst, d)
	dst = append(dst, 'T')
	dst = append2(dst, int(secs/3600))
	dst = append(dst, ':')
	dst = append2(dst, int(secs/60%60))
	dst = append(dst, ':')
	dst = append2(dst, int(secs%60))
	return append(dst, 'Z', '"')
}

func append2(dst []byte, v int) []byte { return append(dst, byte('0'+v/10), byte('0'+v%10)) }
func append4(dst []byte, v int) []byte {
	return append(dst, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}

// parseTime reads exactly YYYY-MM-DDTHH:MM:SSZ, the only form we write.
func parseTime(s string) (int64, bool) {
	if len(s) != 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != 'Z' {
		return 0, false
	}
	num := func(a, b int) (int, bool) {
		v := 0
		for i := a; i < b; i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
			v = v*10 + int(s[i]-'0')
		}
		return v, true
	}
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 7)
	d, ok3 := num(8, 10)
	h, ok4 := num(11, 13)
	mi, ok5 := num(14, 16)
	se, ok6 := num(17, 19)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || se > 59 {
		return 0, false
	}
	return daysFromCivil(y, mo, d)*86400 + int64(h*3600+mi*60+se), true
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// Howard Hinnant's civil-date algorithms (proleptic Gregorian calendar).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

func civilFromDays(z int64) (int, int, int) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return int(y), int(m), int(d)
}
