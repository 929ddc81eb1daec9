package core

import (
	"slices"
	"strings"
)

// policyInputOp builds the input of a deployment policy's decision
// (policies/README.md): the one builder every host uses, so a Go and a
// JavaScript server hand OPA the same bytes. The input is RFC 8785
// canonical: equal queries give equal bytes, which hosts may memoise on.
//
// What the policy must not see is left out: the params' "message" (free
// text) and every property's "default" (in a re-ask, the user's own
// answers). What the policy cannot work out as well as the core is added:
// each form field's secret classification ("fields"), so the core's
// detector is the only one.
func (g *Guard) policyInputOp(root int32) *Error {
	p := &g.p
	decision, _ := p.string(p.get(root, "decision"))
	if decision != "ask" && decision != "resume" && decision != "approve" {
		return newError(CodeRequestMalformed, "policy.input needs \"decision\": ask, resume or approve")
	}
	var str [3]string
	for i, k := range [...]string{"principal", "method", "target"} {
		s, ok := p.string(p.get(root, k))
		if !ok {
			return newError(CodeRequestMalformed, "policy.input needs a string "+quote(k))
		}
		str[i] = s
	}
	ttl, err := optInt(p, root, "ttl", 0, 0, MaxTTLSeconds)
	if err != nil {
		return err
	}
	rounds, err := optInt(p, root, "maxRounds", 0, 0, MaxRoundsLimit)
	if err != nil {
		return err
	}
	// The caller's access token, when the host passes it: its scopes (a
	// list of strings, kept in the order given) and the claims the
	// deployment lets the policy see (an object, canonicalised).
	scopes, claims := p.get(root, "scopes"), p.get(root, "claims")
	if scopes >= 0 {
		if p.kindOf(scopes) != jArray {
			return newError(CodeRequestMalformed, "\"scopes\" must be a list of strings")
		}
		for _, m := range p.kids(scopes) {
			if p.kindOf(m.val) != jString {
				return newError(CodeRequestMalformed, "\"scopes\" must be a list of strings")
			}
		}
	}
	if claims >= 0 && p.kindOf(claims) != jObject {
		return newError(CodeRequestMalformed, "\"claims\" must be an object")
	}
	reqs := p.get(root, "inputRequests")
	if reqs >= 0 && p.kindOf(reqs) != jObject {
		return newError(CodeRequestMalformed, "\"inputRequests\" must be an object keyed by the server's names")
	}
	if reqs >= 0 {
		if err := p.checkCaseKeys(reqs, "inputRequests"); err != nil {
			return err
		}
	}
	g.begin()
	o := append(g.out, `,"input":{`...)
	if decision == "approve" {
		// Whether a call needs a person's approval depends on what it
		// would do: the approve decision alone sees the arguments.
		o = append(o, `"arguments":`...)
		if args := p.get(root, "arguments"); args < 0 || p.kindOf(args) == jNull {
			o = append(o, "{}"...)
		} else {
			err = p.checkExactNumbers(args)
			if err == nil {
				o, err = p.appendCanonical(o, args)
			}
			if err != nil {
				return &Error{Code: CodeArgumentsMalformed, Message: "arguments: " + err.Message}
			}
		}
		o = append(o, ',')
	}
	if claims >= 0 {
		o = append(o, `"claims":`...)
		if o, err = p.appendCanonical(o, claims); err != nil {
			return err
		}
		o = append(o, ',')
	}
	if decision == "ask" {
		o = append(o, `"inputs":{`...)
		if reqs >= 0 {
			for k, m := range sortedKids(p, reqs) {
				if k > 0 {
					o = append(o, ',')
				}
				o = appendString(o, m.key)
				o = append(o, ':')
				if o, err = p.appendPolicyRequest(o, m.val); err != nil {
					return err
				}
			}
		}
		o = append(o, "},"...)
	}
	o = append(o, `"max_rounds":`...)
	o = appendES6Number(o, float64(rounds))
	o = append(o, `,"method":`...)
	o = appendString(o, str[1])
	o = append(o, `,"principal":`...)
	o = appendString(o, str[0])
	if scopes >= 0 {
		o = append(o, `,"scopes":[`...)
		for k, m := range p.kids(scopes) {
			if k > 0 {
				o = append(o, ',')
			}
			s, _ := p.string(m.val)
			o = appendString(o, s)
		}
		o = append(o, ']')
	}
	o = append(o, `,"target":`...)
	o = appendString(o, str[2])
	o = append(o, `,"ttl_seconds":`...)
	o = appendES6Number(o, float64(ttl))
	g.out = append(o, '}')
	g.end()
	return nil
}

func sortedKids(p *parser, i int32) []jmember {
	kids := p.kids(i)
	if slices.IsSortedFunc(kids, cmpMemberUTF16) {
		return kids
	}
	kids = slices.Clone(kids)
	slices.SortFunc(kids, cmpMemberUTF16)
	return kids
}

// appendPolicyRequest appends one input request as the policy sees it:
// {"fields"?, "method", "params"?}, canonical.
func (p *parser) appendPolicyRequest(dst []byte, req int32) ([]byte, *Error) {
	if p.kindOf(req) != jObject {
		return p.appendCanonical(dst, req)
	}
	method := p.get(req, "method")
	params := p.get(req, "params")
	dst = append(dst, '{')
	sep := false
	if m, _ := p.string(method); m == "elicitation/create" {
		if mode, _ := p.string(p.get(params, "mode")); mode != "url" {
			if props := p.get(p.get(params, "requestedSchema"), "properties"); p.kindOf(props) == jObject {
				dst = p.appendFieldClasses(dst, props)
				sep = true
			}
		}
	}
	var err *Error
	if method >= 0 {
		if sep {
			dst = append(dst, ',')
		}
		dst = append(dst, `"method":`...)
		if dst, err = p.appendCanonical(dst, method); err != nil {
			return nil, err
		}
		sep = true
	}
	if params >= 0 {
		if sep {
			dst = append(dst, ',')
		}
		dst = append(dst, `"params":`...)
		if dst, err = p.appendReduced(dst, params, 0); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// appendFieldClasses appends "fields": each property's classification
// by the core's secret detector, the same verdict lint gives.
func (p *parser) appendFieldClasses(dst []byte, props int32) []byte {
	dst = append(dst, `"fields":{`...)
	for k, m := range sortedKids(p, props) {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, m.key)
		typ, _ := p.string(p.get(m.val, "type"))
		info := fieldInfoOf(p, m.key, typ, m.val)
		c := classifyField(&info)
		dst = append(dst, `:{"class":`...)
		dst = appendString(dst, string(c.class))
		dst = append(dst, `,"language":`...)
		dst = appendString(dst, c.language)
		dst = append(dst, `,"reason":`...)
		dst = appendString(dst, c.reason)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// appendReduced appends node i canonically without the params' "message"
// (level 0: params; 1: requestedSchema; 2: properties; 3: a property)
// and the properties' "default".
func (p *parser) appendReduced(dst []byte, i int32, level int) ([]byte, *Error) {
	if p.kindOf(i) != jObject {
		return p.appendCanonical(dst, i)
	}
	dst = append(dst, '{')
	first := true
	for _, m := range sortedKids(p, i) {
		next := -1
		switch {
		case level == 0 && m.key == "message", level == 3 && m.key == "default":
			continue
		case level == 0 && m.key == "requestedSchema", level == 1 && m.key == "properties", level == 2:
			next = level + 1
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendString(dst, m.key)
		dst = append(dst, ':')
		var err *Error
		if next >= 0 {
			dst, err = p.appendReduced(dst, m.val, next)
		} else {
			dst, err = p.appendCanonical(dst, m.val)
		}
		if err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// fieldInfoOf reads what the secret detector needs of one form property
// (lint and the policy input both use it, so they agree). Keywords a
// property of type typ may not carry do not count.
func fieldInfoOf(p *parser, name, typ string, v int32) fieldInfo {
	info := fieldInfo{Name: name, Type: typ}
	if p.kindOf(v) != jObject {
		return info
	}
	allowed := allowedKeys[typ]
	for _, m := range p.kids(v) {
		if !strings.Contains(allowed, " "+m.key+" ") {
			continue
		}
		switch m.key {
		case "title":
			info.Title, _ = p.string(m.val)
		case "description":
			info.Description, _ = p.string(m.val)
		case "format":
			info.Format, _ = p.string(m.val)
		case "enum", "oneOf", "items":
			info.Choice = true
		}
	}
	info.WriteOnly = p.kindOf(p.get(v, "writeOnly")) == jTrue
	return info
}
