package core

import (
	"strconv"
	"strings"
)

// pending is one input request about to be sent (or re-sent).
type pending struct {
	key    string
	method string
	kind   inputKind
	params []byte // compact params, exactly as sent; nil for roots/list without params
	form   *formEntry
	base   string // for re-asked forms: the message before corrections
}

// appendRequest appends {"method":…,"params":…} as sent on the wire.
func appendRequest(dst []byte, pr *pending) []byte {
	dst = append(dst, `{"method":`...)
	dst = appendString(dst, pr.method)
	if pr.params != nil {
		dst = append(dst, `,"params":`...)
		dst = append(dst, pr.params...)
	}
	return append(dst, '}')
}

// appendInputRequests appends "inputRequests" as a client sees them.
func appendInputRequests(dst []byte, list []pending) []byte {
	dst = append(dst, `,"inputRequests":{`...)
	for i := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, list[i].key)
		dst = append(dst, ':')
		dst = appendRequest(dst, &list[i])
	}
	return append(dst, '}')
}

// appendPending appends the sealed form of a pending request: the wire
// request plus what resume needs to re-ask it.
func appendPending(dst []byte, pr *pending) []byte {
	dst = appendRequest(dst, pr)
	if pr.base != "" {
		dst = dst[:len(dst)-1]
		dst = append(dst, `,"base":`...)
		dst = appendString(dst, pr.base)
		dst = append(dst, '}')
	}
	return dst
}

// beginCall checks the configuration and reads the call's bindings.
func (g *Guard) beginCall(root int32, c *callCtx, needRand bool) *Error {
	if !g.configured {
		return newError(CodeNotConfigured, "the guard has no keys: configure it first")
	}
	return g.readCall(root, c, needRand)
}

func (g *Guard) askOp(root int32) *Error {
	var c callCtx
	if err := g.beginCall(root, &c, true); err != nil {
		return err
	}
	ap, err := g.readApproval(root, true)
	if err != nil {
		return err
	}
	return g.ask(root, &c, g.p.get(root, "inputRequests"), nil, true, ap)
}

// ask lints and checks the input requests reqs (a node of the envelope),
// reads the round's options from root and seals; ups is an upstream's own
// requestState to seal with it (upstream.ask; nil when it sent none),
// progress whether root may carry the application's progress bytes, ap
// the policy's approval (the round asks only for it), or nil.
func (g *Guard) ask(root int32, cp *callCtx, reqs int32, ups *string, progress bool, ap *approval) *Error {
	p := &g.p
	c := *cp
	// The policy speaks first: a refused round is refused whatever else
	// is wrong with it.
	st := stateOut{round: 1}
	ttl, maxRounds, err := g.limits(root)
	if err != nil {
		return err
	}
	st.ttl = ttl
	list, err := g.readInputRequests(reqs)
	if err != nil {
		return err
	}
	if ap != nil {
		if len(list) > 0 || p.get(root, "after") >= 0 {
			return newError(CodeRequestMalformed, "an approval round asks for the approval alone: no \"inputRequests\" or \"after\"")
		}
		list, c.pol = []pending{ap.confirmRequest()}, ap.version
	}
	if err := g.checkCapabilities(&c, list); err != nil {
		return err
	}

	if pn := p.get(root, "progress"); progress && pn >= 0 && p.kindOf(pn) != jNull {
		s, ok := p.string(pn)
		if !ok || len(s) > b64.EncodedLen(maxProgressLen) {
			return newError(CodeRequestMalformed, "\"progress\" must be at most "+itoa(maxProgressLen)+" bytes, base64url without padding")
		}
		if !validB64URL(s) {
			return newError(CodeRequestMalformed, "\"progress\" must be base64url without padding")
		}
		st.app = s
	}
	var ans []byte
	if after := p.get(root, "after"); after >= 0 && p.kindOf(after) != jNull {
		// A new round of a logical request whose earlier rounds completed:
		// keep its operation id and carry its answers.
		op, ok := p.string(p.get(after, "operationId"))
		rnd, ok2 := p.int(p.get(after, "round"))
		answers := p.get(after, "answers")
		if !ok || !ok2 || rnd < 1 || !validOpID(op) || (answers >= 0 && p.kindOf(answers) != jObject) {
			return newError(CodeRequestMalformed, "\"after\" needs the operationId, round and answers of the completed outcome")
		}
		st.op, st.round = op, int(rnd)+1
		if answers >= 0 && p.node(answers).n > 0 {
			ans = p.compact(answers)
		}
	} else {
		st.op = b64.EncodeToString(c.rand[32:48])
	}
	if st.round > int(maxRounds) {
		return newError(CodeRoundsExceeded, "this request already used its "+itoa(int(maxRounds))+" rounds")
	}
	st.ans = ans
	if ups != nil {
		st.ups, st.hasUps = *ups, true
	}
	return g.emitInputRequired(&c, &st, list)
}

// emitInputRequired seals the state and writes the input_required output.
func (g *Guard) emitInputRequired(c *callCtx, st *stateOut, list []pending) *Error {
	size := 2
	for i := range list {
		size += len(list[i].key) + len(list[i].method) + len(list[i].params) + len(list[i].base) + 48
	}
	pend := append(make([]byte, 0, size), '{')
	for i := range list {
		if i > 0 {
			pend = append(pend, ',')
		}
		pend = appendString(pend, list[i].key)
		pend = append(pend, ':')
		pend = appendPending(pend, &list[i])
	}
	st.pend = append(pend, '}')
	tok := g.seal(g.tok[:0], c, st)
	g.tok = tok
	if len(tok) > g.maxState {
		return newError(CodeRequestTooLarge, "the requestState would be "+itoa(len(tok))+" bytes, over the limit of "+itoa(g.maxState)+": ask for less in one round or raise maxState")
	}
	g.begin()
	g.out = append(g.out, `,"status":"input_required","operationId":`...)
	g.out = appendString(g.out, st.op)
	g.out = append(g.out, `,"round":`...)
	g.out = strconv.AppendInt(g.out, int64(st.round), 10)
	g.out = append(g.out, `,"result":{"resultType":"input_required"`...)
	if len(list) > 0 {
		g.out = appendInputRequests(g.out, list)
	}
	g.out = append(g.out, `,"requestState":"`...)
	g.out = append(g.out, tok...)
	g.out = append(g.out, `"}`...)
	g.end()
	return nil
}

// checkCapabilities refuses to ask what this request's client did not
// declare, with the data for a -32021 error.
func (g *Guard) checkCapabilities(c *callCtx, list []pending) *Error {
	p := &g.p
	caps := c.caps
	el := p.get(caps, "elicitation")
	elObj := p.kindOf(el) == jObject
	formOK := elObj && (p.node(el).n == 0 || p.get(el, "form") >= 0)
	urlOK := elObj && p.get(el, "url") >= 0
	sam := p.get(caps, "sampling")
	samOK := p.kindOf(sam) == jObject
	toolsOK := samOK && p.get(sam, "tools") >= 0
	rootsOK := p.kindOf(p.get(caps, "roots")) == jObject

	var needForm, needURL, needSam, needTools, needRoots bool
	for i := range list {
		switch list[i].kind {
		case kindForm:
			needForm = needForm || !formOK
		case kindURL:
			needURL = needURL || !urlOK
		case kindSampling:
			needSam = needSam || !samOK
		case kindSamplingTools:
			needTools = needTools || !toolsOK
		case kindRoots:
			needRoots = needRoots || !rootsOK
		}
	}
	if !(needForm || needURL || needSam || needTools || needRoots) {
		return nil
	}
	var names []string
	data := []byte(`{"requiredCapabilities":{`)
	sep := func() {
		if data[len(data)-1] != '{' {
			data = append(data, ',')
		}
	}
	if needForm || needURL {
		sep()
		data = append(data, `"elicitation":{`...)
		if needForm {
			data = append(data, `"form":{}`...)
			names = append(names, "elicitation.form")
		}
		if needURL {
			if needForm {
				data = append(data, ',')
			}
			data = append(data, `"url":{}`...)
			names = append(names, "elicitation.url")
		}
		data = append(data, '}')
	}
	if needSam || needTools {
		sep()
		if needTools {
			data = append(data, `"sampling":{"tools":{}}`...)
			names = append(names, "sampling.tools")
		} else {
			data = append(data, `"sampling":{}`...)
			names = append(names, "sampling")
		}
	}
	if needRoots {
		sep()
		data = append(data, `"roots":{}`...)
		names = append(names, "roots")
	}
	data = append(data, "}}"...)
	return &Error{Code: CodeCapabilityMissing, Message: "the client did not declare " + strings.Join(names, ", ") + " in this request's capabilities", Data: data}
}

// validOpID reports whether s is an operation id as the core makes them:
// 16 bytes, base64url without padding.
func validOpID(s string) bool {
	return len(s) == 22 && validB64URL(s)
}

// validB64URL reports whether s is canonical base64url without padding.
// encoding/base64 skips CR and LF even in strict mode, so the alphabet is
// checked first.
func validB64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	_, err := b64.Strict().DecodeString(s)
	return err == nil
}

// readInputRequests reads and lints the input requests reqs (a node of
// the envelope, or -1): the requests exactly as a client will see them, or
// the lint failure that refuses them all.
func (g *Guard) readInputRequests(reqs int32) ([]pending, *Error) {
	p := &g.p
	if reqs >= 0 && p.kindOf(reqs) != jObject {
		return nil, newError(CodeRequestMalformed, "\"inputRequests\" must be an object keyed by the server's names")
	}
	var list []pending
	var fs findings
	if reqs >= 0 {
		if p.node(reqs).n > maxInputRequests {
			return nil, newError(CodeRequestMalformed, "at most "+itoa(maxInputRequests)+" input requests in one round")
		}
		if err := p.checkCaseKeys(reqs, "inputRequests"); err != nil {
			return nil, err
		}
		for _, m := range p.kids(reqs) {
			if !validKey(m.key) {
				fs = append(fs, finding{code: CodeInputKey, severity: SeverityError, key: m.key, message: "input request keys must be 1 to " + itoa(maxInputRequestKey) + " printable characters"})
				continue
			}
			if m.key == ApprovalKey {
				fs = append(fs, finding{code: CodeInputKey, severity: SeverityError, key: m.key, message: quote(ApprovalKey) + " is the guard's own approval form: choose another key"})
				continue
			}
			if p.kindOf(m.val) != jObject {
				fs = append(fs, finding{code: CodeInputInvalidParams, severity: SeverityError, key: m.key, message: "an input request is an object {method, params}"})
				continue
			}
			method, _ := p.string(p.get(m.val, "method"))
			params := p.get(m.val, "params")
			kind, rfs := g.lintInputRequest(p, method, params)
			for i := range rfs {
				rfs[i].key = m.key
			}
			fs = append(fs, rfs...)
			pr := pending{key: m.key, method: method, kind: kind}
			if params >= 0 && p.kindOf(params) != jNull {
				pr.params = p.compact(params)
			}
			list = append(list, pr)
		}
	}
	if fs.hasError() {
		return nil, lintFailure(fs)
	}
	return list, nil
}
