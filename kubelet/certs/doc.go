// Package certs obtains a kubelet's certificates through the
// certificates.k8s.io/v1 CertificateSigningRequest API, as upstream's
// kubelet certificate manager does, so that no kubelet holds the cluster
// CA's key.
//
// A Manager generates an ECDSA P-256 key, sends a CSR for subject
// system:node:<name> in group system:nodes to a signer
// (kubernetes.io/kubelet-serving for the log server, with the node's DNS
// names and IP addresses; or kubernetes.io/kube-apiserver-client-kubelet for
// a client certificate), waits until it is approved and signed, and keeps
// key and certificate in Config.Dir (<PairName>-current.pem, a link to the
// newest pair, as upstream's file store) or, without a Dir, in memory. A
// stored pair is reused until 80% of its lifetime has passed; Run renews
// it then and swaps it under the tls.Config callbacks GetCertificate and
// GetClientCertificate.
//
// Who approves: the controller-manager's csrapproving controller approves
// a node's CSRs for its own name. A caller that may approve CSRs itself
// (the hollow nodes, which run with the admin's credentials) sets
// Config.Approve; the controller-manager's signer, the only component with
// the CA key, signs either way.
package certs
