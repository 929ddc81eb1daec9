package core

// The upstream.* ops serve a proxy in front of an MCP server it did not
// write (`mrtr-wasm proxy`). The proxy hands over the client's JSON-RPC
// request as received and the upstream's response as received; the core
// reads the bindings from the request itself, seals the upstream's own
// requestState and identity into its state, and on the retry writes the
// message to forward: the client's request with the upstream's state put
// back and the checked answers, reduced to what was asked and checked,
// each value as the client wrote it. The proxy parses neither.

import (
	"encoding/hex"
	"slices"
	"strconv"
)

const (
	maxUpstreamID          = 1024
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

// upstreamMsg is the client's request of an upstream.* op.
type upstreamMsg struct {
	msg, params int32
}

// readUpstreamCall reads the clock, entropy, upstream identity and the
// bindings from the client's request.
func (g *Guard) readUpstreamCall(root int32, c *callCtx, needRand bool) (upstreamMsg, *Error) {
	var u upstreamMsg
	if !g.configured {
		return u, newError(CodeNotConfigured, "the guard has no keys: configure it first")
	}
	if err := g.readClock(root, c, needRand); err != nil {
		return u, err
	}
	p := &g.p
	up, ok := p.string(p.get(root, "upstream"))
	if !ok || up == "" || len(up) > maxUpstreamID {
		return u, newError(CodeRequestMalformed, "request needs \"upstream\": the upstream's identity, 1 to "+itoa(maxUpstreamID)+" bytes")
	}
	u.msg = p.get(root, "request")
	if p.kindOf(u.msg) != jObject {
		return u, newError(CodeRequestMalformed, "\"request\" must be the client's JSON-RPC request, as received")
	}
	u.params = p.get(u.msg, "params")
	if p.kindOf(u.params) != jObject {
		return u, newError(CodeRequestMalformed, "the client's request has no params object")
	}
	method := p.get(u.msg, "method")
	m, _ := p.string(method)
	target, args := p.get(u.params, "name"), p.get(u.params, "arguments")
	if m == "resources/read" {
		target, args = p.get(u.params, "uri"), -1
	}
	caps := p.get(p.get(u.params, "_meta"), metaClientCapabilities)
	if err := g.readBindings(c, p.get(root, "principal"), method, target, args, caps); err != nil {
		return u, err
	}
	c.up = up
	return u, nil
}

// upstreamAskOp seals an upstream's InputRequiredResult: its input
// requests are linted and checked against the client's capabilities like
// any ask, and its requestState (any string, or none) goes into the state.
func (g *Guard) upstreamAskOp(root int32) *Error {
	var c callCtx
	if _, err := g.readUpstreamCall(root, &c, true); err != nil {
		return err
	}
	reqs, ups, err := g.readUpstreamResult(root)
	if err != nil {
		return err
	}
	return g.ask(root, &c, reqs, ups, false, nil)
}

// readUpstreamResult reads the InputRequiredResult of the upstream's
// response: its inputRequests node (or -1) and its requestState (nil when
// it sent none).
func (g *Guard) readUpstreamResult(root int32) (int32, *string, *Error) {
	p := &g.p
	res := p.get(p.get(root, "response"), "result")
	if p.kindOf(res) != jObject {
		return -1, nil, newError(CodeUpstreamResult, "the upstream's response has no result object")
	}
	if rt, _ := p.string(p.get(res, "resultType")); rt != "input_required" {
		return -1, nil, newError(CodeUpstreamResult, "the upstream's result is not an InputRequiredResult")
	}
	reqs := p.get(res, "inputRequests")
	if k := p.kindOf(reqs); k != jObject && k != jNull {
		return -1, nil, newError(CodeUpstreamResult, "the upstream's inputRequests is not an object")
	}
	if p.kindOf(reqs) == jNull {
		reqs = -1
	}
	var ups *string // none: absent or null; "" is a state, and goes back
	if rs := p.get(res, "requestState"); p.kindOf(rs) != jNull {
		s, ok := p.string(rs)
		if !ok {
			return -1, nil, newError(CodeUpstreamResult, "the upstream's requestState is not a string")
		}
		ups = &s
	}
	return reqs, ups, nil
}

// upstreamInputsOp reads and lints an upstream's input requests as
// upstream.ask will, and returns them as the client will see them: what
// the host's policy decides on before the ask. The host never reads the
// upstream's bytes itself, so the policy cannot be shown one request and
// the client another.
func (g *Guard) upstreamInputsOp(root int32) *Error {
	reqs, _, err := g.readUpstreamResult(root)
	if err != nil {
		return err
	}
	list, err := g.readInputRequests(reqs)
	if err != nil {
		return err
	}
	g.begin()
	g.out = appendInputRequests(g.out, list)
	g.end()
	return nil
}

// upstreamResumeOp checks a retry of a proxy's round, read from the
// client's request.
func (g *Guard) upstreamResumeOp(root int32) *Error {
	var c callCtx
	u, err := g.readUpstreamCall(root, &c, true)
	if err != nil {
		return err
	}
	p := &g.p
	token, ok := p.string(p.get(u.params, "requestState"))
	if !ok || token == "" {
		return newError(CodeRequestMalformed, "the request answers an input round without the requestState of that round: answers are taken only with it")
	}
	return g.resume(root, &c, token, p.get(u.params, "inputResponses"), &u)
}

// endForward adds, for upstream.resume, what the proxy needs to forward
// the outcome just written: "upstreamRound" (the round the upstream
// asked, the ledger's key), "forwardDigest" (of the answers forwarded, the
// ledger's fingerprint for any outcome), "forward" and, when the client's
// answers held more than was checked, "dropped" go before the closing
// brace. fwd are the answers checked now, as they are forwarded.
//
// known is the answersDigest a complete outcome already carries: the same
// answers (sealed ones, then those accepted now), so it is not computed
// twice.
func (g *Guard) endForward(u *upstreamMsg, st *stateIn, fwd []answer, known *[32]byte, drop *dropped) *Error {
	if u == nil {
		return nil
	}
	p := &g.p
	resp := p.get(u.params, "inputResponses")
	g.fbuf = g.fbuf[:0]
	if resp >= 0 { // a round that asked nothing completes without answers
		g.fbuf = g.appendForwardResponses(g.fbuf, st, resp, fwd)
	}
	var digest [32]byte
	switch {
	case p.kindOf(resp) != jObject:
	case known != nil:
		digest = *known
	default:
		var err *Error
		if digest, err = g.answersDigest(g.fbuf); err != nil {
			return err
		}
	}
	g.out = append(g.out[:len(g.out)-1], `,"upstreamRound":`...)
	g.out = strconv.AppendInt(g.out, int64(st.upRound), 10)
	g.out = append(g.out, `,"forwardDigest":"`...)
	g.out = hex.AppendEncode(g.out, digest[:])
	g.out = append(g.out, `","forward":`...)
	g.out = g.appendForward(g.out, u, st, g.fbuf)
	g.end()
	g.appendDropped(drop)
	return nil
}

// appendForward appends the client's request with requestState replaced
// by the upstream's own (dropped when it had none) and inputResponses
// replaced by responses (see appendForwardResponses). Everything else is
// the client's bytes.
func (g *Guard) appendForward(dst []byte, u *upstreamMsg, st *stateIn, responses []byte) []byte {
	p := &g.p
	dst = append(dst, '{')
	for i, m := range p.kids(u.msg) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, m.key)
		dst = append(dst, ':')
		if m.val != u.params {
			dst = append(dst, p.raw(m.val)...)
			continue
		}
		dst = append(dst, '{')
		first := true
		for _, pm := range p.kids(u.params) {
			if pm.key == "requestState" && !st.hasUps {
				continue
			}
			dst = appendKey(dst, &first, pm.key)
			switch pm.key {
			case "requestState":
				dst = appendString(dst, st.ups)
			case "inputResponses":
				dst = append(dst, responses...)
			default:
				dst = append(dst, p.raw(pm.val)...)
			}
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// appendForwardResponses appends the answers to forward: those sealed in
// the proxy's earlier rounds (re-asks), then the answers checked now (fwd,
// in the order the client sent their keys). A sealed answer stands: the
// client cannot replace it with one no one checked.
func (g *Guard) appendForwardResponses(dst []byte, st *stateIn, resp int32, fwd []answer) []byte {
	p, sp := &g.p, &g.sp
	if p.kindOf(resp) != jObject {
		return append(dst, p.raw(resp)...)
	}
	dst = append(dst, '{')
	first := true
	if st.ans >= 0 {
		for _, m := range sp.kids(st.ans) {
			if answerOf(fwd, m.key) != nil {
				continue
			}
			dst = appendKey(dst, &first, m.key)
			dst = sp.appendCompact(dst, m.val)
		}
	}
	for _, m := range p.kids(resp) {
		a := answerOf(fwd, m.key)
		if a == nil {
			continue
		}
		dst = appendKey(dst, &first, m.key)
		dst = append(dst, a.json...)
	}
	return append(dst, '}')
}

// appendKey appends a member's name, after a comma unless it is the first.
func appendKey(dst []byte, first *bool, key string) []byte {
	if !*first {
		dst = append(dst, ',')
	}
	*first = false
	dst = appendString(dst, key)
	return append(dst, ':')
}

func answerOf(as []answer, key string) *answer {
	for i := range as {
		if as[i].key == key {
			return &as[i]
		}
	}
	return nil
}

// appendSamplingForward appends a checked CreateMessageResult as an
// upstream gets it: role, content and model (the members resume checked)
// and stopReason when it is a string, each as the client wrote it. Other
// members (_meta among them) are left out and named in drop.
func appendSamplingForward(dst []byte, p *parser, r int32, key string, drop *dropped) []byte {
	return appendCheckedMembers(dst, p, r, func(name string, v int32) bool {
		return name == "role" || name == "content" || name == "model" || name == "stopReason" && p.kindOf(v) == jString
	}, drop, key+".")
}

// appendRootsForward appends a checked ListRootsResult as an upstream gets
// it: roots, each with its uri (checked: file://) and its name when that
// is a string, as the client wrote them. Other members of the result and
// of each root are left out and named in drop.
func appendRootsForward(dst []byte, p *parser, r int32, key string, drop *dropped) []byte {
	drop.others(p, r, key, "roots")
	dst = append(dst, `{"roots":[`...)
	for i, root := range p.kids(p.get(r, "roots")) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendCheckedMembers(dst, p, root.val, func(name string, v int32) bool {
			return name == "uri" || name == "name" && p.kindOf(v) == jString
		}, drop, key+".roots["+itoa(i)+"].")
	}
	return append(dst, "]}"...)
}

// appendCheckedMembers appends object v with the members keep allows, each
// as the client wrote it; the others are named in drop after prefix.
func appendCheckedMembers(dst []byte, p *parser, v int32, keep func(name string, val int32) bool, drop *dropped, prefix string) []byte {
	dst = append(dst, '{')
	first := true
	for _, m := range p.kids(v) {
		if !keep(m.key, m.val) {
			drop.add(&drop.members, prefix, "", m.key)
			continue
		}
		dst = appendKey(dst, &first, m.key)
		dst = append(dst, p.raw(m.val)...)
	}
	return append(dst, '}')
}

// dropped is what upstream.resume left out of the client's answers:
// fields of a form's content it did not ask for, members of a response
// beside those checked, and responses to keys that are not pending. Only
// names, cut short, reach the output: never a value.
type dropped struct {
	on                         bool // upstream.resume; otherwise nothing is noted
	fields, members, responses int
	names                      []string
}

const (
	maxDroppedNames = 16 // names listed; the counts are exact
	maxDroppedName  = 64 // bytes of a name, cut at a character boundary
)

// add counts one dropped name (the key, a separator, the member) in n.
func (d *dropped) add(n *int, key, sep, name string) {
	if !d.on {
		return
	}
	*n++
	if len(d.names) < maxDroppedNames {
		d.names = append(d.names, cutUTF8(key+sep+name, maxDroppedName))
	}
}

// others notes the members of response r (an object) other than keep.
func (d *dropped) others(p *parser, r int32, key string, keep ...string) {
	if !d.on {
		return
	}
	for _, m := range p.kids(r) {
		if !slices.Contains(keep, m.key) {
			d.add(&d.members, key, ".", m.key)
		}
	}
}

// unaskedKeys notes the responses in resp to keys not pending in pend (a
// node of the state): never forwarded.
func (d *dropped) unaskedKeys(p, sp *parser, resp, pend int32) {
	if !d.on || p.kindOf(resp) != jObject {
		return
	}
	for _, m := range p.kids(resp) {
		if sp.get(pend, m.key) < 0 {
			d.add(&d.responses, m.key, "", "")
		}
	}
}

// appendDropped adds "dropped" before the output's closing brace when
// anything was left out: {"fields","members","responses","names"}.
func (g *Guard) appendDropped(d *dropped) {
	if d.fields+d.members+d.responses == 0 {
		return
	}
	g.out = append(g.out[:len(g.out)-1], `,"dropped":{"fields":`...)
	g.out = strconv.AppendInt(g.out, int64(d.fields), 10)
	g.out = append(g.out, `,"members":`...)
	g.out = strconv.AppendInt(g.out, int64(d.members), 10)
	g.out = append(g.out, `,"responses":`...)
	g.out = strconv.AppendInt(g.out, int64(d.responses), 10)
	g.out = append(g.out, `,"names":[`...)
	for i, n := range d.names {
		if i > 0 {
			g.out = append(g.out, ',')
		}
		g.out = appendString(g.out, n)
	}
	g.out = append(g.out, "]}}"...)
}
