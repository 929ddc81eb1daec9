package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/jsonpos"
	"github.com/mrtr-wasm/mrtr-wasm/policy"
)

const lintUsage = `Usage: mrtr-wasm lint [flags] FILE...

Lints what tools may ask: the guard core's checks (flat form schemas, no
secrets in forms, URL mode done right) and the deployment's policy (which
fields, classes, kinds, hosts, rounds and TTL each tool may use).

Each FILE is one of (detected from its members):
  - tool declarations: {"tools": [{"name": "...", "inputRequests": {KEY: {"method", "params"}}}]}
    (testdata/tools/README.md documents the format)
  - one input request: {"method": "elicitation/create", "params": {...}}
  - bare elicitation/create params: {"mode", "message", "requestedSchema" or "url"}
  - a bare requestedSchema: {"type": "object", "properties": {...}}

Flags:
`

// finding is one lint result, in every output format.
type finding struct {
	File     string `json:"file"`
	Line     int    `json:"line,omitempty"`
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Tool     string `json:"tool"`
	Key      string `json:"key,omitempty"`
	Field    string `json:"field"`
	Message  string `json:"message"`
	// Rule is the policy data rule behind a policy finding.
	Rule string `json:"rule,omitempty"`
}

// lintFile is one input file, read and understood before anything runs.
type lintFile struct {
	path  string
	ix    *jsonpos.Index
	tools []lintTool
	decl  bool // a tool declaration file
}

// lintTool is a tool and what it may ask, with JSON pointers for lines.
type lintTool struct {
	name   string
	ptr    string // the tool entry
	inputs []lintInput
}

type lintInput struct {
	req       host.InputRequest
	ptr       string // the input request
	schemaPtr string // its requestedSchema, for field lines
	schema    bool   // a bare requestedSchema: LintSchema
}

func runLint(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mrtr-wasm lint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "text", "output `format`: text, json or sarif")
	engine := fs.String("engine", "wasm", "run the guard core as `wasm` (guard.wasm, the default) or native")
	dir := fs.String("policy", "", "the policy `DIR` (default: the shipped policies)")
	data := fs.String("data", "", "the policy data `FILE` (default DIR/data/demo.json)")
	tool := fs.String("tool", "", "the tool `NAME` for files that declare no tool (default: none, so the policy's default rule applies)")
	noPolicy := fs.Bool("no-policy", false, "run only the guard core's checks")
	fs.Usage = func() {
		fmt.Fprint(stderr, lintUsage)
		fs.PrintDefaults()
	}
	files, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "mrtr-wasm lint: no FILE given")
		fs.Usage()
		return exitUsage
	}
	if *format != "text" && *format != "json" && *format != "sarif" {
		fmt.Fprintf(stderr, "mrtr-wasm lint: --format must be text, json or sarif, not %q\n", *format)
		return exitUsage
	}
	var eng host.Engine
	switch *engine {
	case "wasm":
		eng = host.EngineWasm
	case "native":
		eng = host.EngineNative
	default:
		fmt.Fprintf(stderr, "mrtr-wasm lint: --engine must be wasm or native, not %q\n", *engine)
		return exitUsage
	}

	// Read and understand every file first: one unusable file and nothing
	// is linted.
	var inputs []*lintFile
	bad := false
	for _, p := range files {
		lf, err := readLintFile(p, *tool)
		if err != nil {
			fmt.Fprintln(stderr, err.Error())
			bad = true
			continue
		}
		inputs = append(inputs, lf)
	}
	if bad {
		return exitUsage
	}
	if err := duplicateTools(inputs); err != nil {
		fmt.Fprintln(stderr, err.Error())
		return exitUsage
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var pol *policy.Engine
	var known []string
	for _, lf := range inputs {
		if lf.decl {
			for _, t := range lf.tools {
				known = append(known, t.name)
			}
		}
	}
	if !*noPolicy {
		var opts []policy.Option
		if len(known) > 0 {
			// A tool glob that matches none of the declared tools fails
			// here, with the data file and line.
			opts = append(opts, policy.WithKnownTools(known...))
		}
		pol, err = loadPolicy(ctx, *dir, *data, opts...)
		if err != nil {
			printLoadError(stderr, err)
			return exitUsage
		}
	}
	g, err := host.New(ctx, host.WithKeys(host.NewKeyring()), host.WithEngine(eng), host.WithPoolSize(1))
	if err != nil {
		fmt.Fprintln(stderr, "mrtr-wasm lint: starting the guard: "+err.Error())
		return exitUsage
	}
	defer func() { _ = g.Close(context.Background()) }()

	var out []finding
	for _, lf := range inputs {
		fs, err := lintOne(ctx, g, pol, lf)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", lf.path, err)
			return exitUsage
		}
		out = append(out, fs...)
	}
	if pol != nil && len(known) > 0 {
		out = append(out, unusedRules(pol, known)...)
	}
	sortFindings(out)

	switch *format {
	case "json":
		err = writeJSON(stdout, out)
	case "sarif":
		err = writeSARIF(stdout, out)
	default:
		writeText(stdout, stderr, out)
	}
	if err != nil {
		fmt.Fprintln(stderr, "mrtr-wasm lint: "+err.Error())
		return exitUsage
	}
	for _, f := range out {
		if f.Severity == host.SeverityError {
			return exitFindings
		}
	}
	return exitOK
}

// readLintFile reads one FILE and works out what it holds.
func readLintFile(p, tool string) (*lintFile, error) {
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read: %v", p, unwrapPath(err))
	}
	ix, err := jsonpos.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s:%v", p, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("%s:1: expected a JSON object (tool declarations, an input request, elicitation params or a requestedSchema)", p)
	}
	lf := &lintFile{path: p, ix: ix}
	fail := func(ptr, format string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", p, ix.Line(ptr), fmt.Sprintf(format, a...))
	}
	_, hasTools := top["tools"]
	_, hasMethod := top["method"]
	_, hasSchema := top["requestedSchema"]
	_, hasURL := top["url"]
	_, hasMode := top["mode"]
	_, hasProps := top["properties"]
	switch {
	case hasTools:
		lf.decl = true
		var decl struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(raw, &decl); err != nil {
			return nil, fail("/tools", "tools must be an array of tools")
		}
		seen := map[string]bool{}
		for i, rawTool := range decl.Tools {
			tp := jsonpos.Pointer("tools", fmt.Sprint(i))
			var t struct {
				Name          *string                    `json:"name"`
				InputRequests map[string]json.RawMessage `json:"inputRequests"`
			}
			if err := json.Unmarshal(rawTool, &t); err != nil {
				return nil, fail(tp, "a tool must be an object with a name and inputRequests (an object of input requests by key)")
			}
			if t.Name == nil || *t.Name == "" {
				return nil, fail(tp, "a tool needs a name")
			}
			if seen[*t.Name] {
				return nil, fail(tp+"/name", "tool %q is declared twice", *t.Name)
			}
			seen[*t.Name] = true
			lt := lintTool{name: *t.Name, ptr: tp}
			for _, key := range slices.Sorted(maps.Keys(t.InputRequests)) {
				ptr := tp + jsonpos.Pointer("inputRequests", key)
				in, err := inputRequest(key, t.InputRequests[key])
				if err != nil {
					return nil, fail(ptr, "input request %q: %v", key, err)
				}
				lt.inputs = append(lt.inputs, lintInput{req: in, ptr: ptr, schemaPtr: ptr + "/params/requestedSchema"})
			}
			lf.tools = append(lf.tools, lt)
		}
	case hasMethod:
		in, err := inputRequest("request", raw)
		if err != nil {
			return nil, fail("", "%v", err)
		}
		lf.tools = []lintTool{{name: tool, inputs: []lintInput{{req: in, schemaPtr: "/params/requestedSchema"}}}}
	case hasSchema || hasURL || hasMode:
		lf.tools = []lintTool{{name: tool, inputs: []lintInput{{
			req:       host.InputRequest{Key: "params", Method: "elicitation/create", Params: raw},
			schemaPtr: "/requestedSchema",
		}}}}
	case hasProps || string(top["type"]) == `"object"`:
		params, err := json.Marshal(map[string]any{"mode": "form", "message": "(lint)", "requestedSchema": json.RawMessage(raw)})
		if err != nil {
			return nil, fail("", "%v", err)
		}
		lf.tools = []lintTool{{name: tool, inputs: []lintInput{{
			req:    host.InputRequest{Key: "schema", Method: "elicitation/create", Params: params},
			schema: true,
		}}}}
	default:
		return nil, fail("", "not tool declarations (\"tools\"), an input request (\"method\"), elicitation params (\"requestedSchema\", \"url\" or \"mode\") or a requestedSchema (\"type\": \"object\", \"properties\")")
	}
	return lf, nil
}

func inputRequest(key string, raw json.RawMessage) (host.InputRequest, error) {
	var r struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.Method == "" {
		return host.InputRequest{}, errors.New(`an input request is {"method": "...", "params": {...}}`)
	}
	return host.InputRequest{Key: key, Method: r.Method, Params: r.Params}, nil
}

func duplicateTools(files []*lintFile) error {
	where := map[string]string{}
	for _, lf := range files {
		if !lf.decl {
			continue
		}
		for _, t := range lf.tools {
			if other, ok := where[t.name]; ok {
				return fmt.Errorf("%s:%d: tool %q is also declared in %s", lf.path, lf.ix.Line(t.ptr), t.name, other)
			}
			where[t.name] = lf.path
		}
	}
	return nil
}

// lintOne runs the core's lint on every input request of a file, then the
// policy on each tool's requests together (as one ask would send them).
func lintOne(ctx context.Context, g *host.Guard, pol *policy.Engine, lf *lintFile) ([]finding, error) {
	var out []finding
	for _, t := range lf.tools {
		var reqs []host.InputRequest
		for _, in := range t.inputs {
			var fs []host.Finding
			var err error
			if in.schema {
				var p struct {
					S json.RawMessage `json:"requestedSchema"`
				}
				_ = json.Unmarshal(in.req.Params, &p)
				fs, err = g.LintSchema(ctx, p.S)
			} else {
				fs, err = g.Lint(ctx, in.req)
			}
			if err != nil {
				if e, ok := host.AsError(err); ok {
					// The request itself is not JSON the core accepts.
					out = append(out, finding{File: lf.path, Line: lf.ix.Line(in.ptr), Code: e.Code, Severity: host.SeverityError, Tool: t.name, Key: keyOf(lf, in), Message: e.Message})
					continue
				}
				return nil, err
			}
			for _, f := range fs {
				out = append(out, finding{
					File: lf.path, Line: lf.ix.Line(fieldPtr(in, f.Field)), Code: f.Code, Severity: f.Severity,
					Tool: t.name, Key: keyOf(lf, in), Field: f.Field, Message: f.Message,
				})
			}
			reqs = append(reqs, in.req)
		}
		if pol == nil {
			continue
		}
		d, err := pol.Ask(ctx, &host.PolicyQuery{
			Principal: "mrtr-wasm-lint", Method: "tools/call", Target: t.name, Inputs: reqs,
			TTL: host.DefaultTTL, MaxRounds: host.DefaultMaxRounds,
		})
		if err != nil {
			return nil, err
		}
		if d.Allow {
			continue
		}
		for _, x := range d.Denials {
			in := inputByKey(t, x.Key)
			line := lf.ix.Line(t.ptr)
			key := x.Key
			if in != nil {
				ptr := fieldPtr(*in, x.Field)
				if strings.HasPrefix(x.Code, "policy.url_") {
					ptr = in.ptr + "/params/url"
				}
				line = lf.ix.Line(ptr)
				key = keyOf(lf, *in)
			}
			out = append(out, finding{
				File: lf.path, Line: line, Code: x.Code, Severity: host.SeverityError,
				Tool: t.name, Key: key, Field: x.Field, Message: x.Message, Rule: x.Rule,
			})
		}
	}
	return out, nil
}

func keyOf(lf *lintFile, in lintInput) string {
	if lf.decl {
		return in.req.Key
	}
	return ""
}

func inputByKey(t lintTool, key string) *lintInput {
	for i := range t.inputs {
		if t.inputs[i].req.Key == key {
			return &t.inputs[i]
		}
	}
	return nil
}

func fieldPtr(in lintInput, field string) string {
	if field == "" {
		return in.ptr
	}
	return in.schemaPtr + jsonpos.Pointer("properties", field)
}

// unusedRules warns about exact rule names in the data that no declared
// tool has (globs that match nothing already failed the load).
func unusedRules(pol *policy.Engine, known []string) []finding {
	_, names := pol.Data().Unmatched(known)
	file := pol.Info().DataFile
	var out []finding
	for _, n := range names {
		out = append(out, finding{
			File: file, Line: pol.DataLine(jsonpos.Pointer("tools", n)), Code: "policy.rule_unused", Severity: host.SeverityWarning,
			Tool: n, Message: fmt.Sprintf("the data has a rule for %q, but no linted file declares that tool", n), Rule: "tools." + n,
		})
	}
	return out
}

func sortFindings(fs []finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Code < b.Code
	})
}

func writeText(stdout, stderr io.Writer, fs []finding) {
	errs, warns := 0, 0
	for _, f := range fs {
		if f.Severity == host.SeverityError {
			errs++
		} else {
			warns++
		}
		var where []string
		if f.Tool != "" {
			where = append(where, "tool "+f.Tool)
		}
		if f.Key != "" {
			where = append(where, "input "+f.Key)
		}
		if f.Field != "" {
			where = append(where, "field "+f.Field)
		}
		ctx := ""
		if len(where) > 0 {
			ctx = " [" + strings.Join(where, ", ") + "]"
		}
		loc := f.File
		if f.Line > 0 {
			loc = fmt.Sprintf("%s:%d", f.File, f.Line)
		}
		fmt.Fprintf(stdout, "%s: %s %s%s: %s\n", loc, f.Severity, f.Code, ctx, f.Message)
	}
	if len(fs) > 0 {
		fmt.Fprintf(stderr, "%d error(s), %d warning(s)\n", errs, warns)
	}
}

func writeJSON(w io.Writer, fs []finding) error {
	if fs == nil {
		fs = []finding{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		Findings []finding `json:"findings"`
	}{fs}); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// artifactURI is how SARIF names a file: a relative path with forward
// slashes (resolved from the repository root by code scanning), or a
// file URI for an absolute path.
func artifactURI(p string) string {
	if filepath.IsAbs(p) {
		return "file://" + filepath.ToSlash(p)
	}
	return filepath.ToSlash(filepath.Clean(p))
}
