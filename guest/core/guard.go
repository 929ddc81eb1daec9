package core

import (
	"encoding/base64"
	"math"
	"strconv"
	"strings"
)

// ABIVersion is the version of the JSON envelope (guest/ABI.md). A host
// sends "v": ABIVersion in every request and refuses a module that reports
// another one.
const ABIVersion = 1

// Defaults, also documented in ABI.md.
const (
	DefaultTTLSeconds   = 300
	DefaultMaxRounds    = 3
	DefaultMaxState     = 8 << 10
	DefaultMaxRequest   = 1 << 20
	MaxTTLSeconds       = 24 * 3600
	MaxRoundsLimit      = 100
	clockSkewSeconds    = 60
	randBytes           = 48 // 32 for the PASETO nonce, 16 for a new operation id
	maxSchemaCache      = 256
	maxFooterLen        = 256
	maxInputRequests    = 32
	maxInputRequestKey  = 128
	maxPrincipalLen     = 1024
	maxContentArrayLen  = 1024
	maxContentKeys      = 256
	maxResponseKeys     = 256
	maxProgressLen      = 4 << 10
	envelopeMaxDepth    = 64
	stateMaxDepth       = envelopeMaxDepth + 8 // the payload nests what the envelope carried
	stateVersion        = 1
	implicitContext     = "mrtr-wasm/state/v1"
	maxAnswersInPayload = 64
	maxNowMs            = (253402300799 - MaxTTLSeconds) * 1000 // so that now+ttl stays within 9999-12-31T23:59:59Z
)

// Guard is one instance of the core. It is not safe for concurrent use:
// hosts keep a pool of instances (in wasm, one module instance each).
type Guard struct {
	configured bool
	audience   string
	ttl        int64
	maxRounds  int
	maxState   int
	maxRequest int
	keys       []keyEntry // keys[0] is the primary
	interrupt  func() bool

	forms    map[string]*formEntry // by schema text without defaults
	formsRaw map[string]*formEntry // by exact schema text (default-free only)

	p    parser // the request envelope
	sp   parser // a state payload
	dp   parser // the answers being digested
	out  []byte
	buf  []byte // scratch: payload to seal, canonical arguments
	pt   []byte // plaintext of the opened state (g.sp points into it)
	tok  []byte // scratch: token bytes
	dbuf []byte // scratch: canonical answers
	fbuf []byte // scratch: the answers a proxy forwards
}

type keyEntry struct {
	id     string
	key    [32]byte
	footer []byte
}

// New returns an unconfigured guard. Every operation but "lint",
// "paseto.seal" and "paseto.open" needs a "configure" call first.
func New() *Guard {
	return &Guard{forms: make(map[string]*formEntry), formsRaw: make(map[string]*formEntry)}
}

// SetInterrupt installs the host's "should I stop?" check. The core asks
// at checkpoints (every few thousand JSON values, and between phases) and
// ends the call with mrtr.call.interrupted when it says yes, leaving the
// guard usable.
func (g *Guard) SetInterrupt(f func() bool) {
	g.interrupt = f
	g.p.interrupt = f
	g.sp.interrupt = f
	g.dp.interrupt = f
}

func (g *Guard) checkpoint() *Error {
	if g.interrupt != nil && g.interrupt() {
		return errInterrupted
	}
	return nil
}

var errInterrupted = newError(CodeInterrupted, "the host stopped the call (deadline or cancellation)")

// Call runs one request envelope and returns the response envelope. The
// returned slice is owned by the guard and valid until the next call. Call
// never panics: an internal failure becomes a mrtr.internal error and the
// guard resets its caches.
func (g *Guard) Call(in []byte) (out []byte) {
	defer func() {
		if r := recover(); r != nil {
			// The panic value may hold request data: it is dropped.
			g.forms = make(map[string]*formEntry)
			g.formsRaw = make(map[string]*formEntry)
			g.p = parser{interrupt: g.interrupt}
			g.sp = parser{interrupt: g.interrupt}
			g.dp = parser{interrupt: g.interrupt}
			out = g.fail(newError(CodeInternal, "internal error in the guard core"))
		}
	}()
	g.out = g.out[:0]
	if len(in) > g.requestLimit() {
		return g.fail(newError(CodeRequestTooLarge, "request is larger than "+itoa(g.requestLimit())+" bytes"))
	}
	root, err := g.p.parse(in, envelopeMaxDepth)
	if err != nil {
		return g.fail(err)
	}
	if err := g.checkpoint(); err != nil {
		return g.fail(err)
	}
	p := &g.p
	if p.kindOf(root) != jObject {
		return g.fail(newError(CodeRequestMalformed, "request must be a JSON object"))
	}
	if v, ok := p.int(p.get(root, "v")); !ok || v != ABIVersion {
		return g.fail(newError(CodeRequestVersion, "request version must be "+itoa(ABIVersion)))
	}
	op, ok := p.string(p.get(root, "op"))
	if !ok {
		return g.fail(newError(CodeRequestMalformed, "request needs a string \"op\""))
	}
	switch op {
	case "configure":
		err = g.configure(root)
	case "lint":
		err = g.lintOp(root)
	case "ask":
		err = g.askOp(root)
	case "resume":
		err = g.resumeOp(root)
	case "open":
		err = g.openOp(root)
	case "upstream.ask":
		err = g.upstreamAskOp(root)
	case "upstream.resume":
		err = g.upstreamResumeOp(root)
	case "upstream.inputs":
		err = g.upstreamInputsOp(root)
	case "policy.input":
		err = g.policyInputOp(root)
	case "policy.decision":
		err = g.policyDecisionOp(root)
	case "paseto.seal":
		err = g.pasetoSealOp(root)
	case "paseto.open":
		err = g.pasetoOpenOp(root)
	default:
		err = newError(CodeRequestUnknownOp, "unknown op "+quote(op))
	}
	if err != nil {
		return g.fail(err)
	}
	return g.out
}

func (g *Guard) requestLimit() int {
	if g.maxRequest > 0 {
		return g.maxRequest
	}
	return DefaultMaxRequest
}

// fail replaces the output with an error envelope.
func (g *Guard) fail(e *Error) []byte {
	o := append(g.out[:0], `{"v":1,"ok":false,`...)
	if e.Code == CodeInterrupted {
		// The host discards the instance: a documented field, so that no
		// host has to look for the code in the bytes.
		o = append(o, `"interrupted":true,`...)
	}
	o = append(o, `"error":{"code":`...)
	o = appendString(o, e.Code)
	o = append(o, `,"message":`...)
	o = appendString(o, e.Message)
	if e.Reason != "" {
		o = append(o, `,"reason":`...)
		o = appendString(o, e.Reason)
	}
	if len(e.Data) > 0 {
		o = append(o, `,"data":`...)
		o = append(o, e.Data...)
	}
	o = append(o, "}}"...)
	g.out = o
	return o
}

func (g *Guard) begin() {
	g.out = append(g.out[:0], `{"v":1,"ok":true`...)
}

func (g *Guard) end() { g.out = append(g.out, '}') }

// configure sets keys, audience and limits. It replaces the previous
// configuration whole, so a host rotates keys by configuring again.
func (g *Guard) configure(root int32) *Error {
	p := &g.p
	keysNode := p.get(root, "keys")
	if p.kindOf(keysNode) != jArray || p.node(keysNode).n == 0 {
		return newError(CodeConfigInvalid, "configure needs \"keys\": a non-empty array of k4.local keys (the first is the primary)")
	}
	var keys []keyEntry
	for idx, m := range p.kids(keysNode) {
		s, ok := p.string(m.val)
		if !ok {
			return newError(CodeConfigInvalid, "key "+itoa(idx)+" is not a string")
		}
		k, err := parsePaserkLocal(s)
		if err != nil {
			return newError(CodeConfigInvalid, "key "+itoa(idx)+" is not a valid k4.local key")
		}
		id := paserkLocalID(&k)
		for _, e := range keys {
			if e.id == id {
				return newError(CodeConfigInvalid, "key "+itoa(idx)+" is listed twice")
			}
		}
		footer := appendString(append([]byte(nil), `{"kid":`...), id)
		footer = append(footer, '}')
		keys = append(keys, keyEntry{id: id, key: k, footer: footer})
	}
	audience, ok := p.string(p.get(root, "audience"))
	if !ok || audience == "" {
		return newError(CodeConfigInvalid, "configure needs a non-empty \"audience\" (the server's name)")
	}
	ttl, err := optInt(p, root, "ttl", DefaultTTLSeconds, 1, MaxTTLSeconds)
	if err != nil {
		return err
	}
	rounds, err := optInt(p, root, "maxRounds", DefaultMaxRounds, 1, MaxRoundsLimit)
	if err != nil {
		return err
	}
	maxState, err := optInt(p, root, "maxState", DefaultMaxState, 512, 1<<20)
	if err != nil {
		return err
	}
	maxReq, err := optInt(p, root, "maxRequest", DefaultMaxRequest, 4<<10, 16<<20)
	if err != nil {
		return err
	}
	g.keys = keys
	g.audience = strings.Clone(audience)
	g.ttl = ttl
	g.maxRounds = int(rounds)
	g.maxState = int(maxState)
	g.maxRequest = int(maxReq)
	g.configured = true
	g.begin()
	g.out = append(g.out, `,"keyIds":[`...)
	for i, k := range keys {
		if i > 0 {
			g.out = append(g.out, ',')
		}
		g.out = appendString(g.out, k.id)
	}
	g.out = append(g.out, ']')
	g.end()
	return nil
}

// limits are a round's TTL (seconds) and round limit: the guard's own,
// narrowed by the caller's (ttl, maxRounds) and by the host's policy
// decision ("policy"), which refuses the round instead when it does not
// allow it. A limit only narrows: one above the guard's own leaves it,
// since the ledger remembers a finished operation for as long as the
// guard's own limits let a state of it open (rememberSeconds). So any
// positive integer is taken, and only the smallest counts.
func (g *Guard) limits(root int32) (ttl, rounds int64, err *Error) {
	const most = 1<<53 - 1
	pRounds, pTTL, err := readPolicy(&g.p, root)
	if err != nil {
		return 0, 0, err
	}
	ttl, rounds = g.ttl, int64(g.maxRounds)
	v, err := optInt(&g.p, root, "ttl", ttl, 1, most)
	if err != nil {
		return 0, 0, err
	}
	ttl = min(ttl, v)
	if pTTL > 0 {
		ttl = min(ttl, pTTL)
	}
	v, err = optInt(&g.p, root, "maxRounds", rounds, 1, most)
	if err != nil {
		return 0, 0, err
	}
	rounds = min(rounds, v)
	if pRounds > 0 {
		rounds = min(rounds, pRounds)
	}
	return ttl, rounds, nil
}

// appendRemember adds rememberSeconds to an outcome that ends a round:
// how long after it a state of its operation may still open. Each state
// lives the guard's TTL at most, and a replay of one that still opens can
// seal a further round (a re-ask, or after) with a fresh TTL, up to the
// round limit, so the last state of an operation may open until rounds ×
// TTL after its first. A host's ledger keeps the outcome that long (plus
// its margin), so a replay finds it.
func (g *Guard) appendRemember(dst []byte) []byte {
	dst = append(dst, `,"rememberSeconds":`...)
	return strconv.AppendInt(dst, int64(max(g.maxRounds, 1))*g.ttl, 10)
}

func optInt(p *parser, obj int32, key string, def, lo, hi int64) (int64, *Error) {
	n := p.get(obj, key)
	if n < 0 || p.kindOf(n) == jNull {
		return def, nil
	}
	v, ok := p.int(n)
	if !ok || v < lo || v > hi {
		return 0, newError(CodeRequestMalformed, quote(key)+" must be an integer from "+strconv.FormatInt(lo, 10)+" to "+strconv.FormatInt(hi, 10))
	}
	return v, nil
}

// --- small typed accessors over the parser --------------------------------

func (p *parser) string(i int32) (string, bool) {
	if i < 0 || p.nodes[i].kind != jString {
		return "", false
	}
	return p.nodes[i].str, true
}

// int reads an integral JSON number that fits in 53 bits.
func (p *parser) int(i int32) (int64, bool) {
	if i < 0 || p.nodes[i].kind != jNumber {
		return 0, false
	}
	if v, ok := smallInt(p.nodes[i].str); ok {
		return v, true
	}
	f, err := strconv.ParseFloat(p.nodes[i].str, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// smallInt reads a JSON number literal of at most 15 digits and no
// fraction or exponent (the clock, a round, a version), exactly as
// ParseFloat would, without running through strconv's float parser: its
// code is most of what reading a number costs a call that starts cold.
func smallInt(s string) (int64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 15 {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

func (p *parser) float(i int32) (float64, bool) {
	if i < 0 || p.nodes[i].kind != jNumber {
		return 0, false
	}
	f, err := strconv.ParseFloat(p.nodes[i].str, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

var b64 = base64.RawURLEncoding
