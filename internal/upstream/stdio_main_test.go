package upstream

import (
	"os"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream/stdiotest"
)

// The test binary doubles as the stdio child (stdiotest.Main).
func TestMain(m *testing.M) {
	stdiotest.Main()
	os.Exit(m.Run())
}
