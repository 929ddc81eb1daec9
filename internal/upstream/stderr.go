package upstream

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// What the proxy does with a stdio child's stderr (StdioConfig.Stderr,
// --upstream-stderr). A child that prints its requests would put users'
// answers and tokens into the proxy's log: "size" keeps only how long
// each line was, "drop" reads and forgets it.
const (
	StderrLog  = "log"  // each line, escaped (default)
	StderrSize = "size" // each line's length only
	StderrDrop = "drop" // nothing
)

// CheckStderrMode reports whether mode is one of the above ("" is log).
func CheckStderrMode(mode string) error {
	switch mode {
	case "", StderrLog, StderrSize, StderrDrop:
		return nil
	}
	return fmt.Errorf("--upstream-stderr must be %s, %s or %s", StderrLog, StderrSize, StderrDrop)
}

// escapeLog is b for a log line: printable text as it is; control
// characters (C0 with CR, LF and ESC, DEL, C1), other unprintable runes
// (bidi overrides, line separators) and bytes that are not UTF-8 as Go
// escapes, and a backslash doubled, so that no child can forge a log
// line, move a terminal's cursor or hide text.
func escapeLog(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&sb, `\x%02x`, b[i])
		case r == '\\':
			sb.WriteString(`\\`)
		case r == ' ' || unicode.IsPrint(r):
			sb.Write(b[i : i+n])
		default:
			// \t, \r, \n, \x1b, \u0085, \u202e, ...
			q := strconv.QuoteRuneToASCII(r)
			sb.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return sb.String()
}
