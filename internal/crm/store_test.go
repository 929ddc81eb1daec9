package crm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSQLiteStore(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "nested", "data")
	s, err := Open(ctx, "sqlite:"+dir+"/crm.db")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "crm.db")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the database file was not created private: %v %v", fi, err)
	}
	b, err := s.AddBooking(ctx, Booking{Principal: "alice", OperationID: "op1", Name: "A", Email: "a@example.com", Topic: "t"})
	if err != nil || b.ID == "" || b.CreatedAt.IsZero() {
		t.Fatalf("AddBooking: %+v %v", b, err)
	}
	if _, err := s.AddBooking(ctx, Booking{Principal: "alice", OperationID: "op1", Name: "A"}); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("a second booking for one operation: %v", err)
	}
	if bs, _ := s.ListBookings(ctx, "bob"); len(bs) != 0 {
		t.Fatalf("bob sees %v", bs)
	}
	s.Close()

	// Reopened: the booking survived.
	s, err = Open(ctx, "sqlite:"+dir+"/crm.db")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bs, err := s.ListBookings(ctx, "alice")
	if err != nil || len(bs) != 1 || bs[0].ID != b.ID || bs[0].Email != "a@example.com" {
		t.Fatalf("after reopen: %+v %v", bs, err)
	}

	id, err := s.NewConnect(ctx, "alice", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CompleteConnect(ctx, id, "bob", "k"); !errors.Is(err, ErrPrincipal) {
		t.Fatalf("bob completing alice's link: %v", err)
	}
	if ok, _ := s.HasCalendarKey(ctx, "bob"); ok {
		t.Fatal("a refused link stored a key")
	}
	if err := s.CompleteConnect(ctx, id+"x", "alice", "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("edited id: %v", err)
	}
	if err := s.CompleteConnect(ctx, id, "alice", "the-key"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.CalendarKeyMatches(ctx, "alice", "the-key"); !ok {
		t.Fatal("the key was not stored")
	}
	if err := s.CompleteConnect(ctx, id, "alice", "other"); !errors.Is(err, ErrUsed) {
		t.Fatalf("reuse: %v", err)
	}
	old, _ := s.NewConnect(ctx, "alice", time.Minute)
	s.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	if err := s.CompleteConnect(ctx, old, "alice", "k"); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired: %v", err)
	}
	if _, err := Open(ctx, "mysql://x"); err == nil {
		t.Fatal("an unknown setting opened")
	}
}
