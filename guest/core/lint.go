package core

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// Severity of a lint finding. Only errors stop an ask.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

type finding struct {
	code     string
	severity string
	key      string // the input request key, when linting an ask
	field    string // the form property, when there is one
	message  string
}

type findings []finding

func (fs findings) hasError() bool {
	for _, f := range fs {
		if f.severity == SeverityError {
			return true
		}
	}
	return false
}

func (fs *findings) add(code, field, msg string) {
	*fs = append(*fs, finding{code: code, severity: SeverityError, field: field, message: msg})
}

func (fs *findings) warn(code, field, msg string) {
	*fs = append(*fs, finding{code: code, severity: SeverityWarning, field: field, message: msg})
}

func appendFindings(dst []byte, fs findings) []byte {
	dst = append(dst, '[')
	for i, f := range fs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"code":`...)
		dst = appendString(dst, f.code)
		dst = append(dst, `,"severity":`...)
		dst = appendString(dst, f.severity)
		if f.key != "" {
			dst = append(dst, `,"key":`...)
			dst = appendString(dst, f.key)
		}
		if f.field != "" {
			dst = append(dst, `,"field":`...)
			dst = appendString(dst, f.field)
		}
		dst = append(dst, `,"message":`...)
		dst = appendString(dst, f.message)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// lintFailure turns error findings into the error an ask returns: the
// code of the first error, and every finding in data.
func lintFailure(fs findings) *Error {
	var first *finding
	n := 0
	for i := range fs {
		if fs[i].severity == SeverityError {
			if first == nil {
				first = &fs[i]
			}
			n++
		}
	}
	msg := first.message
	if first.key != "" {
		msg = "input request " + quote(first.key) + ": " + msg
	}
	if n > 1 {
		msg += " (and " + itoa(n-1) + " more)"
	}
	data := append([]byte(`{"findings":`), appendFindings(nil, fs)...)
	data = append(data, '}')
	return &Error{Code: first.code, Message: msg, Data: data}
}

// lintOp lints one input request, bare elicitation params, or a bare
// requestedSchema, and reports every finding.
func (g *Guard) lintOp(root int32) *Error {
	p := &g.p
	var fs findings
	switch {
	case p.get(root, "request") >= 0:
		req := p.get(root, "request")
		if p.kindOf(req) != jObject {
			return newError(CodeRequestMalformed, "\"request\" must be an object {method, params}")
		}
		method, _ := p.string(p.get(req, "method"))
		_, fs = g.lintInputRequest(p, method, p.get(req, "params"))
	case p.get(root, "params") >= 0:
		_, fs = g.lintInputRequest(p, "elicitation/create", p.get(root, "params"))
	case p.get(root, "schema") >= 0:
		schema := p.get(root, "schema")
		e := g.formFor(p, schema)
		fs = append(append(fs, e.findings...), defaultFindings(p, schema, e)...)
	default:
		return newError(CodeRequestMalformed, "lint needs \"request\", \"params\" or \"schema\"")
	}
	g.begin()
	g.out = append(g.out, `,"findings":`...)
	g.out = appendFindings(g.out, fs)
	g.end()
	return nil
}

type inputKind uint8

const (
	kindForm inputKind = iota + 1
	kindURL
	kindSampling
	kindSamplingTools
	kindRoots
)

// lintInputRequest checks one input request the server is about to send.
func (g *Guard) lintInputRequest(p *parser, method string, params int32) (inputKind, findings) {
	var fs findings
	switch method {
	case "elicitation/create":
		if p.kindOf(params) != jObject {
			fs.add(CodeInputInvalidParams, "", "elicitation/create needs a params object")
			return kindForm, fs
		}
		mode, hasMode := p.string(p.get(params, "mode"))
		if p.get(params, "mode") >= 0 && !hasMode {
			fs.add(CodeInputInvalidParams, "", "\"mode\" must be \"form\" or \"url\"")
			return kindForm, fs
		}
		switch {
		case !hasMode || mode == "form":
			return kindForm, g.lintFormParams(p, params)
		case mode == "url":
			return kindURL, lintURLParams(p, params)
		default:
			fs.add(CodeInputInvalidParams, "", "unknown elicitation mode "+quote(mode)+" (want \"form\" or \"url\")")
			return kindForm, fs
		}
	case "sampling/createMessage":
		k := lintSampling(p, params, &fs)
		return k, fs
	case "roots/list":
		if params >= 0 && p.kindOf(params) != jNull {
			if p.kindOf(params) != jObject {
				fs.add(CodeInputInvalidParams, "", "roots/list params must be an object")
			} else {
				for _, m := range p.kids(params) {
					if m.key != "_meta" {
						fs.add(CodeUnknownParam, "", "roots/list takes no parameter "+quote(m.key))
					}
				}
			}
		}
		return kindRoots, fs
	case "":
		fs.add(CodeInputUnknownMethod, "", "input request needs a \"method\"")
	default:
		fs.add(CodeInputUnknownMethod, "", "method "+quote(method)+" cannot be an input request (want elicitation/create, sampling/createMessage or roots/list)")
	}
	return 0, fs
}

func (g *Guard) lintFormParams(p *parser, params int32) findings {
	var fs findings
	schema := int32(-1)
	for _, m := range p.kids(params) {
		switch m.key {
		case "mode":
		case "message":
			if s, ok := p.string(m.val); !ok || strings.TrimSpace(s) == "" {
				fs.add(CodeMissingMessage, "", "\"message\" must be a non-empty string that tells the user what is asked and why")
			}
		case "requestedSchema":
			schema = m.val
		default:
			fs.add(CodeUnknownParam, "", "form elicitation params have no field "+quote(m.key))
		}
	}
	if p.get(params, "message") < 0 {
		fs.add(CodeMissingMessage, "", "form elicitation needs a \"message\"")
	}
	if schema < 0 {
		fs.add(CodeFormInvalidSchema, "", "form elicitation needs a \"requestedSchema\"")
		return fs
	}
	e := g.formFor(p, schema)
	fs = append(fs, e.findings...)
	if msg, ok := p.string(p.get(params, "message")); ok && !fs.hasError() {
		secretInMessage(p, schema, e, msg, &fs)
	}
	return append(fs, defaultFindings(p, schema, e)...)
}

// secretInMessage applies the secret rule to a form of one text field
// that has no description: the message is then all the user reads about
// what to type ("Enter your online-banking password below" over a field
// named "value"), so it is read as that field's description.
func secretInMessage(p *parser, schema int32, e *formEntry, msg string, fs *findings) {
	if len(e.props) != 1 || e.props[0].typ != "string" {
		return
	}
	name := e.props[0].name
	v := p.get(p.get(schema, "properties"), name)
	info := fieldInfoOf(p, name, "string", v)
	if info.Description != "" {
		return
	}
	info.Description = msg
	if class, why := detectSecret(&info); class != secretNone {
		fs.add(CodeFormSecretField, name, "the form's message asks for a secret in field "+quote(name)+" ("+string(class)+": "+why+"); forms must never collect secrets: use a URL-mode elicitation (mode \"url\") to a page you serve")
	}
}

// lintSchema checks a requestedSchema against the 2026-07-28 form subset
// and the secret rule, and returns the properties it found.
func lintSchema(p *parser, s int32, fs *findings) []formProp {
	if p.kindOf(s) != jObject {
		fs.add(CodeFormInvalidSchema, "", "requestedSchema must be an object")
		return nil
	}
	var props []formProp
	var required int32 = -1
	sawType := false
	for _, m := range p.kids(s) {
		switch m.key {
		case "$schema":
			d, ok := p.string(m.val)
			if !ok || !knownDialect(d) {
				fs.add(CodeFormSchemaDialect, "", "\"$schema\" must be the JSON Schema 2020-12 or draft-07 URI")
			}
		case "type":
			sawType = true
			if t, _ := p.string(m.val); t != "object" {
				fs.add(CodeFormInvalidSchema, "", "requestedSchema \"type\" must be \"object\"")
			}
		case "properties":
			if p.kindOf(m.val) != jObject {
				fs.add(CodeFormInvalidSchema, "", "\"properties\" must be an object")
				continue
			}
			if err := p.checkCaseKeys(m.val, "properties"); err != nil {
				fs.add(CodeFormInvalidSchema, "", err.Message)
			}
			for _, pm := range p.kids(m.val) {
				if pm.key == "" {
					fs.add(CodeFormInvalidSchema, "", "a property needs a non-empty name")
					continue
				}
				props = append(props, lintProperty(p, pm.key, pm.val, fs))
			}
		case "required":
			required = m.val
		default:
			fs.add(CodeFormUnsupportedKey, "", "keyword "+quote(m.key)+" is outside the form subset of requestedSchema")
		}
	}
	if !sawType {
		fs.add(CodeFormInvalidSchema, "", "requestedSchema needs \"type\": \"object\"")
	}
	if p.get(s, "properties") < 0 {
		fs.add(CodeFormInvalidSchema, "", "requestedSchema needs \"properties\"")
	}
	if required >= 0 {
		if p.kindOf(required) != jArray {
			fs.add(CodeFormInvalidSchema, "", "\"required\" must be an array of property names")
		} else {
			seen := map[string]bool{}
			for _, m := range p.kids(required) {
				name, ok := p.string(m.val)
				switch {
				case !ok:
					fs.add(CodeFormInvalidSchema, "", "\"required\" must hold strings")
				case seen[name]:
					fs.add(CodeFormInvalidSchema, name, "\"required\" names "+quote(name)+" twice")
				default:
					seen[name] = true
					found := false
					for i := range props {
						if props[i].name == name {
							props[i].required = true
							found = true
						}
					}
					if !found {
						fs.add(CodeFormRequiredUnknown, name, "\"required\" names "+quote(name)+", which is not a property")
					}
				}
			}
		}
	}
	return props
}

func knownDialect(d string) bool {
	switch d {
	case "https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema":
		return true
	}
	return false
}

// formProp is what the guard keeps of one form property.
type formProp struct {
	name     string
	title    string
	typ      string
	required bool
	raw      []byte // compact JSON of the property without "default"
}

func (fp *formProp) label() string {
	if fp.title != "" && fp.title != fp.name {
		return fp.title + " (" + fp.name + ")"
	}
	return fp.name
}

var allowedKeys = map[string]string{
	"string":  " type title description minLength maxLength format default enum enumNames oneOf ",
	"number":  " type title description minimum maximum default ",
	"integer": " type title description minimum maximum default ",
	"boolean": " type title description default ",
	"array":   " type title description minItems maxItems items default ",
}

func lintProperty(p *parser, name string, v int32, fs *findings) formProp {
	fp := formProp{name: name}
	if p.kindOf(v) != jObject {
		fs.add(CodeFormInvalidSchema, name, "property "+quote(name)+" must be a schema object")
		return fp
	}
	fp.raw = appendWithout(p, nil, v, "default")
	if p.get(v, "$ref") >= 0 {
		fs.add(CodeFormUnsupportedKey, name, "\"$ref\" is outside the form subset (and network references are never followed)")
		return fp
	}
	tn := p.get(v, "type")
	typ, ok := p.string(tn)
	switch {
	case tn < 0:
		fs.add(CodeFormUnsupportedType, name, "property "+quote(name)+" needs a \"type\"")
		return fp
	case !ok:
		fs.add(CodeFormUnsupportedType, name, "property "+quote(name)+" must have one \"type\" string (type unions are outside the form subset)")
		return fp
	case typ == "object":
		fs.add(CodeFormNotFlat, name, "property "+quote(name)+" is an object: forms are flat, nested objects are not allowed")
		return fp
	}
	allowed, ok := allowedKeys[typ]
	if !ok {
		fs.add(CodeFormUnsupportedType, name, "property "+quote(name)+" has type "+quote(typ)+", which a form cannot ask for")
		return fp
	}
	fp.typ = typ
	for _, m := range p.kids(v) {
		if !strings.Contains(allowed, " "+m.key+" ") {
			fs.add(CodeFormUnsupportedKey, name, "keyword "+quote(m.key)+" is not allowed on a "+typ+" property of a form")
			continue
		}
		switch m.key {
		case "title":
			fp.title, ok = p.string(m.val)
			if !ok {
				fs.add(CodeFormBadKeywordValue, name, "\"title\" must be a string")
			}
		case "description":
			_, ok = p.string(m.val)
			if !ok {
				fs.add(CodeFormBadKeywordValue, name, "\"description\" must be a string")
			}
		case "format":
			f, _ := p.string(m.val)
			switch f {
			case "email", "uri", "date", "date-time":
			case "password":
				// Reported by the secret check below.
			default:
				fs.add(CodeFormFormat, name, "format "+quote(f)+" is not one of email, uri, date, date-time")
			}
		case "minLength", "maxLength", "minItems", "maxItems":
			if n, ok := p.int(m.val); !ok || n < 0 {
				fs.add(CodeFormBadKeywordValue, name, quote(m.key)+" must be a non-negative integer")
			}
		case "minimum", "maximum":
			if _, ok := p.float(m.val); !ok || len(p.node(m.val).str) > maxNumberLiteral {
				fs.add(CodeFormBadKeywordValue, name, quote(m.key)+" must be a finite number")
			}
		case "enum":
			lintStringList(p, m.val, name, "enum", fs)
		case "enumNames":
			fs.warn(CodeFormLegacyEnum, name, "\"enumNames\" is a legacy, non-standard keyword; prefer oneOf with const and title")
			if p.kindOf(m.val) != jArray || p.kindOf(p.get(v, "enum")) != jArray || p.node(m.val).n != p.node(p.get(v, "enum")).n {
				fs.add(CodeFormEnum, name, "\"enumNames\" must be an array as long as \"enum\"")
			}
		case "oneOf":
			lintTitledOptions(p, m.val, name, "oneOf", fs)
		case "items":
			lintItems(p, m.val, name, fs)
		}
	}
	if typ == "string" && p.get(v, "enum") >= 0 && p.get(v, "oneOf") >= 0 {
		fs.add(CodeFormEnum, name, "a property has either \"enum\" or \"oneOf\", not both")
	}
	if typ == "array" && p.get(v, "items") < 0 {
		fs.add(CodeFormNotFlat, name, "a multi-select property needs \"items\" with an enum or anyOf of options")
	}
	for _, k := range [][2]string{{"minLength", "maxLength"}, {"minimum", "maximum"}, {"minItems", "maxItems"}} {
		lo, ok1 := p.float(p.get(v, k[0]))
		hi, ok2 := p.float(p.get(v, k[1]))
		if ok1 && ok2 && lo > hi {
			fs.add(CodeFormBadKeywordValue, name, quote(k[0])+" is greater than "+quote(k[1]))
		}
	}
	// The secret rule: writeOnly is not a form keyword, but a schema that
	// carries it says loudly what it wants.
	info := fieldInfoOf(p, name, typ, v)
	if class, why := detectSecret(&info); class != secretNone {
		fs.add(CodeFormSecretField, name, "field "+quote(name)+" asks for a secret ("+string(class)+": "+why+"); forms must never collect secrets: use a URL-mode elicitation (mode \"url\") to a page you serve")
	}
	return fp
}

const maxNumberLiteral = 64

func lintStringList(p *parser, v int32, name, kw string, fs *findings) {
	if p.kindOf(v) != jArray || p.node(v).n == 0 {
		fs.add(CodeFormEnum, name, quote(kw)+" must be a non-empty array of strings")
		return
	}
	seen := map[string]bool{}
	for _, m := range p.kids(v) {
		s, ok := p.string(m.val)
		if !ok {
			fs.add(CodeFormEnum, name, quote(kw)+" must hold only strings")
			return
		}
		if seen[s] {
			fs.add(CodeFormEnum, name, quote(kw)+" lists "+quote(s)+" twice")
		}
		seen[s] = true
	}
}

func lintTitledOptions(p *parser, v int32, name, kw string, fs *findings) {
	if p.kindOf(v) != jArray || p.node(v).n == 0 {
		fs.add(CodeFormEnum, name, quote(kw)+" must be a non-empty array of {const, title} options")
		return
	}
	seen := map[string]bool{}
	for _, m := range p.kids(v) {
		c, okc := p.string(p.get(m.val, "const"))
		_, okt := p.string(p.get(m.val, "title"))
		if p.kindOf(m.val) != jObject || !okc || !okt || p.node(m.val).n != 2 {
			fs.add(CodeFormEnum, name, "each "+quote(kw)+" option must be exactly {\"const\": string, \"title\": string}")
			return
		}
		if seen[c] {
			fs.add(CodeFormEnum, name, quote(kw)+" lists "+quote(c)+" twice")
		}
		seen[c] = true
	}
}

func lintItems(p *parser, v int32, name string, fs *findings) {
	if p.kindOf(v) != jObject {
		fs.add(CodeFormNotFlat, name, "\"items\" must be an object with an enum or anyOf of options")
		return
	}
	if t, _ := p.string(p.get(v, "type")); t == "object" || t == "array" {
		fs.add(CodeFormNotFlat, name, "a multi-select holds strings only: arrays of objects or arrays are not allowed in a form")
		return
	}
	enum, anyOf := p.get(v, "enum"), p.get(v, "anyOf")
	for _, m := range p.kids(v) {
		switch m.key {
		case "type":
			if t, _ := p.string(m.val); t != "string" {
				fs.add(CodeFormUnsupportedType, name, "multi-select items must have type \"string\"")
			}
		case "enum", "anyOf":
		default:
			fs.add(CodeFormUnsupportedKey, name, "keyword "+quote(m.key)+" is not allowed in multi-select items")
		}
	}
	switch {
	case enum >= 0 && anyOf < 0:
		if t, _ := p.string(p.get(v, "type")); t != "string" {
			fs.add(CodeFormUnsupportedType, name, "multi-select items with enum need type \"string\"")
		}
		lintStringList(p, enum, name, "items.enum", fs)
	case anyOf >= 0 && enum < 0:
		lintTitledOptions(p, anyOf, name, "items.anyOf", fs)
	default:
		fs.add(CodeFormEnum, name, "multi-select items need exactly one of \"enum\" or \"anyOf\"")
	}
}

// appendWithout appends object v compactly, leaving out one key.
func appendWithout(p *parser, dst []byte, v int32, skip string) []byte {
	dst = append(dst, '{')
	first := true
	for _, m := range p.kids(v) {
		if m.key == skip {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendString(dst, m.key)
		dst = append(dst, ':')
		dst = p.appendCompact(dst, m.val)
	}
	return append(dst, '}')
}

// --- URL mode --------------------------------------------------------------

func lintURLParams(p *parser, params int32) findings {
	var fs findings
	for _, m := range p.kids(params) {
		switch m.key {
		case "mode", "message", "url":
		case "elicitationId":
			fs.add(CodeUnknownParam, "", "\"elicitationId\" was removed in 2026-07-28: correlate through requestState instead")
		default:
			fs.add(CodeUnknownParam, "", "URL elicitation params have no field "+quote(m.key))
		}
	}
	if s, ok := p.string(p.get(params, "message")); !ok || strings.TrimSpace(s) == "" {
		fs.add(CodeMissingMessage, "", "URL elicitation needs a non-empty \"message\" that says why the user should open the page")
	}
	raw, ok := p.string(p.get(params, "url"))
	if !ok || raw == "" {
		fs.add(CodeURLInvalid, "", "URL elicitation needs a \"url\" string")
		return fs
	}
	lintURL(raw, &fs)
	return fs
}

func lintURL(raw string, fs *findings) {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		fs.add(CodeURLInvalid, "", "\"url\" must be an absolute http(s) URL")
		return
	}
	host := strings.ToLower(u.Hostname())
	switch u.Scheme {
	case "https":
	case "http":
		if host != "localhost" && host != "127.0.0.1" && host != "::1" && !strings.HasSuffix(host, ".localhost") {
			fs.add(CodeURLNotHTTPS, "", "\"url\" must use https (http is allowed only for localhost)")
		}
	default:
		fs.add(CodeURLNotHTTPS, "", "\"url\" scheme must be https, not "+quote(u.Scheme))
	}
	if u.User != nil {
		fs.add(CodeURLCredentials, "", "\"url\" must not carry credentials in its user-info part")
	}
	check := func(name, value string) {
		n := normalizeWord(name)
		switch {
		case credentialParam(n):
			fs.add(CodeURLCredentials, "", "\"url\" must not carry a credential: parameter "+quote(name)+" (no pre-authenticated URLs)")
		case personalParam(n):
			fs.add(CodeURLPersonalData, "", "\"url\" must not carry personal data: parameter "+quote(name))
		case looksLikeEmail(value):
			fs.add(CodeURLPersonalData, "", "\"url\" must not carry personal data: parameter "+quote(name)+" holds an email address")
		case looksLikeJWT(value):
			fs.add(CodeURLCredentials, "", "\"url\" must not carry a credential: parameter "+quote(name)+" holds a token")
		}
	}
	for _, part := range []string{u.RawQuery, u.EscapedFragment()} {
		forEachParam(part, check)
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if looksLikeEmail(seg) {
			fs.add(CodeURLPersonalData, "", "\"url\" must not carry personal data: the path holds an email address")
			break
		}
		if looksLikeJWT(seg) {
			fs.add(CodeURLCredentials, "", "\"url\" must not carry a credential: the path holds a token")
			break
		}
	}
}

// forEachParam calls f with each name=value pair of a query or fragment.
// Pairs are split on '&' and on ';' (url.ParseQuery refuses ';' and
// drops the pair, while many servers split on it), and one that does not
// unescape is checked as written: a pair no parser agrees on must not be
// a place to hide a credential.
func forEachParam(q string, f func(name, value string)) {
	for q != "" {
		var pair string
		if i := strings.IndexAny(q, "&;"); i >= 0 {
			pair, q = q[:i], q[i+1:]
		} else {
			pair, q = q, ""
		}
		if pair == "" {
			continue
		}
		name, value, _ := strings.Cut(pair, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if v, err := url.QueryUnescape(value); err == nil {
			value = v
		}
		f(name, value)
	}
}

func normalizeWord(s string) string {
	s = strings.ToLower(s)
	s = strings.NewReplacer("-", "", "_", "", ".", "", " ", "").Replace(s)
	return s
}

func credentialParam(n string) bool {
	switch n {
	case "token", "accesstoken", "refreshtoken", "idtoken", "authtoken", "apikey", "key", "secret", "clientsecret",
		"password", "passwd", "pwd", "pass", "auth", "authorization", "session", "sessionid", "sid", "code", "authcode",
		"sig", "signature", "xamzsignature", "xamzcredential", "xamzsecuritytoken", "jwt", "bearer", "otp", "credentials",
		"privatekey":
		return true
	}
	return strings.HasSuffix(n, "token") || strings.HasSuffix(n, "secret") || strings.HasSuffix(n, "password") || strings.HasSuffix(n, "apikey")
}

func personalParam(n string) bool {
	switch n {
	case "email", "mail", "emailaddress", "phone", "phonenumber", "tel", "mobile", "msisdn", "ssn", "name", "firstname",
		"lastname", "fullname", "surname", "givenname", "address", "street", "dob", "birthdate", "dateofbirth", "birthday",
		"username", "user", "login", "iban", "passport", "nationalid":
		return true
	}
	return false
}

func looksLikeEmail(s string) bool {
	at := strings.IndexByte(s, '@')
	if at <= 0 || at == len(s)-1 {
		return false
	}
	dom := s[at+1:]
	return strings.Contains(dom, ".") && !strings.ContainsAny(s, " /?")
}

func looksLikeJWT(s string) bool {
	return strings.HasPrefix(s, "eyJ") && strings.Count(s, ".") == 2 && len(s) > 20
}

// --- sampling ------------------------------------------------------------

func lintSampling(p *parser, params int32, fs *findings) inputKind {
	if p.kindOf(params) != jObject {
		fs.add(CodeInputInvalidParams, "", "sampling/createMessage needs a params object")
		return kindSampling
	}
	k := kindSampling
	fs.warn(CodeInputDeprecated, "", "sampling/createMessage is deprecated as of 2026-07-28 (SEP-2577)")
	for _, m := range p.kids(params) {
		switch m.key {
		case "messages":
			if p.kindOf(m.val) != jArray || p.node(m.val).n == 0 {
				fs.add(CodeInputInvalidParams, "", "\"messages\" must be a non-empty array")
				continue
			}
			for _, msg := range p.kids(m.val) {
				role, _ := p.string(p.get(msg.val, "role"))
				c := p.get(msg.val, "content")
				if p.kindOf(msg.val) != jObject || (role != "user" && role != "assistant") || (p.kindOf(c) != jObject && p.kindOf(c) != jArray) {
					fs.add(CodeInputInvalidParams, "", "each sampling message needs \"role\" (user or assistant) and \"content\"")
					break
				}
			}
		case "maxTokens":
			if n, ok := p.int(m.val); !ok || n <= 0 {
				fs.add(CodeInputInvalidParams, "", "\"maxTokens\" must be a positive integer")
			}
		case "temperature":
			if _, ok := p.float(m.val); !ok {
				fs.add(CodeInputInvalidParams, "", "\"temperature\" must be a number")
			}
		case "systemPrompt":
			if p.kindOf(m.val) != jString {
				fs.add(CodeInputInvalidParams, "", "\"systemPrompt\" must be a string")
			}
		case "includeContext":
			s, _ := p.string(m.val)
			switch s {
			case "none":
			case "thisServer", "allServers":
				fs.warn(CodeInputDeprecated, "", "includeContext "+quote(s)+" is deprecated")
			default:
				fs.add(CodeInputInvalidParams, "", "\"includeContext\" must be none, thisServer or allServers")
			}
		case "stopSequences":
			if p.kindOf(m.val) != jArray {
				fs.add(CodeInputInvalidParams, "", "\"stopSequences\" must be an array of strings")
			} else {
				for _, s := range p.kids(m.val) {
					if p.kindOf(s.val) != jString {
						fs.add(CodeInputInvalidParams, "", "\"stopSequences\" must be an array of strings")
						break
					}
				}
			}
		case "modelPreferences", "metadata", "_meta":
			if p.kindOf(m.val) != jObject {
				fs.add(CodeInputInvalidParams, "", quote(m.key)+" must be an object")
			}
		case "tools":
			k = kindSamplingTools
			if p.kindOf(m.val) != jArray {
				fs.add(CodeInputInvalidParams, "", "\"tools\" must be an array")
			}
		case "toolChoice":
			k = kindSamplingTools
			if p.kindOf(m.val) != jObject {
				fs.add(CodeInputInvalidParams, "", "\"toolChoice\" must be an object")
			}
		default:
			fs.add(CodeUnknownParam, "", "sampling/createMessage has no parameter "+quote(m.key))
		}
	}
	if p.get(params, "messages") < 0 {
		fs.add(CodeInputInvalidParams, "", "sampling/createMessage needs \"messages\"")
	}
	if p.get(params, "maxTokens") < 0 {
		fs.add(CodeInputInvalidParams, "", "sampling/createMessage needs \"maxTokens\"")
	}
	return k
}

// validKey reports whether s can be an inputRequests key.
func validKey(s string) bool {
	if s == "" || len(s) > maxInputRequestKey || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
