package ledger

import (
	"fmt"
	"log/slog"
	"strconv"

	"github.com/mrtr-wasm/mrtr-wasm/internal/redact"
)

// Claim and Entry hold an effect's result (what the tool did, often
// personal data) and a claim's token (which proves ownership); a
// Fingerprint digests the answers, which a guess could confirm. They print
// only status, state and sizes through fmt (every verb), String,
// GoString, slog and json.Marshal.

func (c Claim) safe() []slog.Attr {
	return []slog.Attr{slog.String("status", c.Status.String()), redact.Set("token", c.Token != ""), slog.Int("resultBytes", len(c.Result))}
}

// String shows the claim without its token or result.
func (c Claim) String() string { return redact.String("ledger.Claim", c.safe()) }

// GoString is String.
func (c Claim) GoString() string { return c.String() }

// Format prints String for every verb.
func (c Claim) Format(f fmt.State, _ rune) { redact.Format(f, c.String()) }

// LogValue logs the safe fields.
func (c Claim) LogValue() slog.Value { return slog.GroupValue(c.safe()...) }

// MarshalJSON is String as a JSON string.
func (c Claim) MarshalJSON() ([]byte, error) { return redact.JSON(c.String()) }

func (e Entry) safe() []slog.Attr {
	return []slog.Attr{slog.String("state", e.State.String()), slog.Int("resultBytes", len(e.Result))}
}

// String shows the entry without its fingerprint or result.
func (e Entry) String() string { return redact.String("ledger.Entry", e.safe()) }

// GoString is String.
func (e Entry) GoString() string { return e.String() }

// Format prints String for every verb.
func (e Entry) Format(f fmt.State, _ rune) { redact.Format(f, e.String()) }

// LogValue logs the safe fields.
func (e Entry) LogValue() slog.Value { return slog.GroupValue(e.safe()...) }

// MarshalJSON is String as a JSON string.
func (e Entry) MarshalJSON() ([]byte, error) { return redact.JSON(e.String()) }

// String does not show the digest.
func (fp Fingerprint) String() string { return "ledger.Fingerprint(redacted)" }

// GoString is String.
func (fp Fingerprint) GoString() string { return fp.String() }

// Format prints String for every verb.
func (fp Fingerprint) Format(f fmt.State, _ rune) { redact.Format(f, fp.String()) }

// LogValue logs String.
func (fp Fingerprint) LogValue() slog.Value { return slog.StringValue(fp.String()) }

// MarshalJSON is String as a JSON string.
func (fp Fingerprint) MarshalJSON() ([]byte, error) { return redact.JSON(fp.String()) }

func (s State) String() string {
	switch s {
	case Absent:
		return "absent"
	case Pending:
		return "pending"
	case Done:
		return "done"
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}
