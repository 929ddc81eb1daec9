package proxy_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLeanDependencies: the proxy, a plug-in for a server someone else
// wrote, links neither the demo server nor its CRM and SQL drivers.
// html/template is refused where the project imports it (the demo's
// /connect page): the OTLP exporter brings it in through grpc and
// x/net/trace, which is not ours to cut.
func TestLeanDependencies(t *testing.T) {
	const mod = "github.com/mrtr-wasm/mrtr-wasm/"
	for _, pkg := range []string{mod + "internal/proxy", mod + "internal/upstream"} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		if !strings.Contains(string(out), mod+"internal/rawjson ") {
			t.Fatalf("go list -deps %s printed no real dependency list:\n%s", pkg, out)
		}
		for line := range strings.Lines(string(out)) {
			f := strings.Fields(line)
			for _, heavy := range []string{mod + "internal/server", mod + "internal/crm", "github.com/jackc/pgx", "modernc.org/sqlite"} {
				if f[0] == heavy || strings.HasPrefix(f[0], heavy+"/") {
					t.Errorf("%s depends on %s", pkg, f[0])
				}
			}
			if strings.HasPrefix(f[0], mod) && slices.Contains(f[1:], "html/template") {
				t.Errorf("%s depends on %s, which imports html/template", pkg, f[0])
			}
		}
	}
}
