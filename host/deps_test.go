package host_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLeanDependencies: a program that imports host links neither SQLite
// nor Redis; they come with ledger/sqlite and ledger/redis, when asked.
func TestLeanDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/mrtr-wasm/mrtr-wasm/host").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || !strings.Contains(string(out), "github.com/tetratelabs/wazero") {
		t.Fatalf("go list -deps printed no real dependency list:\n%s", out)
	}
	for _, d := range deps {
		for _, heavy := range []string{"modernc.org/sqlite", "github.com/redis/go-redis", "github.com/jackc/pgx", "/ledger/sqlite", "/ledger/redis"} {
			if strings.Contains(d, heavy) {
				t.Errorf("host depends on %s", d)
			}
		}
	}
}
