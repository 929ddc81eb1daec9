package core

// RFC 3339 times of the sealed state and the civil-date helpers, checked
// against package time.

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	minStateTime = -62167219200 // 0000-01-01T00:00:00Z
	maxStateTime = 253402300799 // 9999-12-31T23:59:59Z
)

func rfc3339(u int64) string { return time.Unix(u, 0).UTC().Format("2006-01-02T15:04:05Z") }

func unixOf(y int, m time.Month, d, h, mi, s int) int64 {
	return time.Date(y, m, d, h, mi, s, 0, time.UTC).Unix()
}

func TestAppendParseTime(t *testing.T) {
	instants := []int64{
		0, -1, 1, 59, 60, 86399, 86400, minStateTime, minStateTime + 1, maxStateTime, maxStateTime - 1,
		unixOf(2000, 2, 29, 0, 0, 0), unixOf(2000, 2, 29, 23, 59, 59), unixOf(2000, 3, 1, 0, 0, 0),
		unixOf(1900, 2, 28, 23, 59, 59), unixOf(1900, 3, 1, 0, 0, 0), unixOf(2100, 2, 28, 23, 59, 59),
		unixOf(2100, 3, 1, 0, 0, 0), unixOf(2400, 2, 29, 12, 0, 0), unixOf(2024, 2, 29, 1, 2, 3),
		unixOf(2023, 12, 31, 23, 59, 59), unixOf(2026, 7, 28, 0, 0, 0), unixOf(1, 1, 1, 0, 0, 0),
		unixOf(1600, 2, 29, 0, 0, 0), unixOf(1969, 12, 31, 0, 0, 0), unixOf(1972, 6, 30, 23, 59, 59),
		1<<31 - 1, 1 << 31, 1<<32 - 1, tNowMs / 1000,
	}
	r := rand.New(rand.NewPCG(3, 3339))
	for i := 0; i < 200000; i++ {
		instants = append(instants, minStateTime+r.Int64N(maxStateTime-minStateTime+1))
	}
	for _, u := range instants {
		want := rfc3339(u)
		got := appendTime([]byte("x"), u)
		if string(got) != `x"`+want+`"` {
			t.Fatalf("appendTime(%d) = %s, want %q", u, got, want)
		}
		back, ok := parseTime(want)
		if !ok || back != u {
			t.Fatalf("parseTime(%q) = %d, %v; want %d", want, back, ok, u)
		}
	}
}

func TestParseTimeRejects(t *testing.T) {
	good := "2026-07-28T14:30:05Z"
	if u, ok := parseTime(good); !ok || u != unixOf(2026, 7, 28, 14, 30, 5) {
		t.Fatalf("parseTime(%q) = %d, %v", good, u, ok)
	}
	bad := []string{
		"", "Z", "2026-07-28", "2026-07-28T14:30Z", "2026-07-28T14:30:05", "2026-07-28T14:30:05ZZ",
		"2026-07-28 14:30:05Z", "2026-07-28t14:30:05Z", "2026-07-28T14:30:05z", "2026-07-28T14:30:05+00:00",
		"2026-07-28T14:30:05.5Z", "2026-07-28T14:30:5Z", "2026-7-28T14:30:05Z", "2026-07-8T14:30:05Z",
		"026-07-28T14:30:05Z", "+2026-07-28T14:30:05Z", "-2026-07-28T14:30:05Z", "20260-07-28T14:30:0Z",
		"2026/07/28T14:30:05Z", "2026-07-28T14-30-05Z", "2026-07-28T14.30.05Z", " 2026-07-28T14:30:05Z",
		"2026-00-28T14:30:05Z", "2026-13-28T14:30:05Z", "2026-07-00T14:30:05Z", "2026-07-32T14:30:05Z",
		"2026-07-28T24:00:00Z", "2026-07-28T14:60:05Z", "2026-07-28T14:30:60Z", "2026-07-28T99:99:99Z",
		"2O26-07-28T14:30:05Z", "2026-0a-28T14:30:05Z", "2026-07-2bT14:30:05Z", "2026-07-28T1x:30:05Z",
		"2026-07-28T14:3 :05Z", "2026-07-28T14:30:0 Z", "2026-07-28T14:30:-5Z", "２026-07-28T14:30:05Z",
		"2026-07-28T14:30:05\x00", "\"2026-07-28T14:30:05Z\"",
		// Days past the end of their month are not RFC 3339 dates (5.7).
		"2026-02-29T00:00:00Z", "2100-02-29T00:00:00Z", "2026-02-30T00:00:00Z", "2026-04-31T00:00:00Z",
		"2026-06-31T00:00:00Z", "2026-09-31T00:00:00Z", "2026-11-31T00:00:00Z", "1900-02-29T00:00:00Z",
	}
	for _, s := range bad {
		if u, ok := parseTime(s); ok {
			t.Errorf("parseTime(%q) accepted: %d (%s)", s, u, rfc3339(u))
		}
	}
	// Every one-byte change of a valid time either is refused or is the
	// time package's reading of the same text.
	for i := 0; i < len(good); i++ {
		for c := 0; c < 256; c++ {
			b := []byte(good)
			b[i] = byte(c)
			s := string(b)
			u, ok := parseTime(s)
			ref, err := time.Parse("2006-01-02T15:04:05Z", s)
			if ok && (err != nil || ref.Unix() != u) {
				t.Errorf("parseTime(%q) = %d, time.Parse: %v %v", s, u, ref, err)
			}
		}
	}
}

// TestCivilDays runs every day from year -1000 to 10999 through both
// directions and the time package.
func TestCivilDays(t *testing.T) {
	first := time.Date(-1000, 1, 1, 0, 0, 0, 0, time.UTC).Unix() / 86400
	last := time.Date(10999, 12, 31, 0, 0, 0, 0, time.UTC).Unix() / 86400
	for z := first; z <= last; z++ {
		y, m, d := civilFromDays(z)
		ty, tm, td := time.Unix(z*86400, 0).UTC().Date()
		if y != ty || m != int(tm) || d != td {
			t.Fatalf("civilFromDays(%d) = %d-%d-%d, want %d-%d-%d", z, y, m, d, ty, tm, td)
		}
		if back := daysFromCivil(y, m, d); back != z {
			t.Fatalf("daysFromCivil(%d, %d, %d) = %d, want %d", y, m, d, back, z)
		}
	}
	if daysFromCivil(1970, 1, 1) != 0 || daysFromCivil(2000, 3, 1) != 11017 || daysFromCivil(0, 3, 1) != -719468 {
		t.Fatal("epoch anchors moved")
	}
}

// TestStateNearYear9999: the clock may read up to 9999-12-31T23:59:59Z
// (maxNowMs). A state sealed then must either be refused at ask or open;
// it must not be sealed with an expiry no one can read.
func TestStateNearYear9999(t *testing.T) {
	g := newConfigured(t, "")
	for _, c := range []struct {
		name  string
		nowMs int64
	}{
		{"expiry exactly at the end of 9999", maxNowMs - DefaultTTLSeconds*1000},
		{"clock at the end of 9999", maxNowMs},
		{"clock one minute before", maxNowMs - 60_000},
	} {
		out := run(g, tcall{op: "ask", label: c.name, nowMs: c.nowMs, rest: `,"inputRequests":{"c":` + tConfirmForm + `}`}.env())
		resp := checkResponse(t, out)
		if resp["ok"] != true {
			continue // refusing is fine
		}
		o := run(g, tcall{op: "open", nowMs: c.nowMs, rest: `,"requestState":` + tJSON(tokenOf(t, resp))}.env())
		if or := checkResponse(t, o); or["ok"] != true {
			t.Errorf("%s (now %d): ask sealed a state that never opens: %s", c.name, c.nowMs, o)
		}
	}
	mustFail(t, g, tcall{op: "ask", nowMs: maxNowMs + 1, rest: `,"inputRequests":{}`}.env(), CodeRequestNoEntropy)
	if rfc3339(maxNowMs/1000+MaxTTLSeconds) != "9999-12-31T23:59:59Z" {
		t.Fatal("maxNowMs moved: " + strconv.FormatInt(maxNowMs, 10))
	}
}

// TestRandReading: "rand" is 48 bytes of canonical base64url without
// padding, or the call fails with CodeRequestNoEntropy; a valid one seals.
func TestRandReading(t *testing.T) {
	g := newConfigured(t, "")
	good := strings.Repeat("A", 63) + "B"
	body := `{"v":1,"op":"ask","now":` + strconv.FormatInt(tNowMs, 10) + `,"principal":"alice","method":"tools/call","target":"t","arguments":{},"capabilities":` + tCaps + `,"inputRequests":{"c":` + tConfirmForm + `},"rand":`
	if resp := checkResponse(t, run(g, body+tJSON(good)+`}`)); resp["ok"] != true {
		t.Fatalf("a valid rand was refused: %v", resp)
	}
	for _, r := range []string{
		strings.Repeat("A", 63),        // 47 bytes and a fraction
		strings.Repeat("A", 65),        // no length of base64 is 1 mod 4
		strings.Repeat("A", 62) + "==", // padding
		strings.Repeat("A", 63) + "+",  // standard, not URL, alphabet
		strings.Repeat("A", 63) + "/",
		strings.Repeat("A", 31) + "\n" + strings.Repeat("A", 32), // the standard decoder skips newlines
		strings.Repeat("A", 62) + "\u00e9",                       // 64 bytes, not the alphabet
		"",
	} {
		mustFail(t, g, body+tJSON(r)+`}`, CodeRequestNoEntropy)
	}
	mustFail(t, g, body+`48}`, CodeRequestNoEntropy)
}
