package server

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"

	"github.com/kubebus/kubebus/kubelet/certs"
	"github.com/kubebus/kubebus/kubelet/certs/certstest"
)

// TestServingCertFromCSR: the server serves the certificate a certs.Manager
// obtained through the CSR API, and refuses handshakes until there is one.
func TestServingCertFromCSR(t *testing.T) {
	t.Parallel()
	cs := certstest.NewClientset()
	signer := certstest.NewSigner(t)
	signer.SetApprove(true)
	quiet := slog.New(slog.DiscardHandler)
	serving, err := certs.New(certs.Config{Client: cs, NodeName: "n1", Hosts: []string{"127.0.0.1"}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	clientCert, err := certs.New(certs.Config{Client: cs, SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName, NodeName: "caller", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Logs: testLocator{}, TLS: &tls.Config{GetCertificate: serving.GetCertificate}, ClientCAs: signer.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()

	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: signer.Pool, GetClientCertificate: clientCert.GetClientCertificate, MinVersion: tls.VersionTLS12}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	url := "https://" + ln.Addr().String() + "/healthz"
	if _, err := c.Get(url); err == nil {
		t.Fatal("a handshake succeeded before the serving certificate was signed")
	}

	signer.Start(t, cs)
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	for _, m := range []*certs.Manager{serving, clientCert} {
		if _, err := m.Ensure(rctx); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d", resp.StatusCode)
	}
	if got := resp.TLS.PeerCertificates[0].Subject.CommonName; got != "system:node:n1" {
		t.Errorf("served certificate for %q", got)
	}
}
