package upstream

// The stdio multiplexer rewrites a few things in the bytes it relays (the
// id, the progress token, _meta.traceparent; on the way back, a
// subscription notification's subscriptionId) and leaves every other byte
// as it was: it splices values in place instead of decoding and
// re-encoding the message.

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"github.com/mrtr-wasm/mrtr-wasm/internal/rawjson"
)

// edit replaces b[start:end] with repl.
type edit struct {
	start, end int
	repl       []byte
}

// splice applies non-overlapping edits to b, into a new slice.
func splice(b []byte, edits ...edit) []byte {
	slices.SortFunc(edits, func(a, b edit) int { return a.start - b.start })
	n := len(b)
	for _, e := range edits {
		n += len(e.repl) - (e.end - e.start)
	}
	out := make([]byte, 0, n)
	at := 0
	for _, e := range edits {
		out = append(out, b[at:e.start]...)
		out = append(out, e.repl...)
		at = e.end
	}
	return append(out, b[at:]...)
}

// setMember returns obj (a JSON object) with key set to val: the value
// replaced in place when the key is there, else the member added first.
func setMember(obj []byte, key string, val []byte) ([]byte, error) {
	ms, err := rawjson.Object(obj)
	if err != nil {
		return nil, err
	}
	if m, ok := rawjson.Find(ms, key); ok {
		return splice(obj, edit{m.Start, m.End, val}), nil
	}
	ins := make([]byte, 0, len(key)+len(val)+4)
	ins = append(strconv.AppendQuote(ins, key), ':')
	ins = append(append(ins, val...), ',')
	if len(ms) == 0 {
		ins = ins[:len(ins)-1]
	}
	open := bytes.IndexByte(obj, '{') + 1
	return splice(obj, edit{open, open, ins}), nil
}

// appendJSONString appends s as a JSON string (strconv.AppendQuote is Go
// syntax, not JSON, for bytes that are not printable ASCII).
func appendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s)
	return append(dst, b...)
}

// withID returns m's bytes with its id replaced by id (m has one). A
// transport that multiplexes the calls of several clients on one channel
// (a stdio child, a legacy HTTP session) sends each request under an id of
// its own, since two clients may use the same one, and gives the response
// the client's back.
func withID(m *rpcMessage, id []byte) []byte {
	return splice(m.raw, edit{m.id.Start, m.id.End, id})
}

// rpcMessage is a JSON-RPC message with the spans of its members.
type rpcMessage struct {
	raw     []byte
	members []rawjson.Member
	method  string
	hasID   bool
	id      rawjson.Member
}

func (m *rpcMessage) get(key string) (rawjson.Member, bool) { return rawjson.Find(m.members, key) }

func (m *rpcMessage) value(mb rawjson.Member) []byte { return m.raw[mb.Start:mb.End] }

func (m *rpcMessage) isResponse() bool {
	_, r := m.get("result")
	_, e := m.get("error")
	return m.method == "" && m.hasID && r != e
}

// parseMessage reads the envelope of one JSON-RPC message (one line).
func parseMessage(line []byte) (*rpcMessage, error) {
	if !json.Valid(line) {
		return nil, errors.New("not valid JSON")
	}
	ms, err := rawjson.Object(line)
	if err != nil {
		return nil, err
	}
	m := &rpcMessage{raw: line, members: ms}
	if v, ok := m.get("jsonrpc"); !ok || string(m.value(v)) != `"2.0"` {
		return nil, errors.New(`no "jsonrpc": "2.0"`)
	}
	if v, ok := m.get("method"); ok {
		raw := m.value(v)
		if raw[0] != '"' || len(raw) < 3 {
			return nil, errors.New("method is not a string")
		}
		if bytes.IndexByte(raw, '\\') < 0 {
			m.method = string(raw[1 : len(raw)-1])
		} else if json.Unmarshal(raw, &m.method) != nil {
			return nil, errors.New("method is not a string")
		}
	}
	if v, ok := m.get("id"); ok && string(m.value(v)) != "null" {
		if c := line[v.Start]; c != '"' && c != '-' && (c < '0' || c > '9') {
			return nil, errors.New("id is neither a string nor a number")
		}
		m.hasID, m.id = true, v
	}
	if m.method == "" && !m.isResponse() {
		return nil, errors.New("neither a request, a notification nor a response")
	}
	return m, nil
}

// idInPrefix finds a numeric top-level id in the readable start of a
// message that is too long or not valid JSON, so that the call it answers
// fails at once instead of waiting for its timeout.
func idInPrefix(prefix []byte) (int64, bool) {
	ms, _ := rawjson.Object(prefix)
	if m, ok := rawjson.Find(ms, "id"); ok {
		n, err := strconv.ParseInt(string(prefix[m.Start:m.End]), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// metaOf returns the span of params._meta and of params in a message, when
// they are objects.
func paramsObject(m *rpcMessage) (rawjson.Member, []rawjson.Member, bool, error) {
	p, ok := m.get("params")
	if !ok {
		return rawjson.Member{}, nil, false, nil
	}
	ms, err := rawjson.Object(m.value(p))
	if err != nil {
		return p, nil, true, errors.New("params is not an object")
	}
	return p, ms, true, nil
}

// modernMetaPrefix starts the _meta keys of the 2026-07-28 revision
// (protocol version, client capabilities and info, log level).
const modernMetaPrefix = "io.modelcontextprotocol/"

// withoutModernMeta drops the 2026-07-28 _meta keys from a request for an
// upstream of an earlier revision: they mean nothing in its revision, and
// a server that speaks both eras takes a request that carries them for a
// 2026-07-28 one. Every other byte stays as it was; a message it cannot
// read is returned as it is.
func withoutModernMeta(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(modernMetaPrefix)) {
		return msg
	}
	m, err := parseMessage(msg)
	if err != nil {
		return msg
	}
	p, pms, ok, err := paramsObject(m)
	if !ok || err != nil {
		return msg
	}
	ms, ok := rawjson.Find(pms, "_meta")
	if !ok {
		return msg
	}
	meta := m.raw[p.Start+ms.Start : p.Start+ms.End]
	members, err := rawjson.Object(meta)
	if err != nil {
		return msg
	}
	kept := make([]byte, 0, len(meta))
	kept = append(kept, '{')
	for _, mb := range members {
		if bytes.HasPrefix(mb.Key, []byte(modernMetaPrefix)) {
			continue
		}
		if len(kept) > 1 {
			kept = append(kept, ',')
		}
		k, _ := json.Marshal(string(mb.Key))
		kept = append(append(kept, k...), ':')
		kept = append(kept, meta[mb.Start:mb.End]...)
	}
	kept = append(kept, '}')
	return splice(m.raw, edit{p.Start + ms.Start, p.Start + ms.End, kept})
}
