package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	_ "github.com/open-policy-agent/opa/v1/features/wasm" // the Wasm engine, for the bundle
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/resolver"
	"github.com/open-policy-agent/opa/v1/resolver/wasm"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/mrtr-wasm/mrtr-wasm/host"
)

var update = flag.Bool("update", false, "rewrite the expected decisions of testdata/policy/cases.json")

const casesFile = "../testdata/policy/cases.json"

type casesDoc struct {
	Description string          `json:"description"`
	How         json.RawMessage `json:"how"`
	Cases       []policyCase    `json:"cases"`
}

type policyCase struct {
	Name       string          `json:"name"`
	Why        string          `json:"why"`
	Data       string          `json:"data"`
	Entrypoint string          `json:"entrypoint"`
	Input      json.RawMessage `json:"input"`
	Expect     json.RawMessage `json:"expect,omitempty"`
}

func (c policyCase) entry() string {
	if c.Entrypoint == "resume" {
		return ResumeEntrypoint
	}
	return AskEntrypoint
}

// TestSharedCases runs every shared case through the Go evaluator and
// through the Wasm bundle (OPA's Wasm SDK, on wazero), and checks both
// give exactly the expected decision document.
func TestSharedCases(t *testing.T) {
	raw, err := os.ReadFile(casesFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc casesDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) < 30 {
		t.Fatalf("only %d cases", len(doc.Cases))
	}
	ctx := context.Background()
	engines := map[string]*Engine{}
	wasmRes := map[string]*wasm.Resolver{}
	seen := map[string]bool{}
	for i, c := range doc.Cases {
		if seen[c.Name] {
			t.Fatalf("case name %q twice", c.Name)
		}
		seen[c.Name] = true
		e := engines[c.Data]
		if e == nil {
			e, err = Default(ctx, WithDataFile(filepath.Join("..", filepath.FromSlash(c.Data))))
			if err != nil {
				t.Fatal(err)
			}
			engines[c.Data] = e
			wasmRes[c.Data] = wasmResolver(t, e)
		}
		if *update {
			// Inputs as the guard core builds them (policy.input); a
			// case whose input the core would not build stays as written.
			if in, ok := coreInput(ctx, c); ok {
				doc.Cases[i].Input, c.Input = in, in
			}
		}
		// Go: the raw decision document, then the typed reading of it.
		cpl := e.cur.Load()
		pq := cpl.ask
		if c.entry() == ResumeEntrypoint {
			pq = cpl.resume
		}
		in, err := ast.ValueFromReader(bytes.NewReader(c.Input))
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		rs, err := pq.Eval(ctx, rego.EvalParsedInput(in))
		if err != nil || len(rs) != 1 {
			t.Fatalf("%s: Go evaluation: %v %v", c.Name, rs, err)
		}
		goDoc := canonical(t, rs[0].Expressions[0].Value)

		// Wasm: the bundle's policy.wasm with the same data.
		ref := ast.MustParseRef("data." + strings.ReplaceAll(c.entry(), "/", "."))
		res, err := wasmRes[c.Data].Eval(ctx, resolver.Input{Ref: ref, Input: ast.NewTerm(in)})
		if err != nil {
			t.Fatalf("%s: Wasm evaluation: %v", c.Name, err)
		}
		wasmJSON, err := ast.JSON(res.Value)
		if err != nil {
			t.Fatal(err)
		}
		wasmDoc := canonical(t, wasmJSON)

		if *update {
			doc.Cases[i].Expect = goDoc
		} else if !bytes.Equal(goDoc, canonical(t, c.Expect)) {
			t.Errorf("%s: Go decision\n got %s\nwant %s", c.Name, goDoc, canonical(t, c.Expect))
		}
		if !bytes.Equal(goDoc, wasmDoc) {
			t.Errorf("%s: Go and Wasm differ\n  Go %s\nWasm %s", c.Name, goDoc, wasmDoc)
		}
		// The typed decision agrees with the document.
		d, err := e.Eval(ctx, c.entry(), c.Input)
		if err != nil {
			t.Fatal(err)
		}
		var want struct {
			Allow bool `json:"allow"`
			Deny  []any
		}
		_ = json.Unmarshal(goDoc, &want)
		if d.Allow != want.Allow || len(d.Deny) != len(want.Deny) {
			t.Errorf("%s: typed decision %+v disagrees with %s", c.Name, d, goDoc)
		}
	}
	if *update {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(doc); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(casesFile, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The cases cover every decision code the policy can give.
	if !*update {
		codes := map[string]bool{}
		allows := 0
		for _, c := range doc.Cases {
			var d struct {
				Allow bool `json:"allow"`
				Deny  []struct {
					Code string `json:"code"`
				} `json:"deny"`
			}
			_ = json.Unmarshal(c.Expect, &d)
			if d.Allow {
				allows++
			}
			for _, x := range d.Deny {
				codes[x.Code] = true
			}
		}
		for _, code := range []string{"policy.field_not_allowed", "policy.class_forbidden", "policy.kind_not_allowed", "policy.url_host_not_allowed", "policy.url_path_not_allowed", "policy.url_invalid", "policy.input_malformed", "policy.undecided", "policy.ttl_out_of_bounds"} {
			if !codes[code] {
				t.Errorf("no case gives %s", code)
			}
		}
		if allows < 10 || allows > len(doc.Cases)-10 {
			t.Errorf("%d of %d cases allow: want a mix", allows, len(doc.Cases))
		}
	}
}

// wasmResolver builds the bundle as `mrtr-wasm policy build` does, reads
// it back and starts its policy.wasm with the bundle's data.
func wasmResolver(t *testing.T, e *Engine) *wasm.Resolver {
	t.Helper()
	var buf bytes.Buffer
	if err := e.WriteBundle(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.NewReader(&buf).Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(b.WasmModules) != 1 {
		t.Fatalf("%d Wasm modules in the bundle", len(b.WasmModules))
	}
	var eps []ast.Ref
	for _, r := range b.Manifest.WasmResolvers {
		eps = append(eps, ast.MustParseRef("data."+strings.ReplaceAll(r.Entrypoint, "/", ".")))
	}
	if len(eps) != 2 {
		t.Fatalf("entrypoints %v", b.Manifest.WasmResolvers)
	}
	r, err := wasm.New(eps, b.WasmModules[0].Raw, b.Data)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// canonical re-encodes JSON with sorted keys.
func canonical(t *testing.T, v any) []byte {
	t.Helper()
	if raw, ok := v.(json.RawMessage); ok {
		if err := util.UnmarshalJSON(raw, &v); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	_ = util.UnmarshalJSON(b, &x)
	b, _ = json.Marshal(x)
	return b
}

// coreInput rebuilds a case's input with the guard core's policy.input,
// which adds the core's verdict on each form field.
func coreInput(ctx context.Context, c policyCase) (json.RawMessage, bool) {
	var in struct {
		Principal  string `json:"principal"`
		Method     string `json:"method"`
		Target     string `json:"target"`
		TTLSeconds int    `json:"ttl_seconds"`
		MaxRounds  int    `json:"max_rounds"`
		Inputs     *map[string]struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		} `json:"inputs"`
	}
	if json.Unmarshal(c.Input, &in) != nil {
		return nil, false
	}
	ask := c.entry() == AskEntrypoint
	if ask && in.Inputs == nil {
		return nil, false
	}
	q := &host.PolicyQuery{Principal: in.Principal, Method: in.Method, Target: in.Target,
		TTL: time.Duration(in.TTLSeconds) * time.Second, MaxRounds: in.MaxRounds}
	if ask {
		for k, r := range *in.Inputs {
			q.Inputs = append(q.Inputs, host.InputRequest{Key: k, Method: r.Method, Params: r.Params})
		}
	}
	out, err := q.BuildInput(ctx, ask, true)
	return out, err == nil
}
