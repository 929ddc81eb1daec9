// Command hostile is stdiotest's MCP server as a program: the mode is
// MRTR_TEST_CHILD (default ok).
package main

import (
	"os"

	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream/stdiotest"
)

func main() {
	mode := os.Getenv(stdiotest.Env)
	if mode == "" {
		mode = "ok"
	}
	stdiotest.Run(mode)
}
