package identity

import (
	"fmt"
	"log/slog"

	"github.com/mrtr-wasm/mrtr-wasm/internal/redact"
)

// Tokens prints how many tokens it holds, never their digests (a digest
// confirms a guessed token), through fmt (every verb), String, GoString,
// slog and json.Marshal.

// String shows the number of tokens.
func (t Tokens) String() string {
	return fmt.Sprintf("identity.Tokens(%d tokens, redacted)", len(t.byDigest))
}

// GoString is String.
func (t Tokens) GoString() string { return t.String() }

// Format prints String for every verb.
func (t Tokens) Format(f fmt.State, _ rune) { redact.Format(f, t.String()) }

// LogValue logs String.
func (t Tokens) LogValue() slog.Value { return slog.StringValue(t.String()) }

// MarshalJSON is String as a JSON string.
func (t Tokens) MarshalJSON() ([]byte, error) { return redact.JSON(t.String()) }

// A Login holds the OAuth client's secret: it prints only its client id,
// through fmt (every verb), String, GoString, slog and json.Marshal.

// String names the client.
func (l *Login) String() string { return "identity.Login(client " + l.clientID + ", secret redacted)" }

// GoString is String.
func (l *Login) GoString() string { return l.String() }

// Format prints String for every verb.
func (l *Login) Format(f fmt.State, _ rune) { redact.Format(f, l.String()) }

// LogValue logs String.
func (l *Login) LogValue() slog.Value { return slog.StringValue(l.String()) }

// MarshalJSON is String as a JSON string.
func (l *Login) MarshalJSON() ([]byte, error) { return redact.JSON(l.String()) }
