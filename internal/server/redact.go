package server

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
	return fmt.Sprintf("server.Tokens(%d tokens, redacted)", len(t.byDigest))
}

// GoString is String.
func (t Tokens) GoString() string { return t.String() }

// Format prints String for every verb.
func (t Tokens) Format(f fmt.State, _ rune) { redact.Format(f, t.String()) }

// LogValue logs String.
func (t Tokens) LogValue() slog.Value { return slog.StringValue(t.String()) }

// MarshalJSON is String as a JSON string.
func (t Tokens) MarshalJSON() ([]byte, error) { return redact.JSON(t.String()) }
