// Package k8slease holds what the Kubernetes Lease target's API server and electors share: the credentials both make from the run's secret, the server's flags, and the fencing token read from a Lease.
package k8slease

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Port is where the API server serves, over TLS.
const Port = 6443

// The API server's files, in its container (a kill keeps them).
const (
	Dir        = "/data/kube"
	CertFile   = Dir + "/tls.crt"
	KeyFile    = Dir + "/tls.key"
	TokenFile  = Dir + "/tokens.csv"
	SAKeyFile  = Dir + "/sa.key"
	ServerPath = "/usr/local/bin/kube-apiserver"
)

// User is the one user the API server knows: the electors, in the group
// that may do anything.
const User = "splitbrain"

// Token is the electors' bearer token, made from the run's secret
// (SPLITBRAIN_SECRET): the server's token file and the electors hold the
// same one without any file passing between them.
func Token(secret string) string {
	return derive(secret, "token")[:32]
}

// TokenLine is the line of the server's --token-auth-file that makes
// Token User's, in system:masters.
func TokenLine(secret string) string {
	return fmt.Sprintf("%s,%s,%s,system:masters\n", Token(secret), User, User)
}

func derive(secret, purpose string) string {
	h := sha256.Sum256([]byte("splitbrain k8s-lease " + purpose + "\x00" + secret))
	return hex.EncodeToString(h[:])
}

// ServingCert is the API server's certificate and key for host, made
// from the run's secret alone: an Ed25519 key from a seed and a
// self-signed certificate with nothing random in it, so that an elector
// computes the very certificate the server presents and trusts it alone
// (its CA is the certificate itself), and no certificate passes between
// containers or is committed. The secret is new each run: so are they.
func ServingCert(secret, host string) (certPEM, keyPEM []byte, err error) {
	if secret == "" {
		return nil, nil, errors.New("no secret: SPLITBRAIN_SECRET is not set")
	}
	seed := sha256.Sum256([]byte(derive(secret, "tls")))
	key := ed25519.NewKeyFromSeed(seed[:])
	// Fixed dates and serial: the certificate must come out the same in
	// every container of the run.
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: host},
		DNSNames:              []string{host, "localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), nil
}

// NewServiceAccountKey is a key to sign service-account tokens with,
// which the API server will not start without. Nothing here uses such
// tokens: it is made at random, in the server's container alone.
func NewServiceAccountKey() ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// ServerArgs are the API server's flags: only what Lease objects need.
// etcd is its etcd's client URLs, comma-separated.
func ServerArgs(etcd string) []string {
	return []string{
		"--etcd-servers=" + etcd,
		fmt.Sprintf("--secure-port=%d", Port),
		"--tls-cert-file=" + CertFile,
		"--tls-private-key-file=" + KeyFile,
		// The electors' token, and no one else: no anonymous requests, no
		// client certificates, and every request of the one user allowed.
		"--token-auth-file=" + TokenFile,
		"--anonymous-auth=false",
		"--authorization-mode=AlwaysAllow",
		// Required to start, used by nothing here.
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + SAKeyFile,
		"--service-account-signing-key-file=" + SAKeyFile,
		"--service-cluster-ip-range=10.96.0.0/24",
		// A lean server: no API priority and fairness (its bootstrap
		// objects and queues), no kubernetes Service endpoints kept.
		"--enable-priority-and-fairness=false",
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	}
}

// TokenOf is the fencing token of a leadership: the Lease's
// spec.leaseTransitions as the holder wrote it when it took the Lease, plus
// one. client-go counts a transition each time a holder takes the Lease
// from another (or from none), in a compare-and-swap on the Lease's
// resourceVersion, and keeps the count as the holder renews: so a new
// holder's token is above every earlier holder's. The first holder creates
// the Lease with 0 transitions, and a token of 0 is no token in the
// contract: hence the one. A holder that takes the Lease back from itself
// (its own lease ran out and no one took it) keeps its count, and so its
// token: the same node leads again with the same token, which no other
// node ever had.
func TokenOf(leaseTransitions int) uint64 {
	return uint64(leaseTransitions) + 1
}
