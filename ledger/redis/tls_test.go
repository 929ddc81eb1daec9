package redis

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/ledgertest"
)

// TestTLSAndACL: rediss:// to a private redis-server that speaks TLS
// with a certificate from a private authority (tls_ca_file), as an ACL
// user whose password comes from password_file.
func TestTLSAndACL(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := writeTestPKI(t, dir)
	pw, wrong := filepath.Join(dir, "pw"), filepath.Join(dir, "wrong")
	if err := os.WriteFile(pw, []byte("acl-s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrong, []byte("not-it\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tlsPort := strconv.Itoa(ledgertest.FreePort(t))
	ledgertest.StartRedis(t, "--tls-port", tlsPort, "--tls-cert-file", cert, "--tls-key-file", key,
		"--tls-ca-cert-file", ca, "--tls-auth-clients", "no", "--user", "app", "on", ">acl-s3cret", "~*", "+@all")
	base := "rediss://app@127.0.0.1:" + tlsPort + "/0?tls_ca_file=" + ca + "&password_file="
	ctx := context.Background()
	claim := func(setting string) error {
		l, err := ledger.Open(ctx, setting)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err = l.Claim(cctx, ledgertest.NewOp(t), ledgertest.FP("a"), time.Minute)
		return err
	}
	if err := claim(base + pw); err != nil {
		t.Fatalf("TLS with the private CA, ACL user from a file: %v", err)
	}
	l, err := ledger.Open(ctx, base+pw)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if who, err := l.(*redisLedger).c.Do(ctx, "ACL", "WHOAMI").Text(); err != nil || who != "app" {
		t.Fatalf("logged in as %q (%v), want the ACL user app", who, err)
	}
	for name, s := range map[string]string{
		"wrong password": base + wrong,
		"system roots":   "rediss://app@127.0.0.1:" + tlsPort + "/0?password_file=" + pw,
		"plain to TLS":   "redis://app@127.0.0.1:" + tlsPort + "/0?password_file=" + pw,
	} {
		err := claim(s)
		if err == nil {
			t.Fatalf("%s: the claim succeeded", name)
		}
		if strings.Contains(err.Error(), "acl-s3cret") {
			t.Fatalf("%s: the error shows the password", name)
		}
	}
}

// writeTestPKI writes a CA certificate and a server certificate for
// 127.0.0.1 signed by it, and the server's key, as PEM files.
func writeTestPKI(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", srvDER), write("server.key", "EC PRIVATE KEY", keyDER)
}
