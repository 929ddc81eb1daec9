package policy

import (
	"context"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/mrtr-wasm/mrtr-wasm/policies"
)

// TestResult is one Rego test's outcome.
type TestResult = tester.Result

// RunTests runs the Rego tests (test_* rules, usually in _test.rego
// files) of the policy directory, as `opa test` would. The policy is
// loaded as Load does first, so a policy that would not load fails the
// same way. Tests see the chosen data file at data.mrtr.config and every
// file data/NAME.json at data.mrtr.datasets.NAME.
func RunTests(ctx context.Context, dir string, opts ...Option) ([]*TestResult, error) {
	e, err := Load(ctx, dir, opts...)
	if err != nil {
		return nil, err
	}
	return e.runTests(ctx)
}

// RunDefaultTests runs the tests of the shipped policies.
func RunDefaultTests(ctx context.Context, opts ...Option) ([]*TestResult, error) {
	e, err := LoadFS(ctx, policies.FS, "policies", opts...)
	if err != nil {
		return nil, err
	}
	return e.runTests(ctx)
}

func (e *Engine) runTests(ctx context.Context) ([]*TestResult, error) {
	c := e.cur.Load()
	s := &e.src
	sources, err := s.regoFiles(true)
	if err != nil {
		return nil, err
	}
	modules, err := parseModules(sources)
	if err != nil {
		return nil, err
	}
	classes, err := knownClasses(ctx, c.compiler)
	if err != nil {
		return nil, LoadErrors{{File: s.dir, Msg: err.Error()}}
	}
	datasets := map[string]any{}
	names, _ := fs.Glob(s.fsys, "data/*.json")
	for _, n := range names {
		raw, err := fs.ReadFile(s.fsys, n)
		if err != nil {
			return nil, LoadErrors{{File: s.display(n), Msg: pathErr(err)}}
		}
		df, err := parseData(s.display(n), raw, classes, nil)
		if err != nil {
			return nil, err
		}
		datasets[strings.TrimSuffix(path.Base(n), ".json")] = df.doc
	}
	store := inmem.NewFromObjectWithOpts(map[string]any{"mrtr": map[string]any{"config": c.data.doc, "datasets": datasets}}, inmem.OptRoundTripOnWrite(false))
	runTests := func(filter string) ([]*TestResult, error) {
		r := tester.NewRunner().
			SetCompiler(ast.NewCompiler().WithCapabilities(capabilities()).WithDefaultRegoVersion(ast.RegoV1)).
			SetStore(store).
			SetModules(modules).
			SetDefaultRegoVersion(ast.RegoV1).
			SetTimeout(30 * time.Second)
		if filter != "" {
			r = r.Filter(filter).EnableTracing(true)
		}
		ch, err := r.RunTests(ctx, nil)
		if err != nil {
			return nil, regoErrors(err, s.dir)
		}
		var out []*TestResult
		for x := range ch {
			out = append(out, x)
		}
		return out, nil
	}
	out, err := runTests("")
	if err != nil {
		return nil, err
	}
	// Run the failures again with tracing, to say which line failed.
	var failed []string
	for _, r := range out {
		if r.Fail {
			failed = append(failed, regexp.QuoteMeta(r.Package+"."+r.Name)+"$")
		}
	}
	if len(failed) > 0 {
		traced, err := runTests(strings.Join(failed, "|"))
		if err != nil {
			return nil, err
		}
		byName := map[string]*TestResult{}
		for _, r := range traced {
			byName[r.Package+"."+r.Name] = r
		}
		for _, r := range out {
			if t := byName[r.Package+"."+r.Name]; r.Fail && t != nil {
				r.Trace, r.FailedAt = t.Trace, failedAt(t)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Location, out[j].Location
		if a == nil || b == nil || a.File != b.File {
			return out[i].Package+out[i].Name < out[j].Package+out[j].Name
		}
		return a.Row < b.Row
	})
	return out, nil
}

// failedAt is the last expression of the test's own file that failed.
func failedAt(r *TestResult) *ast.Expr {
	var last *ast.Expr
	for _, ev := range r.Trace {
		if ev.Op != topdown.FailOp {
			continue
		}
		e, ok := ev.Node.(*ast.Expr)
		if !ok || e.Location == nil || r.Location == nil || e.Location.File != r.Location.File || e.Location.Row < r.Location.Row {
			continue
		}
		last = e
	}
	return last
}
