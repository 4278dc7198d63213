package k8slease

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
)

// The API server's container and every elector's make the certificate
// from the run's secret apart: it must come out the same each time, be a
// key pair Go's TLS serves, verify for the host against itself, and differ
// from one run's secret to another's.
func TestServingCertFromSecret(t *testing.T) {
	cert, key, err := ServingCert("S3CRET", "apiserver")
	if err != nil {
		t.Fatal(err)
	}
	again, againKey, err := ServingCert("S3CRET", "apiserver")
	if err != nil || !bytes.Equal(cert, again) || !bytes.Equal(key, againKey) {
		t.Fatalf("two certificates from one secret differ (err %v)", err)
	}
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		t.Fatalf("not a key pair TLS serves: %v", err)
	}
	block, _ := pem.Decode(cert)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(c)
	for _, host := range []string{"apiserver", "127.0.0.1"} {
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
			t.Errorf("does not verify for %s against itself: %v", host, err)
		}
	}
	other, _, err := ServingCert("OTHER", "apiserver")
	if err != nil || bytes.Equal(cert, other) {
		t.Errorf("another run's secret gives the same certificate (err %v)", err)
	}
	if _, _, err := ServingCert("", "apiserver"); err == nil {
		t.Error("a certificate from no secret")
	}
}

// The token file's one line gives the electors' token, derived from the
// secret, to the one user, in the group that may do anything.
func TestTokenLine(t *testing.T) {
	tok := Token("S3CRET")
	if len(tok) != 32 || tok == Token("OTHER") || strings.Contains(tok, "S3CRET") {
		t.Errorf("token %q", tok)
	}
	if got, want := TokenLine("S3CRET"), tok+",splitbrain,splitbrain,system:masters\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestTokenOf(t *testing.T) {
	if TokenOf(0) != 1 || TokenOf(41) != 42 {
		t.Errorf("TokenOf(0) = %d, TokenOf(41) = %d", TokenOf(0), TokenOf(41))
	}
}
