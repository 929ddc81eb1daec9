package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/internal/identity"
	"github.com/mrtr-wasm/mrtr-wasm/internal/legacy"
	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
)

// ServeStdio serves a local client on newline-delimited JSON-RPC over in
// and out until in ends or ctx does, in the era its first message picks
// (legacy.StdioEra, as serve --stdio): an initialize of an earlier
// revision gets a session of the legacy front, as on HTTP; anything else
// is served as 2026-07-28. The caller is identity.Anonymous (the user who
// started the process); requests are served concurrently.
func (p *Proxy) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	rest, old, err := legacy.StdioEra(in, mcphttp.MaxBody)
	if err != nil {
		return err
	}
	if old {
		return p.legacy.srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(rest), Writer: nopWriteCloser{out}})
	}
	return p.serveStdio(ctx, rest, out)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// serveStdio serves a 2026-07-28 client: each line a request, answered
// through the guarded path.
func (p *Proxy) serveStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	var mu sync.Mutex
	write := func(raw []byte) error {
		mu.Lock()
		defer mu.Unlock()
		if _, err := out.Write(append(raw[:len(raw):len(raw)], '\n')); err != nil {
			return err
		}
		return nil
	}
	br := bufio.NewReaderSize(in, 64<<10)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		line, err := readMessage(br, mcphttp.MaxBody)
		if len(line) > 0 {
			m, jerr := mcphttp.ParseMessage(line)
			if jerr == nil && m.IsCall() {
				jerr = mcphttp.CheckMeta(m.Method, true, m.Meta())
			}
			switch {
			case jerr != nil:
				var id []byte
				if m != nil {
					id = m.ID
				}
				if werr := write(mcphttp.ErrorResponse(id, jerr)); werr != nil {
					return werr
				}
			case !m.IsCall():
				if serr := p.cfg.Upstream.Send(upstream.WithPrincipal(ctx, identity.Anonymous), line, nil); serr != nil {
					p.log.Warn("upstream did not take a notification", "method", m.Method, "error", errText(serr))
				}
			default:
				h := http.Header{"Mcp-Method": {mcphttp.EncodeHeader(m.Method)}, "Mcp-Protocol-Version": {mcphttp.ProtocolVersion}}
				if canAsk(m.Method) {
					h.Set("Mcp-Name", mcphttp.EncodeHeader(m.Target()))
				}
				wg.Add(1)
				go func(m *mcphttp.Message, body []byte) {
					defer wg.Done()
					p.Handle(withWire(ctx, wire{protocolVersion: mcphttp.ProtocolVersion, transport: "pipe"}), m, body, h, identity.Anonymous, p.conforming(m, &lineSink{write: write}))
				}(m, line)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			if errors.Is(err, errTooLong) {
				if werr := write(mcphttp.ErrorResponse(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "message over 1 MiB"})); werr != nil {
					return werr
				}
				continue
			}
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

type lineSink struct{ write func([]byte) error }

func (s *lineSink) Start()                  {}
func (s *lineSink) Notify(raw []byte) error { return s.write(raw) }
func (s *lineSink) Final(raw []byte)        { _ = s.write(raw) }

var errTooLong = errors.New("message too long")

// readMessage reads one line; a line over max is skipped whole and
// reported as errTooLong.
func readMessage(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	long := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(line)+len(chunk) > max+1 {
				long, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if long {
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errTooLong
		}
		if len(line) > 0 && line[len(line)-1] == '\n' {
			line = line[:len(line)-1]
		}
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		return line, err
	}
}
