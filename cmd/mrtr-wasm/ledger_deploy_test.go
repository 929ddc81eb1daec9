package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/ledger/ledgertest"
)

// --ledger takes a Redis Cluster and a Sentinel set (private servers,
// never the shared Redis), logging in as an ACL user whose password is in
// a file: the proxy is ready once the ledger answers, not ready with a
// wrong password, and never shows the password.
func TestProxyLedgerDeployments(t *testing.T) {
	const secret = "fleet-s3cret"
	acl := []string{"--user", "app", "on", ">" + secret, "~*", "+@all"}
	cluster := ledgertest.StartCluster(t, 3, 1, 5*time.Second, acl...)
	sentinels := ledgertest.StartSentinels(t, 1, 3, 5*time.Second, acl...)
	dir := t.TempDir()
	right, wrong := filepath.Join(dir, "right"), filepath.Join(dir, "wrong")
	if err := os.WriteFile(right, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrong, []byte("not-"+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, setting := range map[string]string{
		"cluster":  strings.Replace(cluster.URL(), "redis+cluster://", "redis+cluster://app@", 1) + "&password_file=",
		"sentinel": sentinels.URL() + "&username=app&password_file=",
	} {
		t.Run(name, func(t *testing.T) {
			for _, pw := range []string{right, wrong} {
				base, logs := startProxy(t, "--ledger", setting+pw, "--", hostileChild(t))
				want := http.StatusOK
				if pw == wrong {
					want = http.StatusServiceUnavailable
				}
				var code int
				var body string
				for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
					code, body = getStatus(t, base+"/readyz")
					if code == want || time.Now().After(deadline) {
						break
					}
				}
				if code != want {
					t.Fatalf("%s: readyz %d %s, want %d\n%s", filepath.Base(pw), code, body, want, logs)
				}
				if strings.Contains(body+logs.String(), secret) {
					t.Fatalf("the password reached readyz or the log:\n%s\n%s", body, logs)
				}
			}
		})
	}
}
