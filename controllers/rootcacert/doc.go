// Package rootcacert is the root CA certificate publisher (upstream's
// "root-ca-cert-publisher"): every active namespace has a ConfigMap
// "kube-root-ca.crt" whose "ca.crt" is the cluster CA certificate, so that
// pods can verify the API server. A copy that is changed or deleted is
// restored.
//
// The caller's duties: give it the CA bundle (PEM), the namespaces' and the
// ConfigMaps' caches (New adds handlers, so call it before they run), and
// run the result while leading.
package rootcacert
