package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
)

// Entrypoints of the policy, as OPA's Wasm target names them.
const (
	AskEntrypoint    = "mrtr/ask/decision"
	ResumeEntrypoint = "mrtr/resume/decision"
	// ApproveEntrypoint is optional: a policy without it never requires
	// approval.
	ApproveEntrypoint = "mrtr/approve/decision"
)

var (
	askRef     = ast.MustParseRef("data.mrtr.ask.decision")
	resumeRef  = ast.MustParseRef("data.mrtr.resume.decision")
	approveRef = ast.MustParseRef("data.mrtr.approve.decision")
	classesRef = ast.MustParseRef("data.mrtr.classify.classes")
)

// Option configures Load.
type Option func(*source)

// WithDataFile uses a data file on disk instead of one of the policy
// directory's data/ files.
func WithDataFile(path string) Option { return func(s *source) { s.dataFile = path } }

// WithData uses data/NAME.json of the policy directory (default "demo",
// or the only file in data/).
func WithData(name string) Option { return func(s *source) { s.dataName = name } }

// WithKnownTools names the server's tools: a tool glob in the data that
// matches none of them fails the load.
func WithKnownTools(names ...string) Option {
	return func(s *source) { s.known = append([]string(nil), names...) }
}

// source is where a policy comes from; Reload reads it again.
type source struct {
	fsys     fs.FS
	dir      string // for messages
	dataFile string
	dataName string
	known    []string
}

// compiled is one loaded policy: what a request evaluates, all from the
// same files.
type compiled struct {
	ask, resume rego.PreparedEvalQuery
	approve     *rego.PreparedEvalQuery // nil: the policy has no approve decision
	compiler    *ast.Compiler
	modules     map[string]*ast.Module // without tests
	sources     map[string][]byte
	data        *dataFile
	revision    string
	memo        *memo
	principal   bool // the policy reads input.principal
	scopes      bool // ... input.scopes
	claims      bool // ... input.claims
}

func (s *source) load(ctx context.Context) (*compiled, error) {
	sources, err := s.regoFiles(false)
	if err != nil {
		return nil, err
	}
	modules, err := parseModules(sources)
	if err != nil {
		return nil, err
	}
	if err := checkSprintf(modules); err != nil {
		return nil, err
	}
	comp, err := compileModules(modules)
	if err != nil {
		return nil, err
	}
	for _, ref := range []ast.Ref{askRef, resumeRef, classesRef} {
		if len(comp.GetRulesExact(ref)) == 0 {
			return nil, LoadErrors{{File: s.dir, Msg: fmt.Sprintf("no rule %v: the policy must define it", ref)}}
		}
	}
	classes, err := knownClasses(ctx, comp)
	if err != nil {
		return nil, LoadErrors{{File: s.dir, Msg: err.Error()}}
	}
	name, raw, err := s.readData()
	if err != nil {
		return nil, err
	}
	df, err := parseData(name, raw, classes, s.known)
	if err != nil {
		return nil, err
	}
	store := newStore(df.doc)
	c := &compiled{compiler: comp, modules: modules, sources: sources, data: df, memo: newMemo(), principal: reads(comp, "principal"), scopes: reads(comp, "scopes"), claims: reads(comp, "claims")}
	if c.ask, err = prepare(ctx, comp, store, askRef); err != nil {
		return nil, regoErrors(err, s.dir)
	}
	if c.resume, err = prepare(ctx, comp, store, resumeRef); err != nil {
		return nil, regoErrors(err, s.dir)
	}
	if len(comp.GetRulesExact(approveRef)) > 0 {
		pq, err := prepare(ctx, comp, store, approveRef)
		if err != nil {
			return nil, regoErrors(err, s.dir)
		}
		c.approve = &pq
	}
	c.revision = revision(sources, raw)
	return c, nil
}

func prepare(ctx context.Context, comp *ast.Compiler, store storage.Store, ref ast.Ref) (rego.PreparedEvalQuery, error) {
	return rego.New(
		rego.Compiler(comp),
		rego.Store(store),
		rego.ParsedQuery(ast.NewBody(ast.NewExpr(ast.NewTerm(ref)))),
	).PrepareForEval(ctx)
}

// regoFiles reads the .rego files of the policy directory (with or
// without the _test.rego files), keyed by the name shown in messages.
func (s *source) regoFiles(tests bool) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := fs.WalkDir(s.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".rego") {
			return nil
		}
		if !tests && strings.HasSuffix(p, "_test.rego") {
			return nil
		}
		b, err := fs.ReadFile(s.fsys, p)
		if err != nil {
			return err
		}
		out[s.display(p)] = b
		return nil
	})
	if err != nil {
		return nil, LoadErrors{{File: s.dir, Msg: err.Error()}}
	}
	if len(out) == 0 {
		return nil, LoadErrors{{File: s.dir, Msg: "no .rego files"}}
	}
	return out, nil
}

func (s *source) display(p string) string {
	if s.dir == "" {
		return p
	}
	return filepath.Join(s.dir, filepath.FromSlash(p))
}

// readData reads the data file: WithDataFile, else data/NAME.json, else
// data/demo.json, else the only .json in data/.
func (s *source) readData() (string, []byte, error) {
	if s.dataFile != "" {
		b, err := os.ReadFile(s.dataFile)
		if err != nil {
			return "", nil, LoadErrors{{File: s.dataFile, Msg: "cannot read the data file: " + pathErr(err)}}
		}
		return s.dataFile, b, nil
	}
	p := ""
	switch {
	case s.dataName != "":
		p = path.Join("data", s.dataName+".json")
	default:
		if _, err := fs.Stat(s.fsys, "data/demo.json"); err == nil {
			p = "data/demo.json"
			break
		}
		names, _ := fs.Glob(s.fsys, "data/*.json")
		if len(names) != 1 {
			return "", nil, LoadErrors{{File: s.display("data"), Msg: fmt.Sprintf("found %d data files and no data/demo.json: choose one (--data FILE)", len(names))}}
		}
		p = names[0]
	}
	b, err := fs.ReadFile(s.fsys, p)
	if err != nil {
		return "", nil, LoadErrors{{File: s.display(p), Msg: "cannot read the data file: " + pathErr(err)}}
	}
	return s.display(p), b, nil
}

func pathErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func parseModules(sources map[string][]byte) (map[string]*ast.Module, error) {
	modules := map[string]*ast.Module{}
	var errs LoadErrors
	for _, name := range slices.Sorted(maps.Keys(sources)) {
		m, err := ast.ParseModuleWithOpts(name, string(sources[name]), ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
		if err != nil {
			var le LoadErrors
			if errors.As(regoErrors(err, name), &le) {
				errs = append(errs, le...)
			}
			continue
		}
		modules[name] = m
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return modules, nil
}

func compileModules(modules map[string]*ast.Module) (*ast.Compiler, error) {
	c := ast.NewCompiler().
		WithCapabilities(capabilities()).
		WithStrict(true).
		WithDefaultRegoVersion(ast.RegoV1)
	c.Compile(modules)
	if c.Failed() {
		return nil, regoErrors(c.Errors, "")
	}
	return c, nil
}

func knownClasses(ctx context.Context, comp *ast.Compiler) (map[string]bool, error) {
	rs, err := rego.New(rego.Compiler(comp), rego.Store(inmem.New()), rego.ParsedQuery(ast.NewBody(ast.NewExpr(ast.NewTerm(classesRef))))).Eval(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	if len(rs) == 1 && len(rs[0].Expressions) == 1 {
		if list, ok := rs[0].Expressions[0].Value.([]any); ok {
			for _, v := range list {
				if s, ok := v.(string); ok {
					out[s] = true
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("data.mrtr.classify.classes must be a non-empty set of class names")
	}
	return out, nil
}

func revision(sources map[string][]byte, data []byte) string {
	h := sha256.New()
	names := slices.Sorted(maps.Keys(sources))
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(n), len(sources[n]))
		h.Write(sources[n])
	}
	fmt.Fprintf(h, "data\x00%d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func newStore(config any) storage.Store {
	return inmem.NewFromObjectWithOpts(map[string]any{"mrtr": map[string]any{"config": config}}, inmem.OptRoundTripOnWrite(false), inmem.OptReturnASTValuesOnRead(true))
}
