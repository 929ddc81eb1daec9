package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/gobwas/glob"
	"github.com/open-policy-agent/opa/v1/util"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/mrtr-wasm/mrtr-wasm/policies"
)

// Data is a decoded data file: what one deployment allows.
// policies/README.md documents every member; policies/data.schema.json
// is its shape.
type Data struct {
	Version          int             `json:"version"`
	Description      string          `json:"description,omitempty"`
	Limits           Limits          `json:"limits"`
	ForbiddenClasses []string        `json:"forbidden_classes"`
	Classifier       *Classifier     `json:"classifier,omitempty"`
	Default          Rule            `json:"default"`
	Tools            map[string]Rule `json:"tools"`
}

// Limits are the operator's bounds for every rule and for the guard's
// own settings.
type Limits struct {
	MaxRounds  Bounds `json:"max_rounds"`
	TTLSeconds Bounds `json:"ttl_seconds"`
}

// Bounds is an inclusive range.
type Bounds struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// Classifier adds words to the shipped field classifier.
type Classifier struct {
	Words map[string]string `json:"words"`
}

// Rule says what one tool (or the tools a glob matches, or any tool no
// rule names) may ask.
type Rule struct {
	Description string   `json:"description,omitempty"`
	Kinds       []string `json:"kinds,omitempty"`
	Fields      []string `json:"fields,omitempty"`
	Classes     []string `json:"classes,omitempty"`
	URLHosts    []string `json:"url_hosts,omitempty"`
	URLPaths    []string `json:"url_paths,omitempty"`
	MaxRounds   int      `json:"max_rounds,omitempty"`
	TTLSeconds  int      `json:"ttl_seconds,omitempty"`
}

// dataFile is a data file checked and ready for the store.
type dataFile struct {
	name string
	raw  []byte
	ix   *JSONIndex
	data *Data
	doc  any // the JSON as OPA's store wants it
}

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaErr  error
)

func dataSchema() (*jsonschema.Schema, error) {
	schemaOnce.Do(func() {
		b, err := fs.ReadFile(policies.FS, "data.schema.json")
		if err != nil {
			schemaErr = err
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			schemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		const url = "https://github.com/mrtr-wasm/mrtr-wasm/policies/data.schema.json"
		if schemaErr = c.AddResource(url, doc); schemaErr != nil {
			return
		}
		schema, schemaErr = c.Compile(url)
	})
	return schema, schemaErr
}

var printer = message.NewPrinter(language.English)

// parseData checks a data file: JSON, the documented shape, then what a
// schema cannot say (known classes, bounds, globs). known, when not
// empty, are the tool names a glob must match at least one of.
func parseData(name string, raw []byte, classes map[string]bool, known []string) (*dataFile, error) {
	ix, err := IndexJSON(raw)
	if err != nil {
		var se *SyntaxError
		if errors.As(err, &se) {
			return nil, LoadErrors{{File: name, Line: se.Line, Msg: "not valid JSON: " + se.Msg}}
		}
		return nil, LoadErrors{{File: name, Msg: err.Error()}}
	}
	var errs LoadErrors
	for _, p := range ix.Duplicates() {
		errs = append(errs, &LoadError{File: name, Line: ix.Line(p), Msg: fmt.Sprintf("%s is given twice", p)})
	}
	sch, err := dataSchema()
	if err != nil {
		return nil, fmt.Errorf("policy: the data schema: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, LoadErrors{{File: name, Msg: "not valid JSON: " + err.Error()}}
	}
	if err := sch.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, LoadErrors{{File: name, Msg: err.Error()}}
		}
		for _, leaf := range leaves(ve) {
			p := Pointer(leaf.InstanceLocation...)
			if ap, ok := leaf.ErrorKind.(*kind.AdditionalProperties); ok && len(ap.Properties) > 0 {
				p += Pointer(ap.Properties[0]) // the line of the member itself
			}
			at := p
			if at == "" {
				at = "/"
			}
			errs = append(errs, &LoadError{File: name, Line: ix.Line(p), Msg: fmt.Sprintf("at %s: %s (see policies/README.md)", at, leaf.ErrorKind.LocalizedString(printer))})
		}
		return nil, errs.err()
	}
	if len(errs) > 0 {
		return nil, errs.err()
	}
	var d Data
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, LoadErrors{{File: name, Msg: err.Error()}}
	}
	var doc any
	if err := util.UnmarshalJSON(raw, &doc); err != nil {
		return nil, LoadErrors{{File: name, Msg: err.Error()}}
	}
	f := &dataFile{name: name, raw: raw, ix: ix, data: &d, doc: doc}
	if err := f.check(classes, known); err != nil {
		return nil, err
	}
	return f, nil
}

func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// check runs the checks a JSON Schema cannot express.
func (f *dataFile) check(classes map[string]bool, known []string) error {
	d := f.data
	var errs LoadErrors
	bad := func(msg string, ptr ...string) {
		errs = append(errs, &LoadError{File: f.name, Line: f.ix.Line(Pointer(ptr...)), Msg: msg})
	}
	knownList := slices.Sorted(maps.Keys(classes))
	checkClass := func(c string, ptr ...string) {
		if !classes[c] {
			bad(fmt.Sprintf("unknown class %q (the classes are %s)", c, strings.Join(knownList, ", ")), ptr...)
		}
	}
	for i, c := range d.ForbiddenClasses {
		checkClass(c, "forbidden_classes", fmt.Sprint(i))
	}
	if d.Classifier != nil {
		for w, c := range d.Classifier.Words {
			checkClass(c, "classifier", "words", w)
			if c == "secret" {
				// One secret detector: the guard core's (its verdict is in the input).
				bad(fmt.Sprintf("classifier word %q: the class \"secret\" comes only from the guard core's detector", w), "classifier", "words", w)
			}
		}
	}
	for _, b := range []struct {
		name string
		b    Bounds
	}{{"max_rounds", d.Limits.MaxRounds}, {"ttl_seconds", d.Limits.TTLSeconds}} {
		if b.b.Min > b.b.Max {
			bad(fmt.Sprintf("limits.%s: min %d is above max %d", b.name, b.b.Min, b.b.Max), "limits", b.name)
		}
	}
	checkRule := func(r Rule, ptr ...string) {
		at := func(more ...string) []string { return append(append([]string(nil), ptr...), more...) }
		for i, c := range r.Classes {
			checkClass(c, at("classes", fmt.Sprint(i))...)
		}
		if r.MaxRounds != 0 && (r.MaxRounds < d.Limits.MaxRounds.Min || r.MaxRounds > d.Limits.MaxRounds.Max) {
			bad(fmt.Sprintf("max_rounds %d is outside limits.max_rounds (%d to %d)", r.MaxRounds, d.Limits.MaxRounds.Min, d.Limits.MaxRounds.Max), at("max_rounds")...)
		}
		if r.TTLSeconds != 0 && (r.TTLSeconds < d.Limits.TTLSeconds.Min || r.TTLSeconds > d.Limits.TTLSeconds.Max) {
			bad(fmt.Sprintf("ttl_seconds %d is outside limits.ttl_seconds (%d to %d)", r.TTLSeconds, d.Limits.TTLSeconds.Min, d.Limits.TTLSeconds.Max), at("ttl_seconds")...)
		}
		for i, p := range r.Fields {
			if _, err := glob.Compile(p); err != nil {
				bad(fmt.Sprintf("field pattern %q is not a valid glob: %v", p, err), at("fields", fmt.Sprint(i))...)
			}
		}
		for i, p := range r.URLHosts {
			if _, err := glob.Compile(p, '.'); err != nil {
				bad(fmt.Sprintf("url_hosts pattern %q is not a valid glob: %v", p, err), at("url_hosts", fmt.Sprint(i))...)
			}
		}
		hasURL := false
		for _, k := range r.Kinds {
			hasURL = hasURL || k == "url"
		}
		if hasURL && len(r.URLHosts) == 0 {
			bad("kinds lists url but url_hosts is empty, so every URL would be refused", at("kinds")...)
		}
	}
	checkRule(d.Default, "default")
	for _, name := range slices.Sorted(maps.Keys(d.Tools)) {
		checkRule(d.Tools[name], "tools", name)
		if !IsGlob(name) {
			continue
		}
		g, err := glob.Compile(name)
		if err != nil {
			bad(fmt.Sprintf("tool pattern %q is not a valid glob: %v", name, err), "tools", name)
			continue
		}
		if len(known) > 0 && !matchesAny(g, known) {
			bad(fmt.Sprintf("tool glob %q matches no known tool (known: %s)", name, strings.Join(known, ", ")), "tools", name)
		}
	}
	return errs.err()
}

// IsGlob reports whether a rule name or pattern is a glob rather than an
// exact name (the same test as is_glob in tools.rego).
func IsGlob(p string) bool { return strings.ContainsAny(p, "*?[{") }

func matchesAny(g interface{ Match(string) bool }, names []string) bool {
	for _, n := range names {
		if g.Match(n) {
			return true
		}
	}
	return false
}

// Unmatched returns the rule names of d that match none of the known tool
// names: globs (an error for lint) and exact names (a warning).
func (d *Data) Unmatched(known []string) (globs, names []string) {
	set := map[string]bool{}
	for _, k := range known {
		set[k] = true
	}
	for _, name := range slices.Sorted(maps.Keys(d.Tools)) {
		if !IsGlob(name) {
			if !set[name] {
				names = append(names, name)
			}
			continue
		}
		g, err := glob.Compile(name)
		if err != nil || !matchesAny(g, known) {
			globs = append(globs, name)
		}
	}
	return globs, names
}
