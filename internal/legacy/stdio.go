package legacy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
)

// StdioEra reads a stdio client's first message (one line, at most max
// bytes, as an HTTP body would be) and tells its era: an initialize of an
// earlier revision opens a legacy session; anything else is 2026-07-28.
// rest reads the whole stream again, the first message included. serve
// and the proxy pick their stdio front door with it, as Router picks the
// HTTP one.
func StdioEra(in io.Reader, max int) (rest io.Reader, isLegacy bool, err error) {
	br := bufio.NewReaderSize(in, 64<<10)
	var first []byte
	for {
		chunk, err := br.ReadSlice('\n')
		first = append(first, chunk...)
		if len(first) > max {
			// A line without end is not buffered.
			return nil, false, fmt.Errorf("stdio: the first message is over %d bytes", max)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && (len(first) == 0 || !errors.Is(err, io.EOF)) {
			return nil, false, err
		}
		break
	}
	var p struct {
		Method string `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	_ = json.Unmarshal(first, &p)
	return io.MultiReader(bytes.NewReader(first), br), p.Method == "initialize" && p.Params.ProtocolVersion < mcphttp.ProtocolVersion, nil
}
