package jsonpos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Index maps JSON pointers (RFC 6901) of a document to the lines
// where their values start, so errors and lint findings can name a line.
type Index struct {
	src   []byte
	at    map[string]int // pointer -> byte offset of the value
	nl    []int          // offsets of '\n'
	dupes []string       // pointers of keys given twice
}

// IndexJSON parses b (which must be one JSON value) and indexes it. A
// syntax error is a *SyntaxError with the line and column.
func Parse(b []byte) (*Index, error) {
	ix := &Index{src: b, at: map[string]int{}}
	for i, c := range b {
		if c == '\n' {
			ix.nl = append(ix.nl, i)
		}
	}
	if err := checkJSON(b); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := ix.lineCol(int(se.Offset) - 1)
			return nil, &SyntaxError{Line: line, Column: col, Msg: se.Error()}
		}
		return nil, &SyntaxError{Line: 1, Column: 1, Msg: err.Error()}
	}
	s := scanner{b: b, ix: ix}
	s.value("")
	return ix, nil
}

func checkJSON(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return err
	}
	if _, err := d.Token(); err == nil {
		return errors.New("more than one JSON value")
	}
	return nil
}

// SyntaxError is JSON that does not parse.
type SyntaxError struct {
	Line, Column int
	Msg          string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%d:%d: not valid JSON: %s", e.Line, e.Column, e.Msg)
}

// Line is the line (from 1) where the value at pointer starts, or of the
// nearest ancestor that exists; 1 for the root.
func (ix *Index) Line(pointer string) int {
	for {
		if off, ok := ix.at[pointer]; ok {
			l, _ := ix.lineCol(off)
			return l
		}
		i := strings.LastIndexByte(pointer, '/')
		if i < 0 {
			return 1
		}
		pointer = pointer[:i]
	}
}

// Duplicates lists the pointers of object members given more than once
// (encoding/json silently keeps the last).
func (ix *Index) Duplicates() []string { return ix.dupes }

func (ix *Index) lineCol(off int) (int, int) {
	if off < 0 {
		off = 0
	}
	line, start := 1, 0
	for _, n := range ix.nl {
		if n >= off {
			break
		}
		line++
		start = n + 1
	}
	return line, off - start + 1
}

// Pointer builds a JSON pointer from path tokens.
func Pointer(tokens ...string) string {
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteByte('/')
		sb.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return sb.String()
}

// scanner walks JSON already known to be valid.
type scanner struct {
	b  []byte
	i  int
	ix *Index
}

func (s *scanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *scanner) value(ptr string) {
	s.ws()
	if s.i >= len(s.b) {
		return
	}
	s.ix.at[ptr] = s.i
	switch s.b[s.i] {
	case '{':
		s.i++
		seen := map[string]bool{}
		for {
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] == '}' {
				s.i++
				return
			}
			if s.b[s.i] == ',' {
				s.i++
				continue
			}
			key := s.str()
			child := ptr + Pointer(key)
			if seen[key] {
				s.ix.dupes = append(s.ix.dupes, child)
			}
			seen[key] = true
			s.ws()
			s.i++ // ':'
			s.value(child)
		}
	case '[':
		s.i++
		for n := 0; ; {
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] == ']' {
				s.i++
				return
			}
			if s.b[s.i] == ',' {
				s.i++
				continue
			}
			s.value(ptr + "/" + strconv.Itoa(n))
			n++
		}
	case '"':
		s.str()
	default:
		for s.i < len(s.b) && !strings.ContainsRune(",}] \t\r\n", rune(s.b[s.i])) {
			s.i++
		}
	}
}

func (s *scanner) str() string {
	start := s.i
	s.i++
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			s.i += 2
			continue
		case '"':
			s.i++
			var out string
			_ = json.Unmarshal(s.b[start:s.i], &out)
			return out
		}
		s.i++
	}
	return ""
}
