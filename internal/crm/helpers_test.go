package crm

import (
	"context"
	"crypto/subtle"
	"testing"
)

// The tests read the tables directly: the store's API never hands a
// calendar key out, and nothing outside the tests counts rows.

func countRows(t *testing.T, s *Store, table string) int {
	t.Helper()
	var n int
	if err := s.db.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM `+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func hasCalendarKey(t *testing.T, s *Store, principal string) bool {
	t.Helper()
	var n int
	if err := s.db.QueryRowContext(context.Background(), s.q(`SELECT COUNT(*) FROM calendar_keys WHERE principal = ?`), principal).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// calendarKeyIs reports whether principal's stored key is key.
func calendarKeyIs(t *testing.T, s *Store, principal, key string) bool {
	t.Helper()
	var k string
	_ = s.db.QueryRowContext(context.Background(), s.q(`SELECT api_key FROM calendar_keys WHERE principal = ?`), principal).Scan(&k)
	return k != "" && subtle.ConstantTimeCompare([]byte(k), []byte(key)) == 1
}
