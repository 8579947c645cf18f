// Package server is the kubelet's HTTPS endpoint (port 10250 by default).
// It serves container logs to the API server, which proxies pods/log to it,
// exec, attach and port-forward (/exec, /attach, /portForward, which the
// API server proxies pods/exec, pods/attach and pods/portforward to, over
// SPDY or WebSocket, served by upstream's k8s.io/cri-streaming through a
// StreamRuntime; hollow nodes, without one, answer 501), and /healthz.
//
// Every connection must present a client certificate signed by the cluster
// CA (tls.RequireAndVerifyClientCert); the API server dials with its
// kubelet client certificate and verifies the kubelet's serving
// certificate against the same CA. The kubelet does not hold the CA key:
// its serving certificate comes through the CertificateSigningRequest API
// (package kubelet/certs, whose Manager.GetCertificate goes into
// Config.TLS) or from files the operator issued (Config.CertFile and
// Config.KeyFile). IssueServingCert issues one directly from the CA's
// certificate and key files, for tests and tools that hold the CA key.
//
// Logs are found through a LogLocator the caller supplies, or made up by a
// LogTexter (hollow nodes, whose containers never ran). A log file holds
// the container's raw stdout and stderr, with no per-line timestamps, so
// timestamps=true is accepted and ignored, and sinceSeconds/sinceTime are
// best effort: when the file was last written before the cutoff nothing is
// returned, otherwise the whole file (or its tail) is, which may include
// older lines.
package server
