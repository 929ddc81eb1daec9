package core

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// formEntry is a linted and compiled requestedSchema, cached by its
// compact JSON text: the same form asked a thousand times is linted and
// compiled once per instance.
type formEntry struct {
	findings findings
	props    []formProp
	dialect  string
	sch      *jsonschema.Schema // nil when lint found errors
}

func (e *formEntry) prop(name string) *formProp {
	for i := range e.props {
		if e.props[i].name == name {
			return &e.props[i]
		}
	}
	return nil
}

func (g *Guard) formFor(p *parser, schema int32) *formEntry {
	// Fast path: the schema exactly as written (a sealed state holds the
	// compact text the core wrote), looked up without allocating.
	raw := p.raw(schema)
	if e := g.formsRaw[string(raw)]; e != nil {
		return e
	}
	// Keyed without defaults: a re-ask pre-fills defaults from the user's
	// answers, and must not cost a compile or a cache slot per user.
	key := string(appendSchemaKey(p, g.tok[:0], schema))
	if e := g.forms[key]; e != nil {
		g.rememberRaw(raw, e)
		return e
	}
	e := &formEntry{}
	e.props = lintSchema(p, schema, &e.findings)
	e.dialect, _ = p.string(p.get(schema, "$schema"))
	if !e.findings.hasError() {
		g.compileForm(p, schema, e)
	}
	// The entry outlives this call; the parser's strings do not.
	e.dialect = strings.Clone(e.dialect)
	for i := range e.props {
		e.props[i].name = strings.Clone(e.props[i].name)
		e.props[i].title = strings.Clone(e.props[i].title)
		e.props[i].typ = strings.Clone(e.props[i].typ)
	}
	for i := range e.findings {
		e.findings[i].field = strings.Clone(e.findings[i].field)
		e.findings[i].message = strings.Clone(e.findings[i].message)
	}
	if len(g.forms) >= maxSchemaCache {
		clear(g.forms)
	}
	g.forms[key] = e
	g.rememberRaw(raw, e)
	return e
}

// rememberRaw indexes an entry by a schema's exact text too. Only
// default-free texts are kept: those with defaults are re-asks that carry
// a user's answers.
func (g *Guard) rememberRaw(raw []byte, e *formEntry) {
	if len(raw) > 4096 || bytes.Contains(raw, []byte(`"default"`)) {
		return
	}
	if len(g.formsRaw) >= maxSchemaCache {
		clear(g.formsRaw)
	}
	g.formsRaw[string(raw)] = e
}

// appendSchemaKey appends the schema compactly with every property's
// "default" left out.
func appendSchemaKey(p *parser, dst []byte, schema int32) []byte {
	if p.kindOf(schema) != jObject {
		return p.appendCompact(dst, schema)
	}
	dst = append(dst, '{')
	for k, m := range p.kids(schema) {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, m.key)
		dst = append(dst, ':')
		if m.key != "properties" || p.kindOf(m.val) != jObject {
			dst = p.appendCompact(dst, m.val)
			continue
		}
		dst = append(dst, '{')
		for j, pm := range p.kids(m.val) {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, pm.key)
			dst = append(dst, ':')
			if p.kindOf(pm.val) == jObject {
				dst = appendWithout(p, dst, pm.val, "default")
			} else {
				dst = p.appendCompact(dst, pm.val)
			}
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

const formURL = "urn:mrtr-wasm:form"

func (g *Guard) compileForm(p *parser, schema int32, e *formEntry) {
	doc, err := p.toAnyClone(schema, true)
	if err != nil {
		e.findings.add(CodeFormInvalidSchema, "", err.Message)
		return
	}
	if m, ok := doc.(map[string]any); ok {
		// Compile the structure only; defaults are checked per ask.
		if props, ok := m["properties"].(map[string]any); ok {
			for _, v := range props {
				if pm, ok := v.(map[string]any); ok {
					delete(pm, "default")
				}
			}
		}
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.DefaultDraft(jsonschema.Draft2020)
	if cerr := c.AddResource(formURL, doc); cerr != nil {
		e.findings.add(CodeFormInvalidSchema, "", "requestedSchema is not a valid JSON Schema")
		return
	}
	sch, cerr := c.Compile(formURL)
	if cerr != nil {
		e.findings.add(CodeFormInvalidSchema, "", "requestedSchema is not a valid JSON Schema")
		return
	}
	e.sch = sch
}

// defaultFindings checks that each default is a valid answer for its own
// property.
func defaultFindings(p *parser, schema int32, e *formEntry) findings {
	var fs findings
	if e.sch == nil {
		return nil
	}
	var defaults map[string]any
	for _, m := range p.kids(p.get(schema, "properties")) {
		d := p.get(m.val, "default")
		if d < 0 {
			continue
		}
		v, err := p.toAny(d)
		if err != nil {
			fs.add(CodeFormInvalidDefault, m.key, "the default of "+quote(m.key)+" is not usable: "+err.Message)
			continue
		}
		if defaults == nil {
			defaults = map[string]any{}
		}
		defaults[m.key] = v
	}
	if defaults == nil {
		return fs
	}
	if verr := e.sch.Validate(defaults); verr != nil {
		for _, pr := range problemsOf(verr, e) {
			if pr.missing {
				continue
			}
			fs.add(CodeFormInvalidDefault, pr.field, "the default of "+quote(pr.field)+" is not a valid answer: it "+pr.msg)
		}
	}
	return fs
}

// toAny converts node i to the values jsonschema expects. Numbers become
// json.Number only after a range check: a literal such as 1e1000001 would
// otherwise reach math/big inside the validator.
func (p *parser) toAny(i int32) (any, *Error) { return p.toAnyClone(i, false) }

// toAnyClone converts like toAny; with clone set, no string aliases the
// source, for values that outlive the call (compiled schemas).
func (p *parser) toAnyClone(i int32, clone bool) (any, *Error) {
	n := &p.nodes[i]
	switch n.kind {
	case jNull:
		return nil, nil
	case jTrue:
		return true, nil
	case jFalse:
		return false, nil
	case jString:
		if clone {
			return strings.Clone(n.str), nil
		}
		return n.str, nil
	case jNumber:
		if err := checkNumber(n.str); err != nil {
			return nil, err
		}
		if clone {
			return json.Number(strings.Clone(n.str)), nil
		}
		return json.Number(n.str), nil
	case jArray:
		out := make([]any, 0, n.n)
		for _, m := range p.kids(i) {
			v, err := p.toAnyClone(m.val, clone)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	default:
		out := make(map[string]any, n.n)
		for _, m := range p.kids(i) {
			v, err := p.toAnyClone(m.val, clone)
			if err != nil {
				return nil, err
			}
			k := m.key
			if clone {
				k = strings.Clone(k)
			}
			out[k] = v
		}
		return out, nil
	}
}

func checkNumber(lit string) *Error {
	if len(lit) > maxNumberLiteral {
		return newError(CodeNumberOutOfRange, "number literal is longer than "+itoa(maxNumberLiteral)+" characters")
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		// The literal is the user's answer: it stays out of the message.
		return newError(CodeNumberOutOfRange, "a number is outside the range a form answer can hold")
	}
	return nil
}

// formCheck is the verdict on one accepted form answer.
type formCheck struct {
	content  []byte // the answer without fields the form did not ask for
	problems []problem
	present  map[string]int32 // fields the user sent, by node
	unasked  []string         // names of the fields the form did not ask for
}

type problem struct {
	field   string
	msg     string
	missing bool
}

// checkForm validates the content of an accept against the form. The
// asked fields are appended to dst compactly, or with raw set as the
// client wrote each value (for an upstream, which reads the client's
// bytes: the value checked is the value it gets).
func checkForm(p *parser, e *formEntry, content int32, dst []byte, raw bool) (formCheck, *Error) {
	var fc formCheck
	if content >= 0 && p.kindOf(content) != jNull && p.kindOf(content) != jObject {
		return fc, newError(CodeResponsesMalformed, "\"content\" of an accepted form must be an object")
	}
	inst := map[string]any{}
	fc.present = map[string]int32{}
	dst = append(dst, '{')
	first := true
	if content >= 0 && p.kindOf(content) == jObject {
		if p.node(content).n > maxContentKeys {
			return fc, newError(CodeResponsesMalformed, "form content has more than "+itoa(maxContentKeys)+" fields")
		}
		if err := p.checkCaseKeys(content, "form content"); err != nil {
			return fc, err
		}
		for _, m := range p.kids(content) {
			if e.prop(m.key) == nil {
				// Not asked for: dropped, never passed on (a server might
				// read it as the answer to a later question).
				fc.unasked = append(fc.unasked, m.key)
				continue
			}
			if err := checkAnswerValue(p, m.val); err != nil {
				return fc, err
			}
			v, err := p.toAny(m.val)
			if err != nil {
				return fc, err
			}
			inst[m.key] = v
			fc.present[m.key] = m.val
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendString(dst, m.key)
			dst = append(dst, ':')
			if raw {
				dst = append(dst, p.raw(m.val)...)
			} else {
				dst = p.appendCompact(dst, m.val)
			}
		}
	}
	fc.content = append(dst, '}')
	if verr := e.sch.Validate(inst); verr != nil {
		fc.problems = problemsOf(verr, e)
	}
	return fc, nil
}

// checkAnswerValue refuses values a form cannot produce: objects, and
// arrays holding anything but scalars.
func checkAnswerValue(p *parser, v int32) *Error {
	switch p.kindOf(v) {
	case jObject:
		return newError(CodeTooDeep, "a form answer cannot hold an object: forms are flat")
	case jArray:
		if p.node(v).n > maxContentArrayLen {
			return newError(CodeResponsesMalformed, "a multi-select answer has more than "+itoa(maxContentArrayLen)+" items")
		}
		for _, m := range p.kids(v) {
			if k := p.kindOf(m.val); k == jObject || k == jArray {
				return newError(CodeTooDeep, "a multi-select answer holds only strings: nesting deeper than a form can be")
			}
		}
	}
	return nil
}

// problemsOf flattens a validation error tree into one problem per field,
// in the order of the form, with messages a person can act on.
func problemsOf(verr error, e *formEntry) []problem {
	ve, ok := verr.(*jsonschema.ValidationError)
	if !ok {
		return []problem{{msg: "is not valid"}}
	}
	found := map[string]problem{}
	var walk func(v *jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) > 0 {
			if _, isOneOf := v.ErrorKind.(*kind.OneOf); isOneOf && len(v.InstanceLocation) > 0 {
				add(found, problem{field: v.InstanceLocation[0], msg: "must be one of the offered options"})
				return
			}
			if _, isAnyOf := v.ErrorKind.(*kind.AnyOf); isAnyOf && len(v.InstanceLocation) > 0 {
				add(found, problem{field: v.InstanceLocation[0], msg: "must be one of the offered options"})
				return
			}
			for _, c := range v.Causes {
				walk(c)
			}
			return
		}
		if r, ok := v.ErrorKind.(*kind.Required); ok && len(v.InstanceLocation) == 0 {
			for _, f := range r.Missing {
				add(found, problem{field: f, msg: "is required", missing: true})
			}
			return
		}
		if len(v.InstanceLocation) == 0 {
			add(found, problem{msg: "must be an object of answers"})
			return
		}
		add(found, problem{field: v.InstanceLocation[0], msg: describe(v.ErrorKind, e.prop(v.InstanceLocation[0]))})
	}
	walk(ve)
	out := make([]problem, 0, len(found))
	for _, fp := range e.props {
		if pr, ok := found[fp.name]; ok {
			out = append(out, pr)
			delete(found, fp.name)
		}
	}
	for _, pr := range found { // not a property (cannot happen after stripping)
		out = append(out, pr)
	}
	return out
}

func add(m map[string]problem, pr problem) {
	if _, ok := m[pr.field]; !ok {
		m[pr.field] = pr
	}
}

func describe(k jsonschema.ErrorKind, fp *formProp) string {
	switch k := k.(type) {
	case *kind.Type:
		want := strings.Join(k.Want, " or ")
		switch want {
		case "array":
			return "must be a list of choices"
		case "integer":
			return "must be a whole number"
		}
		return "must be a " + want
	case *kind.Format:
		switch k.Want {
		case "email":
			return "must be a valid email address"
		case "uri":
			return "must be a valid absolute URI"
		case "date":
			return "must be a date like 2026-07-28"
		case "date-time":
			return "must be a date and time like 2026-07-28T14:30:00Z"
		}
		return "must be a valid " + k.Want
	case *kind.MinLength:
		return "must be at least " + itoa(k.Want) + " characters long"
	case *kind.MaxLength:
		return "must be at most " + itoa(k.Want) + " characters long"
	case *kind.Minimum:
		return "must be at least " + ratString(k.Want.FloatString(6))
	case *kind.Maximum:
		return "must be at most " + ratString(k.Want.FloatString(6))
	case *kind.Enum:
		if len(k.Want) <= 12 {
			var opts []string
			for _, w := range k.Want {
				if s, ok := w.(string); ok {
					opts = append(opts, s)
				}
			}
			return "must be one of: " + strings.Join(opts, ", ")
		}
		return "must be one of the offered options"
	case *kind.Const:
		return "must be one of the offered options"
	case *kind.MinItems:
		return "needs at least " + itoa(k.Want) + " choices"
	case *kind.MaxItems:
		return "allows at most " + itoa(k.Want) + " choices"
	}
	return "is not valid"
}

func ratString(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	return s
}
