package policy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/compile"
)

// WriteBundle compiles the policy in use to OPA's Wasm target and writes
// an OPA bundle (tar.gz): /policy.wasm with the entrypoints
// mrtr/ask/decision and mrtr/resume/decision, /data.json with the data
// file at mrtr.config, and /.manifest. @open-policy-agent/opa-wasm loads
// policy.wasm and takes data.json as its data.
func (e *Engine) WriteBundle(ctx context.Context, w io.Writer) error {
	c := e.cur.Load()
	b := &bundle.Bundle{
		Manifest: bundle.Manifest{Roots: &[]string{"mrtr"}, Revision: c.revision},
		Data:     map[string]any{"mrtr": map[string]any{"config": c.data.doc}},
	}
	for _, name := range slices.Sorted(maps.Keys(c.modules)) {
		p := "/" + filepath.ToSlash(filepath.Base(name))
		b.Modules = append(b.Modules, bundle.ModuleFile{URL: p, Path: p, Raw: c.sources[name], Parsed: c.modules[name]})
	}
	var buf bytes.Buffer
	comp := compile.New().
		WithTarget(compile.TargetWasm).
		WithEntrypoints(AskEntrypoint, ResumeEntrypoint).
		WithRegoVersion(ast.RegoV1).
		WithCapabilities(wasmCapabilities()).
		WithBundle(b).
		WithOutput(&buf)
	if err := comp.Build(ctx); err != nil {
		return fmt.Errorf("policy: compiling to Wasm: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// wasmCapabilities are capabilities() with the Wasm ABI versions the
// compiler builds for left open.
func wasmCapabilities() *ast.Capabilities {
	c := capabilities()
	c.WasmABIVersions = nil
	return c
}
