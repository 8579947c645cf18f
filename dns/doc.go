// Package dns is kubebus's cluster DNS, a CoreDNS-like server answering
// the names of upstream's DNS specification for Kubernetes
// (https://github.com/kubernetes/dns/blob/master/docs/specification.md)
// from Services and EndpointSlices it follows on the bus:
//
//   - A/AAAA for <svc>.<ns>.svc.<zone>: the ClusterIPs, or for a headless
//     Service every ready endpoint address;
//   - A/AAAA for <hostname>.<svc>.<ns>.svc.<zone>, the endpoints of a
//     headless Service with a hostname (pods with hostname and subdomain,
//     as StatefulSets make), and <a-b-c-d>.<svc>.<ns>.svc.<zone> for the
//     others;
//   - SRV for _<port>._<proto>.<svc>.<ns>.svc.<zone> of named ports;
//   - PTR for ClusterIPs and ready endpoint addresses;
//   - CNAME for ExternalName Services;
//   - A/AAAA for <a-b-c-d>.<ns>.pod.<zone> (CoreDNS's "pods insecure");
//   - NXDOMAIN and NODATA answers with the zone's SOA in the authority
//     section.
//
// Other names (and reverse names of addresses it does not know) are
// forwarded to upstream resolvers.
//
// The Index (index.go) is the pure part: it maps the objects to records
// and answers questions. Server (server.go) is the I/O: the UDP and TCP
// listeners and the forwarder. Run (run.go) feeds an Index from the bus's
// informers and serves it.
package dns
