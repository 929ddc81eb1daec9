package policy

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// LoadError is a policy or data file that cannot be used, with the line
// where it goes wrong when there is one.
type LoadError struct {
	File string
	Line int // 0 when the problem is the whole file
	Msg  string
}

func (e *LoadError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	if e.File == "" {
		return e.Msg
	}
	return e.File + ": " + e.Msg
}

// LoadErrors are every problem found in one load. Nothing of a load that
// fails is used.
type LoadErrors []*LoadError

func (es LoadErrors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

func (es LoadErrors) err() error {
	if len(es) == 0 {
		return nil
	}
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].File != es[j].File {
			return es[i].File < es[j].File
		}
		return es[i].Line < es[j].Line
	})
	return es
}

// AsLoadErrors returns the problems of a failed load, if err is one.
func AsLoadErrors(err error) (LoadErrors, bool) {
	var es LoadErrors
	if errors.As(err, &es) {
		return es, true
	}
	var e *LoadError
	if errors.As(err, &e) {
		return LoadErrors{e}, true
	}
	return nil, false
}

// regoErrors turns OPA's errors (parse, compile, type) into LoadErrors
// with file and line.
func regoErrors(err error, dir string) error {
	var es ast.Errors
	if !errors.As(err, &es) {
		var e *ast.Error
		if errors.As(err, &e) {
			es = ast.Errors{e}
		} else {
			return LoadErrors{{File: dir, Msg: err.Error()}}
		}
	}
	out := make(LoadErrors, 0, len(es))
	for _, e := range es {
		le := &LoadError{File: dir, Msg: e.Code + ": " + e.Message}
		if e.Location != nil {
			if e.Location.File != "" {
				le.File = e.Location.File
			}
			le.Line = e.Location.Row
		}
		out = append(out, le)
	}
	return out.err()
}
