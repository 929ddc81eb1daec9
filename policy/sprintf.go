package policy

import (
	"fmt"
	"maps"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
)

// checkSprintf refuses sprintf calls other runtimes would format
// differently: Go's topdown and @open-policy-agent/opa-wasm (sprintf-js)
// agree on %s, %d and %v with plain values, not on flags, widths or other
// verbs. The format must be a constant so that this can be checked.
func checkSprintf(modules map[string]*ast.Module) error {
	var errs LoadErrors
	check := func(op *ast.Term, args []*ast.Term, loc *ast.Location) {
		if op.String() != ast.Sprintf.Name || len(args) == 0 {
			return
		}
		le := func(msg string) {
			e := &LoadError{Msg: msg}
			if loc != nil {
				e.File, e.Line = loc.File, loc.Row
			}
			errs = append(errs, e)
		}
		f, ok := args[0].Value.(ast.String)
		if !ok {
			le("sprintf needs a constant format string (so that Go and Wasm runtimes are sure to agree)")
			return
		}
		s := string(f)
		for i := 0; i < len(s); i++ {
			if s[i] != '%' {
				continue
			}
			if i+1 >= len(s) {
				le(fmt.Sprintf("sprintf format %q ends with %%", s))
				return
			}
			switch s[i+1] {
			case 's', 'd', 'v', '%':
				i++
			default:
				le(fmt.Sprintf("sprintf format %q uses %%%c: only %%s, %%d and %%v format alike in Go and in Wasm runtimes", s, s[i+1]))
				return
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(modules)) {
		m := modules[name]
		ast.WalkTerms(m, func(t *ast.Term) bool {
			if c, ok := t.Value.(ast.Call); ok && len(c) > 0 {
				loc := t.Location
				check(c[0], c[1:], loc)
			}
			return false
		})
		ast.WalkExprs(m, func(e *ast.Expr) bool {
			if e.IsCall() {
				terms := e.Terms.([]*ast.Term)
				check(terms[0], terms[1:], e.Location)
			}
			return false
		})
	}
	return errs.err()
}
