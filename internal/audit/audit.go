package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Record is one event. Kind names it (form.asked, form.answered,
// approval.asked, approval.granted, approval.rejected, executed, expired,
// audit.started, audit.rotated); the other fields are set where they
// apply. Nothing in a Record may hold an answer's or an argument's value:
// ArgumentsDigest and AnswersDigest are the guard core's digests.
type Record struct {
	Kind            string  `json:"kind"`
	Principal       string  `json:"principal,omitempty"`
	Method          string  `json:"method,omitempty"`
	Target          string  `json:"target,omitempty"`
	Round           int     `json:"round,omitempty"`
	Fields          []Field `json:"fields,omitempty"`
	Outcome         string  `json:"outcome,omitempty"` // accept, decline, cancel, invalid, refused
	Rule            string  `json:"rule,omitempty"`    // the rule or code that refused
	By              string  `json:"by,omitempty"`      // who decided an approval
	OperationID     string  `json:"operationId,omitempty"`
	ArgumentsDigest string  `json:"argumentsDigest,omitempty"`
	AnswersDigest   string  `json:"answersDigest,omitempty"`
	PolicyVersion   string  `json:"policyVersion,omitempty"`
}

// Field is a form field as the audit log knows it: its name and kind.
type Field struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// line is a Record as written: its place in the chain first, its own
// hash last (SHA-256 of the line without it), so that an edited record
// is named itself, not only by the one after it.
type line struct {
	Seq  uint64 `json:"seq"`
	Time string `json:"time"`
	Prev string `json:"prev"`
	Record
	Hash string `json:"hash,omitempty"`
}

// seal sets ln.Hash and returns the line's bytes.
func (ln *line) seal() ([]byte, error) {
	ln.Hash = ""
	b, err := json.Marshal(ln)
	if err != nil {
		return nil, err
	}
	ln.Hash = digest(b)
	return json.Marshal(ln)
}

// genesis is the prev of the first record of a new chain.
var genesis = hex.EncodeToString(make([]byte, sha256.Size))

// Log appends records to a file. It is safe for concurrent use.
type Log struct {
	mu       sync.Mutex
	path     string
	f        *os.File
	size     int64
	maxBytes int64
	seq      uint64
	prev     string
	now      func() time.Time
}

// DefaultMaxBytes is the size at which a file is rotated.
const DefaultMaxBytes = 64 << 20

// Open opens (or creates, mode 0600) the audit file at path and continues
// its chain; maxBytes 0 means DefaultMaxBytes.
func Open(path string, maxBytes int64) (*Log, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	l := &Log{path: path, maxBytes: maxBytes, now: time.Now}
	if err := l.open(); err != nil {
		return nil, err
	}
	if l.seq == 0 {
		if err := l.appendLocked(Record{Kind: "audit.started"}); err != nil {
			l.f.Close()
			return nil, err
		}
	}
	return l, nil
}

// open opens l.path and reads where its chain stands.
func (l *Log) open() error {
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("audit: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit: %w", err)
	}
	l.f, l.size, l.seq, l.prev = f, st.Size(), 0, genesis
	if st.Size() == 0 {
		return nil
	}
	last, err := lastLine(f, st.Size())
	if err != nil {
		f.Close()
		return fmt.Errorf("audit: %s: %w", l.path, err)
	}
	var ln line
	if err := json.Unmarshal(last, &ln); err != nil || ln.Seq == 0 {
		f.Close()
		return fmt.Errorf("audit: %s does not end with an audit record: run mrtr-wasm audit verify on it", l.path)
	}
	l.seq, l.prev = ln.Seq, ln.Hash
	return nil
}

// lastLine returns the last line of f (without its newline).
func lastLine(f *os.File, size int64) ([]byte, error) {
	const chunk = 64 << 10
	var tail []byte
	for off := size; off > 0; {
		n := min(int64(chunk), off)
		off -= n
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		tail = append(buf, tail...)
		t := bytes.TrimRight(tail, "\n")
		if i := bytes.LastIndexByte(t, '\n'); i >= 0 {
			return t[i+1:], nil
		}
		if off == 0 {
			return t, nil
		}
	}
	return nil, errors.New("empty")
}

// Append writes r as the next record of the chain.
func (l *Log) Append(r Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.size >= l.maxBytes {
		if err := l.rotateLocked(); err != nil {
			return err
		}
	}
	return l.appendLocked(r)
}

func (l *Log) appendLocked(r Record) error {
	ln := line{Seq: l.seq + 1, Time: l.now().UTC().Format(time.RFC3339Nano), Prev: l.prev, Record: r}
	b, err := ln.seal()
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	// One write per record: a crash leaves a whole line or a cut one,
	// which Verify names.
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	l.seq, l.prev, l.size = ln.Seq, ln.Hash, l.size+int64(len(b))+1
	return nil
}

// rotateLocked renames the file and begins the next one with the last
// hash of this one.
func (l *Log) rotateLocked() error {
	old := l.path + "." + l.now().UTC().Format("20060102T150405.000000000Z")
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if err := os.Rename(l.path, old); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	seq, prev := l.seq, l.prev
	if err := l.open(); err != nil {
		return err
	}
	l.seq, l.prev = seq, prev
	return l.appendLocked(Record{Kind: "audit.rotated", Target: filepath.Base(old)})
}

// Head is the hash of the last record written and its number: what to
// keep outside the machine to detect records cut from the end.
func (l *Log) Head() (seq uint64, hash string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq, l.prev
}

// Close closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

func digest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Break is where a chain does not hold: the file and line (from 1) of
// the first record that does not fit, and why.
type Break struct {
	File   string
	Line   int
	Reason string
}

func (b *Break) Error() string {
	return fmt.Sprintf("%s:%d: %s", b.File, b.Line, b.Reason)
}

// Summary is what Verify read: records, and the head of the chain.
type Summary struct {
	Records int
	Seq     uint64
	Head    string
}

// Verify checks the files, oldest first, as one chain. The first record
// of the first file must begin a chain (prev all zeros) unless it is a
// rotation's, whose predecessor may be gone. It returns the first Break,
// if any.
func Verify(files ...string) (Summary, error) {
	var s Summary
	prev, seq := "", uint64(0)
	for fi, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return s, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		n := 0
		for sc.Scan() {
			n++
			b := sc.Bytes()
			var ln line
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&ln); err != nil || ln.Seq == 0 || ln.Kind == "" {
				f.Close()
				return s, &Break{name, n, "not an audit record"}
			}
			hash := ln.Hash
			if canon, _ := ln.seal(); ln.Hash != hash || !bytes.Equal(canon, b) {
				f.Close()
				return s, &Break{name, n, "the record was changed (its hash does not match it)"}
			}
			first := fi == 0 && n == 1
			switch {
			case first && ln.Prev != genesis && ln.Kind != "audit.rotated":
				f.Close()
				return s, &Break{name, n, "the chain does not begin here: records before it are missing"}
			case !first && ln.Prev != prev:
				f.Close()
				return s, &Break{name, n, "prev is not the hash of the record before it (a record was changed, removed or moved)"}
			case !first && ln.Seq != seq+1:
				f.Close()
				return s, &Break{name, n, "seq " + strconv.FormatUint(ln.Seq, 10) + " does not follow " + strconv.FormatUint(seq, 10)}
			}
			prev, seq = ln.Hash, ln.Seq
			s.Records++
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return s, &Break{name, n + 1, "unreadable: " + err.Error()}
		}
	}
	s.Seq, s.Head = seq, prev
	return s, nil
}
