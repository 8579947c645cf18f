// Package pki makes and keeps the certificates and kubeconfig of an
// all-in-one kubebus cluster.
//
// Ensure creates, in one directory, a certificate authority, a serving
// certificate for the API server's host names and an admin client
// certificate, and on later runs loads them, replacing only leaves that are
// expired, close to expiry or no longer match what was asked. The CA is
// never replaced once its certificate exists, because kubeconfigs and
// components trust it. IssueClient adds client certificates for components,
// ServerTLSConfig serves with them (auth.ClientCert reads their users), and
// WriteKubeconfig writes a kubeconfig the stock kubectl uses with TLS
// verification on.
//
// Keys are ECDSA P-256. Key files are written 0600 and certificates 0644,
// each atomically (a temporary file renamed into place). No error this
// package returns carries key material.
package pki
