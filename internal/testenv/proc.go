package testenv

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// RSS is a process's resident set in bytes, from /proc (Linux; 0 when it
// cannot be read).
func RSS(pid int) int64 {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(s), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
