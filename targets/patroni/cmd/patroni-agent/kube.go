package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	k8slease "github.com/splitbrain/splitbrain/targets/k8s-lease"
	"github.com/splitbrain/splitbrain/targets/patroni"
)

// podWait bounds the agent's attempts to record its node's Pod: the API
// server is ready before the nodes start, so this is for a loaded
// machine's slow first answers.
const podWait = time.Minute

// joinKubernetes readies the node for Patroni's Kubernetes store: a
// kubeconfig in postgres's home that trusts the API server's certificate
// (made from the run's secret, as k8s-lease's server makes it) and holds
// its token, and the node's Pod, by which Patroni knows its members.
func joinKubernetes(s patroni.Settings, pg *user.User, secret string) error {
	addr := s.Store.Hosts[0]
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("PG_STORE_HOSTS: %w", err)
	}
	ca, _, err := k8slease.ServingCert(secret, host)
	if err != nil {
		return err
	}
	token := k8slease.Token(secret)
	uid, _ := strconv.Atoi(pg.Uid)
	gid, _ := strconv.Atoi(pg.Gid)
	dir := filepath.Join(pg.HomeDir, ".kube")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return err
	}
	caFile := filepath.Join(dir, "ca.crt")
	if err := writeFile(caFile, ca, 0o644, uid, gid); err != nil {
		return err
	}
	kc, err := patroni.Kubeconfig("https://"+addr, caFile, token)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "config"), kc, 0o600, uid, gid); err != nil {
		return err
	}
	pod, err := patroni.MemberPod(s.Node, s.Scope)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: host}},
	}
	url := fmt.Sprintf("https://%s/api/v1/namespaces/%s/pods", addr, patroni.KubeNamespace)
	ctx, cancel := context.WithTimeout(context.Background(), podWait)
	defer cancel()
	for {
		err := createPod(ctx, client, url, token, pod)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("recording %s's Pod on %s: %w", s.Node, addr, err)
		case <-time.After(time.Second):
			log.Printf("recording %s's Pod: %v; again", s.Node, err)
		}
	}
}

// createPod POSTs the Pod; one that exists already (a restarted node's)
// is as good as made.
func createPod(ctx context.Context, client *http.Client, url, token string, pod []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(pod))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusCreated, http.StatusConflict:
		return nil
	}
	return errors.New(resp.Status)
}
