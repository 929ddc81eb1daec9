package core

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

type answer struct {
	key  string
	json []byte
}

func (g *Guard) resumeOp(root int32) *Error {
	p := &g.p
	var c callCtx
	if err := g.beginCall(root, &c, true); err != nil {
		return err
	}
	token, ok := p.string(p.get(root, "requestState"))
	if !ok || token == "" {
		return newError(CodeRequestMalformed, "resume needs the \"requestState\" the client echoed")
	}
	// An approval's state opens only where the host expects one, under
	// the policy version that required it (the MAC binds both).
	ap, err := g.readApproval(root, false)
	if err != nil {
		return err
	}
	if ap != nil {
		c.pol = ap.version
	}
	return g.resume(root, &c, token, p.get(root, "inputResponses"), nil)
}

// resume opens token, checks the responses resp (a node of the envelope,
// or -1) against it and writes the outcome. up is set for upstream.resume:
// accepted answers keep the client's bytes of each checked value but only
// what was checked (guest/ABI.md), the output names what was left out,
// and an outcome that ends the proxy's part carries the message to
// forward.
func (g *Guard) resume(root int32, cp *callCtx, token string, resp int32, up *upstreamMsg) *Error {
	p := &g.p
	c := *cp
	ttl, maxRounds, err := g.limits(root)
	if err != nil {
		return err
	}
	switch p.kindOf(resp) {
	case jNull:
		resp = -1
	case jObject:
		if p.node(resp).n > maxResponseKeys {
			return newError(CodeResponsesMalformed, "\"inputResponses\" has more than "+itoa(maxResponseKeys)+" keys")
		}
		if err := p.checkCaseKeys(resp, "inputResponses"); err != nil {
			return err
		}
		// And in each response: a server that decodes with encoding/json
		// reads names in any case and keeps the last, so "action":"decline"
		// beside "ACTION":"accept" would reach it as an accept whose
		// content no one checked. (An accepted form's content is checked
		// with the form.)
		for _, m := range p.kids(resp) {
			if p.kindOf(m.val) == jObject {
				if err := p.checkCaseKeysOf(m.val, "the response", m.key); err != nil {
					return err
				}
			}
		}
	default:
		return newError(CodeResponsesMalformed, "\"inputResponses\" must be an object keyed like the inputRequests it answers")
	}
	st, err := g.open(&c, token)
	if err != nil {
		return err
	}
	sp := &g.sp

	var accepted, ends []answer
	var reasks []pending
	var declined, cancelled, wrong []string
	// For an upstream: what of the client's answers is left out (names
	// only, for the host's metrics and logs).
	drop := dropped{on: up != nil}
	for _, m := range sp.kids(st.pend) {
		if err := g.checkpoint(); err != nil {
			return err
		}
		key := m.key
		method, _ := sp.string(sp.get(m.val, "method"))
		params := sp.get(m.val, "params")
		r := p.get(resp, m.key)
		if r < 0 || p.kindOf(r) == jNull {
			// Not answered: ask again, unchanged.
			reasks = append(reasks, g.sealedPending(key, method, m.val))
			wrong = append(wrong, key+" (no answer)")
			continue
		}
		switch method {
		case "elicitation/create":
			if p.kindOf(r) != jObject {
				return newError(CodeResponsesMalformed, "the response to "+quote(key)+" must be an ElicitResult object")
			}
			action, _ := p.string(p.get(r, "action"))
			switch action {
			case "decline", "cancel":
				// Forwarded as the action alone: content belongs to an
				// accept (the spec: "typically omitted" otherwise), and
				// nothing beside it was checked.
				if action == "decline" {
					declined = append(declined, key)
					ends = append(ends, answer{key, []byte(`{"action":"decline"}`)})
				} else {
					cancelled = append(cancelled, key)
					ends = append(ends, answer{key, []byte(`{"action":"cancel"}`)})
				}
				drop.others(p, r, key, "action")
				continue
			case "accept":
			default:
				return newError(CodeResponsesMalformed, "the response to "+quote(key)+" needs \"action\": accept, decline or cancel")
			}
			if mode, _ := sp.string(sp.get(params, "mode")); mode == "url" {
				// Consent to open the page; whether the out-of-band step
				// finished is for the application to check.
				accepted = append(accepted, answer{key, []byte(`{"action":"accept"}`)})
				drop.others(p, r, key, "action")
				continue
			}
			schema := sp.get(params, "requestedSchema")
			e := g.formFor(sp, schema)
			if e.sch == nil {
				return lintFailure(e.findings)
			}
			// An upstream gets each asked value as the client wrote it.
			fc, err := checkForm(p, e, p.get(r, "content"), []byte(`{"action":"accept","content":`), up != nil)
			if err != nil {
				err.Message = "the response to " + quote(key) + ": " + err.Message
				return err
			}
			if len(fc.problems) == 0 && c.pol != "" && key == ApprovalKey && !approved(p, r) {
				// No to the guard's confirm form is a rejection, as a
				// decline is: nothing runs.
				declined = append(declined, key)
				ends = append(ends, answer{key, []byte(`{"action":"decline"}`)})
				continue
			}
			if len(fc.problems) == 0 {
				accepted = append(accepted, answer{key, append(fc.content, '}')})
				for _, f := range fc.unasked {
					drop.add(&drop.fields, key, ".content.", f)
				}
				drop.others(p, r, key, "action", "content")
				continue
			}
			pr := g.reaskForm(key, sp, m.val, e, &fc)
			reasks = append(reasks, pr)
			for _, prob := range fc.problems {
				wrong = append(wrong, key+"."+prob.field)
			}
		case "sampling/createMessage":
			if !validSamplingResult(p, r) {
				return newError(CodeResponsesMalformed, "the response to "+quote(key)+" must be a CreateMessageResult (role, content, model)")
			}
			if up != nil {
				accepted = append(accepted, answer{key, appendSamplingForward(nil, p, r, key, &drop)})
			} else {
				accepted = append(accepted, answer{key, p.compact(r)})
			}
		case "roots/list":
			if !validRootsResult(p, r) {
				return newError(CodeResponsesMalformed, "the response to "+quote(key)+" must be a ListRootsResult with file:// URIs")
			}
			if up != nil {
				accepted = append(accepted, answer{key, appendRootsForward(nil, p, r, key, &drop)})
			} else {
				accepted = append(accepted, answer{key, p.compact(r)})
			}
		default:
			return stateError(ReasonMalformed)
		}
	}

	// What reaches the upstream: the answers checked here (a valid
	// accept, a decline, a cancel), for keys that were asked, reduced to
	// what was checked. An invalid accept beside a decline, or a key no
	// one asked (which a server may read as the answer to a later
	// question), never does.
	var fwd []answer
	if up != nil {
		fwd = append(append(fwd, accepted...), ends...)
		drop.unaskedKeys(p, sp, resp, st.pend)
	}
	switch {
	case len(declined) > 0:
		g.emitEnd("declined", st, "declined", declined)
		return g.endForward(up, st, fwd, nil, &drop)
	case len(cancelled) > 0:
		g.emitEnd("cancelled", st, "cancelled", cancelled)
		return g.endForward(up, st, fwd, nil, &drop)
	case len(reasks) == 0:
		g.begin()
		g.out = append(g.out, `,"status":"complete","operationId":`...)
		g.out = appendString(g.out, st.op)
		g.out = append(g.out, `,"round":`...)
		g.out = strconv.AppendInt(g.out, int64(st.round), 10)
		g.out = append(g.out, `,"answers":`...)
		at := len(g.out)
		g.out = g.appendAnswers(g.out, st, accepted)
		d, err := g.answersDigest(g.out[at:])
		if err != nil {
			return err
		}
		g.out = append(g.out, `,"answersDigest":"`...)
		g.out = hex.AppendEncode(g.out, d[:])
		g.out = append(g.out, '"')
		g.out = g.appendRemember(g.out)
		if st.app != "" {
			g.out = append(g.out, `,"progress":`...)
			g.out = appendString(g.out, st.app)
		}
		g.end()
		return g.endForward(up, st, fwd, &d, &drop)
	}
	if st.round >= int(maxRounds) {
		data := []byte(`{"fields":[`)
		for i, w := range wrong {
			if i > 0 {
				data = append(data, ',')
			}
			data = appendString(data, w)
		}
		data = append(data, "]}"...)
		return &Error{Code: CodeRoundsExceeded, Message: "no complete answer after " + itoa(st.round) + " rounds; still wrong or missing: " + strings.Join(wrong, ", "), Data: data}
	}
	if err := g.checkCapabilities(&c, reasks); err != nil {
		return err
	}
	out := stateOut{op: st.op, round: st.round + 1, upRound: st.upRound, ttl: ttl, app: st.app, ups: st.ups, hasUps: st.hasUps}
	if st.ans >= 0 || len(accepted) > 0 {
		out.ans = g.appendAnswers(nil, st, accepted)
	}
	if err := g.emitInputRequired(&c, &out, reasks); err != nil {
		return err
	}
	g.appendDropped(&drop)
	return nil
}

// sealedPending re-creates a pending request from the sealed state.
func (g *Guard) sealedPending(key, method string, entry int32) pending {
	sp := &g.sp
	pr := pending{key: key, method: method}
	params := sp.get(entry, "params")
	if params >= 0 {
		pr.params = sp.compact(params)
	}
	switch method {
	case "elicitation/create":
		pr.kind = kindForm
		if mode, _ := sp.string(sp.get(params, "mode")); mode == "url" {
			pr.kind = kindURL
		}
	case "sampling/createMessage":
		pr.kind = kindSampling
		if sp.get(params, "tools") >= 0 || sp.get(params, "toolChoice") >= 0 {
			pr.kind = kindSamplingTools
		}
	case "roots/list":
		pr.kind = kindRoots
	}
	pr.base, _ = sp.string(sp.get(entry, "base"))
	return pr
}

// reaskForm builds the form again: the message names each field and what
// is wrong, and the fields that were right come back as defaults.
func (g *Guard) reaskForm(key string, sp *parser, entry int32, e *formEntry, fc *formCheck) pending {
	p := &g.p
	params := sp.get(entry, "params")
	schema := sp.get(params, "requestedSchema")
	base, _ := sp.string(sp.get(entry, "base"))
	if base == "" {
		base, _ = sp.string(sp.get(params, "message"))
	}
	bad := map[string]bool{}
	msg := []byte(base)
	msg = append(msg, "\n\nPlease check: "...)
	for i, pr := range fc.problems {
		bad[pr.field] = true
		if i > 0 {
			msg = append(msg, "; "...)
		}
		label := pr.field
		if fp := e.prop(pr.field); fp != nil {
			label = fp.label()
		}
		msg = append(msg, label...)
		msg = append(msg, ' ')
		msg = append(msg, pr.msg...)
	}
	msg = append(msg, '.')

	out := []byte{'{'}
	if mode, ok := sp.string(sp.get(params, "mode")); ok {
		out = append(out, `"mode":`...)
		out = appendString(out, mode)
		out = append(out, ',')
	}
	out = append(out, `"message":`...)
	out = appendString(out, string(msg))
	out = append(out, `,"requestedSchema":{`...)
	if e.dialect != "" {
		out = append(out, `"$schema":`...)
		out = appendString(out, e.dialect)
		out = append(out, ',')
	}
	out = append(out, `"type":"object","properties":{`...)
	props := sp.get(schema, "properties")
	var required []string
	for i := range e.props {
		fp := &e.props[i]
		if i > 0 {
			out = append(out, ',')
		}
		out = appendString(out, fp.name)
		out = append(out, ':')
		raw := fp.raw
		var def []byte
		if v, ok := fc.present[fp.name]; ok && !bad[fp.name] {
			def = p.compact(v)
		} else if d := sp.get(sp.get(props, fp.name), "default"); d >= 0 {
			def = sp.compact(d)
		}
		if def != nil {
			out = append(out, raw[:len(raw)-1]...)
			if len(raw) > 2 {
				out = append(out, ',')
			}
			out = append(out, `"default":`...)
			out = append(out, def...)
			out = append(out, '}')
		} else {
			out = append(out, raw...)
		}
		if fp.required {
			required = append(required, fp.name)
		}
	}
	out = append(out, '}')
	if len(required) > 0 {
		out = append(out, `,"required":[`...)
		for i, r := range required {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendString(out, r)
		}
		out = append(out, ']')
	}
	out = append(out, "}}"...)
	return pending{key: key, method: "elicitation/create", kind: kindForm, params: out, form: e, base: base}
}

// appendAnswers appends the union of the answers sealed in earlier rounds
// and those accepted now (a key answered again takes the new answer).
func (g *Guard) appendAnswers(dst []byte, st *stateIn, now []answer) []byte {
	sp := &g.sp
	dst = append(dst, '{')
	first := true
	if st.ans >= 0 {
	prior:
		for _, m := range sp.kids(st.ans) {
			for _, a := range now {
				if a.key == m.key {
					continue prior
				}
			}
			dst = appendKey(dst, &first, m.key)
			dst = sp.appendCompact(dst, m.val)
		}
	}
	for _, a := range now {
		dst = appendKey(dst, &first, a.key)
		dst = append(dst, a.json...)
	}
	return append(dst, '}')
}

func (g *Guard) emitEnd(status string, st *stateIn, field string, keys []string) {
	g.begin()
	g.out = append(g.out, `,"status":`...)
	g.out = appendString(g.out, status)
	g.out = append(g.out, `,"operationId":`...)
	g.out = appendString(g.out, st.op)
	g.out = append(g.out, `,"round":`...)
	g.out = strconv.AppendInt(g.out, int64(st.round), 10)
	g.out = append(g.out, `,"`...)
	g.out = append(g.out, field...)
	g.out = append(g.out, `":[`...)
	for i, k := range keys {
		if i > 0 {
			g.out = append(g.out, ',')
		}
		g.out = appendString(g.out, k)
	}
	g.out = append(g.out, ']')
	g.out = g.appendRemember(g.out)
	g.end()
}

func validSamplingResult(p *parser, r int32) bool {
	if p.kindOf(r) != jObject {
		return false
	}
	role, _ := p.string(p.get(r, "role"))
	_, hasModel := p.string(p.get(r, "model"))
	c := p.kindOf(p.get(r, "content"))
	return (role == "user" || role == "assistant") && hasModel && (c == jObject || c == jArray)
}

func validRootsResult(p *parser, r int32) bool {
	roots := p.get(r, "roots")
	if p.kindOf(r) != jObject || p.kindOf(roots) != jArray {
		return false
	}
	for _, m := range p.kids(roots) {
		uri, ok := p.string(p.get(m.val, "uri"))
		if p.kindOf(m.val) != jObject || !ok || !strings.HasPrefix(uri, "file://") {
			return false
		}
	}
	return true
}

// openOp opens a state without resuming, for tooling and test vectors. It
// reports the state's shape, never its answers.
func (g *Guard) openOp(root int32) *Error {
	p := &g.p
	var c callCtx
	if err := g.beginCall(root, &c, false); err != nil {
		return err
	}
	token, _ := p.string(p.get(root, "requestState"))
	st, err := g.open(&c, token)
	if err != nil {
		return err
	}
	sp := &g.sp
	g.begin()
	g.out = append(g.out, `,"status":"open","operationId":`...)
	g.out = appendString(g.out, st.op)
	g.out = append(g.out, `,"round":`...)
	g.out = strconv.AppendInt(g.out, int64(st.round), 10)
	g.out = append(g.out, `,"issuedAt":`...)
	g.out = appendTime(g.out, st.iat)
	g.out = append(g.out, `,"expiresAt":`...)
	g.out = appendTime(g.out, st.exp)
	g.out = append(g.out, `,"pending":[`...)
	for i, m := range sp.kids(st.pend) {
		if i > 0 {
			g.out = append(g.out, ',')
		}
		g.out = appendString(g.out, m.key)
	}
	g.out = append(g.out, `],"answered":[`...)
	if st.ans >= 0 {
		for i, m := range sp.kids(st.ans) {
			if i > 0 {
				g.out = append(g.out, ',')
			}
			g.out = appendString(g.out, m.key)
		}
	}
	g.out = append(g.out, ']')
	g.end()
	return nil
}

// answersDomain separates the answers digest from every other SHA-256 the
// project computes (guest/ABI.md).
const answersDomain = "mrtr-wasm/answers/v2\x00"

// answersDigest is SHA-256(answersDomain || RFC 8785 form of the answers
// object): the key under which every host claims the operation in the
// replay ledger, so that Go and JavaScript servers sharing one ledger,
// and two builds of this module, agree on "the same answers".
func (g *Guard) answersDigest(answers []byte) ([32]byte, *Error) {
	root, err := g.dp.parseValid(answers, stateMaxDepth)
	if err != nil {
		return [32]byte{}, err
	}
	g.dbuf = append(g.dbuf[:0], answersDomain...)
	if g.dbuf, err = g.dp.appendCanonical(g.dbuf, root); err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(g.dbuf), nil
}
