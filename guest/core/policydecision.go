package core

import "strconv"

// A deployment policy's decision is read here, once for every host: what
// allows, what refuses, and the error a refusal becomes. Hosts pass the
// decision as their policy gave it and never judge it themselves.

// codeUndecided is the denial when a policy gives no usable decision.
const codeUndecided = "policy.undecided"

type policyDenial struct{ code, rule, key, field, message string }

// readDenial reads one denial; a member that is not a string reads as "".
// A denial without a code is policy.undecided: every refusal names a
// reason (logs, metrics and the error's reason read it).
func readDenial(p *parser, n int32) policyDenial {
	s := func(k string) string { v, _ := p.string(p.get(n, k)); return v }
	if p.kindOf(n) != jObject {
		return policyDenial{code: codeUndecided, message: "the policy gave a denial that is not an object"}
	}
	d := policyDenial{code: s("code"), rule: s("rule"), key: s("key"), field: s("field"), message: s("message")}
	if d.code == "" {
		d.code = codeUndecided
		if d.message == "" {
			d.message = "the policy gave a denial without a code"
		}
	}
	return d
}

// documentDecision is a decision document (policies/README.md) read as
// the shipped policies' hosts read it: anything not shaped as documented
// refuses, deny always wins, and an allow needs both limits.
type documentDecision struct {
	allow          bool
	deny           []policyDenial
	maxRounds, ttl int64
	rules          []string
}

func undecided(msg string) documentDecision {
	return documentDecision{deny: []policyDenial{{code: codeUndecided, message: msg}}}
}

// readDocument reads the decision document at n (-1 or null: the policy
// gave none).
func readDocument(p *parser, n int32) documentDecision {
	if n < 0 || p.kindOf(n) == jNull {
		return undecided("the policy gave no decision")
	}
	if p.kindOf(n) != jObject {
		return undecided("the policy decision is not an object")
	}
	var d documentDecision
	switch deny := p.get(n, "deny"); p.kindOf(deny) {
	case jArray:
		for _, m := range p.kids(deny) {
			d.deny = append(d.deny, readDenial(p, m.val))
		}
	case jNull:
	default:
		return undecided("the policy's deny is not a list")
	}
	d.maxRounds, d.ttl = documentLimit(p, p.get(n, "max_rounds")), documentLimit(p, p.get(n, "ttl_seconds"))
	if rules := p.get(n, "rules"); p.kindOf(rules) == jArray {
		for _, m := range p.kids(rules) {
			s, _ := p.string(m.val)
			d.rules = append(d.rules, s)
		}
	}
	d.allow = p.kindOf(p.get(n, "allow")) == jTrue && len(d.deny) == 0 && d.maxRounds > 0 && d.ttl > 0
	if !d.allow && len(d.deny) == 0 {
		d.deny = []policyDenial{{code: codeUndecided, message: "the policy did not allow this request and gave no reason"}}
	}
	return d
}

// documentLimit is a limit of a decision document: a whole number from 1
// to 2^31, or 0 (none).
func documentLimit(p *parser, n int32) int64 {
	if v, ok := p.int(n); ok && v > 0 && v <= 1<<31 {
		return v
	}
	return 0
}

// policyDecisionOp reads a decision document for a host's policy package
// (and `mrtr-wasm policy eval`): the document as the guard reads it.
func (g *Guard) policyDecisionOp(root int32) *Error {
	p := &g.p
	d := readDocument(p, p.get(root, "document"))
	g.begin()
	o := append(g.out, `,"decision":{"allow":`...)
	o = strconv.AppendBool(o, d.allow)
	o = append(o, `,"deny":[`...)
	for i, x := range d.deny {
		if i > 0 {
			o = append(o, ',')
		}
		o = appendDenial(o, x)
	}
	o = append(o, `],"max_rounds":`...)
	o = strconv.AppendInt(o, d.maxRounds, 10)
	o = append(o, `,"ttl_seconds":`...)
	o = strconv.AppendInt(o, d.ttl, 10)
	o = append(o, `,"rules":[`...)
	for i, r := range d.rules {
		if i > 0 {
			o = append(o, ',')
		}
		o = appendString(o, r)
	}
	g.out = append(o, "]}"...)
	g.end()
	return nil
}

// appendDenial writes a denial as hosts show it: code, rule and message
// always, key and field when set.
func appendDenial(o []byte, x policyDenial) []byte {
	o = append(o, `{"code":`...)
	o = appendString(o, x.code)
	o = append(o, `,"rule":`...)
	o = appendString(o, x.rule)
	if x.key != "" {
		o = append(o, `,"key":`...)
		o = appendString(o, x.key)
	}
	if x.field != "" {
		o = append(o, `,"field":`...)
		o = appendString(o, x.field)
	}
	o = append(o, `,"message":`...)
	o = appendString(o, x.message)
	return append(o, '}')
}

// readPolicy reads the host's policy decision for a round ("policy" of
// ask, resume and upstream.*): the limits it sets (0: none), or the
// refusal. Absent means the host has no policy. The decision is either a
// decision document ({"document": …}, as the policy wrote it) or a host
// policy's answer: {"allow", "code", "rule", "message", "denials",
// "maxRounds", "ttl"}. Only an allow with no denial and no code allows;
// a decision that is missing or malformed refuses.
func readPolicy(p *parser, root int32) (maxRounds, ttl int64, err *Error) {
	n := p.get(root, "policy")
	if n < 0 {
		return 0, 0, nil
	}
	if p.kindOf(n) == jObject {
		if doc := p.get(n, "document"); doc >= 0 {
			d := readDocument(p, doc)
			if d.allow {
				return d.maxRounds, d.ttl, nil
			}
			// The first denial is the reason, as a host's view of the
			// document gives it (code, rule and message).
			f := d.deny[0]
			return 0, 0, refusal(policyDenial{code: f.code, rule: f.rule, message: f.message}, d.deny)
		}
	}
	h, ok := readHostDecision(p, n)
	if !ok {
		return 0, 0, refusal(policyDenial{}, nil)
	}
	if h.allow && len(h.denials) == 0 && h.first.code == "" {
		return h.maxRounds, h.ttl, nil
	}
	return 0, 0, refusal(h.first, h.denials)
}

type hostDecision struct {
	allow          bool
	first          policyDenial // code, rule and message of the first reason, when given
	denials        []policyDenial
	maxRounds, ttl int64
}

// readHostDecision reads a host policy's answer; ok is false when it is
// not shaped as one.
func readHostDecision(p *parser, n int32) (h hostDecision, ok bool) {
	if p.kindOf(n) != jObject {
		return h, false
	}
	if a := p.get(n, "allow"); a >= 0 {
		switch p.kindOf(a) {
		case jTrue:
			h.allow = true
		case jFalse, jNull:
		default:
			return h, false
		}
	}
	for _, f := range [...]struct {
		k string
		v *string
	}{{"code", &h.first.code}, {"rule", &h.first.rule}, {"message", &h.first.message}} {
		m := p.get(n, f.k)
		if m < 0 || p.kindOf(m) == jNull {
			continue
		}
		if *f.v, ok = p.string(m); !ok {
			return h, false
		}
	}
	switch l := p.get(n, "denials"); p.kindOf(l) {
	case jArray:
		for _, m := range p.kids(l) {
			if p.kindOf(m.val) != jObject {
				return h, false
			}
			h.denials = append(h.denials, readDenial(p, m.val))
		}
	case jNull:
	default:
		return h, false
	}
	for _, f := range [...]struct {
		k string
		v *int64
	}{{"maxRounds", &h.maxRounds}, {"ttl", &h.ttl}} {
		m := p.get(n, f.k)
		if m < 0 || p.kindOf(m) == jNull {
			continue
		}
		v, ok := p.int(m)
		if !ok || v < 0 {
			return h, false
		}
		*f.v = v
	}
	return h, true
}

// refusal is the error a refused decision becomes: mrtr.policy.denied, a
// message that names the first reason's code and rule, that code and
// rule as the reason (for logs and metrics), and every denial in data.
func refusal(first policyDenial, all []policyDenial) *Error {
	const refused = "the policy does not allow this request"
	switch {
	case first.code != "" || first.message != "":
		first = policyDenial{code: first.code, rule: first.rule, message: first.message}
	case len(all) > 0:
		first = all[0]
	default:
		first = policyDenial{code: codeUndecided, message: refused}
	}
	if first.code == "" {
		first.code = codeUndecided
	}
	if first.message == "" {
		first.message = refused
	}
	if len(all) == 0 {
		all = []policyDenial{first}
	}
	e := &Error{Code: CodePolicyDenied, Message: first.message + " (" + first.code, Reason: first.code}
	if first.rule != "" {
		e.Message += ", rule " + first.rule
		e.Reason += " (" + first.rule + ")"
	}
	e.Message += ")"
	d := appendDenial(append([]byte(nil), `{"policy":`...), first)
	d = append(d, `,"denials":[`...)
	for i, x := range all {
		if i > 0 {
			d = append(d, ',')
		}
		d = appendDenial(d, x)
	}
	e.Data = append(d, "]}"...)
	return e
}
