// Command apiserver-member is the entrypoint of the Kubernetes Lease
// target's API server: it writes the server's certificate and token file,
// made from the run's secret (SPLITBRAIN_SECRET), and a service-account
// key, then becomes kube-apiserver, so that the container's process is the
// server itself and every fault reaches it. Its etcd is KUBE_ETCD_SERVERS
// (client URLs, comma-separated); KUBE_APISERVER_ARGS adds flags, space
// separated.
//
// `apiserver-member ready` is the service's ready command: it exits 0 once
// the server answers GET /readyz with 200 to the electors' token, over TLS
// checked against the certificate the electors trust. A plain health path
// cannot do it: the server answers only TLS, on the one port.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	k8slease "github.com/splitbrain/splitbrain/targets/k8s-lease"
)

func main() {
	secret, host := os.Getenv(contract.EnvSecret), os.Getenv(contract.EnvMember)
	if secret == "" || host == "" {
		log.Fatal("SPLITBRAIN_SECRET and SPLITBRAIN_MEMBER must be set: apiserver-member runs as a service member of a splitbrain run")
	}
	if len(os.Args) > 1 && os.Args[1] == "ready" {
		if err := ready(secret, host); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		return
	}
	etcd := os.Getenv("KUBE_ETCD_SERVERS")
	if etcd == "" {
		log.Fatal("KUBE_ETCD_SERVERS is not set: the API server needs its etcd's client URLs")
	}
	if err := writeFiles(secret, host); err != nil {
		log.Fatal(err)
	}
	args := append([]string{"kube-apiserver"}, k8slease.ServerArgs(etcd)...)
	args = append(args, strings.Fields(os.Getenv("KUBE_APISERVER_ARGS"))...)
	log.Fatal(syscall.Exec(k8slease.ServerPath, args, os.Environ()))
}

// writeFiles writes what the server's flags name. The service-account key
// of an earlier start is kept: a restarted server signs as before.
func writeFiles(secret, host string) error {
	// A FROM scratch image has no /tmp, which the server's libraries may
	// use.
	for _, dir := range []string{k8slease.Dir, "/tmp"} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	cert, key, err := k8slease.ServingCert(secret, host)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		k8slease.CertFile:  cert,
		k8slease.KeyFile:   key,
		k8slease.TokenFile: []byte(k8slease.TokenLine(secret)),
	}
	if _, err := os.Stat(k8slease.SAKeyFile); errors.Is(err, os.ErrNotExist) {
		if files[k8slease.SAKeyFile], err = k8slease.NewServiceAccountKey(); err != nil {
			return err
		}
	}
	for name, body := range files {
		if err := os.WriteFile(name, body, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// ready asks the server on this host whether it is ready.
func ready(secret, host string) error {
	cert, _, err := k8slease.ServingCert(secret, host)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(cert)
	c := &http.Client{
		Timeout:   time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: host}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/readyz", k8slease.Port), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+k8slease.Token(secret))
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /readyz: %s: %s", resp.Status, strings.Join(strings.Fields(string(body)), " "))
	}
	return nil
}
