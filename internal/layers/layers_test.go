// Package layers holds only a test: the import rules between the
// project's layers, lowest first: the core (guest/core), the library
// (host, ledger, policy, policies, wasm), the MCP layer that serve and the
// proxy share, the two applications, then cmd.
package layers

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/mrtr-wasm/mrtr-wasm"

// A pattern is a package path inside the module; "x/..." is x and every
// package below it, and "..." is every package of the module.
var (
	core     = []string{"guest/..."}
	library  = []string{"host/...", "ledger/...", "policy/...", "policies/...", "wasm/..."}
	mcpLayer = []string{"internal/mcphttp/...", "internal/legacy/...", "internal/identity/...",
		"internal/observe/...", "internal/audit/...", "internal/ops/...", "internal/telemetry/..."}
	demo  = []string{"internal/server/...", "internal/crm/...", "internal/conformance/..."}
	proxy = []string{"internal/proxy/...", "internal/upstream/..."}
	// upper is what the library may not use: the MCP layer and the applications.
	upper = slices.Concat(mcpLayer, demo, proxy)
)

// rules: no package matching from may depend on one matching deny, in all
// its dependencies, or only in its own imports when direct is set.
var rules = []struct {
	why    string
	from   []string
	deny   []string
	direct bool
}{
	{"the core imports nothing of the project", core, []string{"..."}, false},
	{"the library stands below the MCP layer and the applications", library, upper, false},
	{"the MCP layer stands below the applications", mcpLayer, slices.Concat(demo, proxy), false},
	{"the demo server does not use the proxy", demo, proxy, false},
	{"the proxy does not use the demo server", proxy, demo, false},
	{"cmd goes through the library, not the core", []string{"cmd/..."}, core, true},
}

func matches(pkg string, patterns []string) bool {
	rel, ok := strings.CutPrefix(pkg, module+"/")
	if !ok {
		return false
	}
	for _, p := range patterns {
		if p == "..." {
			return true
		}
		if base, tree := strings.CutSuffix(p, "/..."); tree && (rel == base || strings.HasPrefix(rel, base+"/")) || rel == p {
			return true
		}
	}
	return false
}

// TestLayers reads the import graph once (go list -json -deps ./...) and
// checks every rule on every package of the module.
func TestLayers(t *testing.T) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", "-deps", module+"/...")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	type pkg struct {
		ImportPath    string
		Imports, Deps []string
	}
	var pkgs []pkg
	for d := json.NewDecoder(strings.NewReader(string(out))); ; {
		var p pkg
		if err := d.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	used := make([]bool, len(rules))
	for _, p := range pkgs {
		for i, r := range rules {
			if !matches(p.ImportPath, r.from) {
				continue
			}
			used[i] = true
			deps, verb := p.Deps, "depends on"
			if r.direct {
				deps, verb = p.Imports, "imports"
			}
			for _, d := range deps {
				if matches(d, r.deny) {
					t.Errorf("%s: %s %s %s", r.why, p.ImportPath, verb, d)
				}
			}
		}
	}
	// A rule whose packages moved away holds nothing: update its paths.
	for i, r := range rules {
		if !used[i] {
			t.Errorf("rule %q matches no package", r.why)
		}
	}
}
