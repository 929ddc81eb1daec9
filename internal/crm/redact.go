package crm

import (
	"fmt"
	"log/slog"

	"github.com/mrtr-wasm/mrtr-wasm/internal/redact"
)

// A ConnectSession's id is the /connect link, a capability; a Booking
// holds a person's name and email. They print only ids, times and flags
// through fmt (every verb), String, GoString and slog. A Booking's JSON is
// what the tool returns and stays whole; a ConnectSession's is redacted.

func (c ConnectSession) safe() []slog.Attr {
	return []slog.Attr{redact.Set("id", c.ID != ""), slog.String("principal", c.Principal),
		slog.Time("expiresAt", c.ExpiresAt), slog.Bool("completed", c.Completed)}
}

// String shows the session without its id.
func (c ConnectSession) String() string { return redact.String("crm.ConnectSession", c.safe()) }

// GoString is String.
func (c ConnectSession) GoString() string { return c.String() }

// Format prints String for every verb.
func (c ConnectSession) Format(f fmt.State, _ rune) { redact.Format(f, c.String()) }

// LogValue logs the safe fields.
func (c ConnectSession) LogValue() slog.Value { return slog.GroupValue(c.safe()...) }

// MarshalJSON is String as a JSON string.
func (c ConnectSession) MarshalJSON() ([]byte, error) { return redact.JSON(c.String()) }

func (b Booking) safe() []slog.Attr {
	return []slog.Attr{slog.String("id", b.ID), slog.String("principal", b.Principal),
		slog.String("operationId", b.OperationID), slog.Time("createdAt", b.CreatedAt)}
}

// String shows the booking without the person's details.
func (b Booking) String() string { return redact.String("crm.Booking", b.safe()) }

// GoString is String.
func (b Booking) GoString() string { return b.String() }

// Format prints String for every verb.
func (b Booking) Format(f fmt.State, _ rune) { redact.Format(f, b.String()) }

// LogValue logs the safe fields.
func (b Booking) LogValue() slog.Value { return slog.GroupValue(b.safe()...) }
