package dns

import (
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// DefaultTTL is the records' TTL in seconds, CoreDNS's kubernetes plugin's
// default.
const DefaultTTL = 5

// DefaultZone is the cluster domain.
const DefaultZone = "cluster.local"

// Result is an Index's answer to one question.
type Result struct {
	// Forward says the name is not the Index's to answer: ask upstream.
	Forward bool
	// Rcode is mdns.RcodeSuccess or mdns.RcodeNameError (NXDOMAIN).
	Rcode int
	// Answer, Ns (the SOA of a negative answer) and Extra are the
	// message's sections.
	Answer, Ns, Extra []mdns.RR
}

// key names a namespaced object.
type key struct{ ns, name string }

// service is what the Index keeps of a Service.
type service struct {
	clusterIPs   []netip.Addr
	headless     bool
	externalName string
	ports        []port
}

// port is a named port of a Service or an EndpointSlice.
type port struct {
	name, proto string // proto lower case: tcp, udp, sctp
	port        uint16
}

// slice is what the Index keeps of an EndpointSlice.
type slice struct {
	service   string
	ports     []port
	endpoints []endpoint
}

// endpoint is one address of an EndpointSlice's endpoint.
type endpoint struct {
	addr     netip.Addr
	hostname string
	ready    bool
}

// label is the endpoint's first DNS label: its hostname, or its address
// with dashes.
func (e endpoint) label() string {
	if e.hostname != "" {
		return strings.ToLower(e.hostname)
	}
	return dashed(e.addr)
}

// Index holds the cluster's DNS records, built from Services and
// EndpointSlices, and answers questions about them. It is safe for
// concurrent use.
type Index struct {
	zone   string // lower-case FQDN, e.g. "cluster.local."
	ttl    uint32
	mu     sync.RWMutex
	serial uint32
	svcs   map[key]*service
	slices map[key]*slice                 // by the slice's namespace and name
	bySvc  map[key]map[string]*slice      // by Service, then slice name
	nsSvcs map[string]int                 // Services per namespace
	ptr    map[string]map[string]struct{} // reverse name -> target names
	ptrOf  map[key][]ptrEntry             // what each Service added to ptr
}

type ptrEntry struct{ reverse, target string }

// NewIndex returns an empty Index for zone (DefaultZone when empty) whose
// records live ttl seconds (DefaultTTL when 0).
func NewIndex(zone string, ttl uint32) *Index {
	if zone == "" {
		zone = DefaultZone
	}
	if ttl == 0 {
		ttl = DefaultTTL
	}
	return &Index{
		zone: mdns.Fqdn(strings.ToLower(zone)), ttl: ttl, serial: uint32(time.Now().Unix()),
		svcs: map[key]*service{}, slices: map[key]*slice{}, bySvc: map[key]map[string]*slice{},
		nsSvcs: map[string]int{}, ptr: map[string]map[string]struct{}{}, ptrOf: map[key][]ptrEntry{},
	}
}

// Zone returns the cluster domain as a lower-case FQDN.
func (ix *Index) Zone() string { return ix.zone }

// SetService adds or replaces a Service.
func (ix *Index) SetService(s *corev1.Service) {
	k := key{s.Namespace, s.Name}
	v := &service{externalName: s.Spec.ExternalName}
	if s.Spec.Type == corev1.ServiceTypeExternalName {
		if v.externalName == "" {
			v = nil
		}
	} else {
		v.externalName = ""
		ips := s.Spec.ClusterIPs
		if len(ips) == 0 && s.Spec.ClusterIP != "" {
			ips = []string{s.Spec.ClusterIP}
		}
		for _, ip := range ips {
			if ip == corev1.ClusterIPNone {
				v.headless = true
				continue
			}
			if a, err := netip.ParseAddr(ip); err == nil {
				v.clusterIPs = append(v.clusterIPs, a.Unmap())
			}
		}
		if len(v.clusterIPs) == 0 {
			v.headless = true
		}
		for _, p := range s.Spec.Ports {
			if p.Name != "" {
				v.ports = append(v.ports, port{name: strings.ToLower(p.Name), proto: proto(p.Protocol), port: uint16(p.Port)})
			}
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if _, ok := ix.svcs[k]; !ok && v != nil {
		ix.nsSvcs[k.ns]++
	}
	if v == nil {
		ix.deleteServiceLocked(k)
		return
	}
	ix.svcs[k] = v
	ix.changedLocked(k)
}

// DeleteService removes a Service.
func (ix *Index) DeleteService(namespace, name string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.deleteServiceLocked(key{namespace, name})
}

func (ix *Index) deleteServiceLocked(k key) {
	if _, ok := ix.svcs[k]; !ok {
		return
	}
	delete(ix.svcs, k)
	if ix.nsSvcs[k.ns]--; ix.nsSvcs[k.ns] <= 0 {
		delete(ix.nsSvcs, k.ns)
	}
	ix.changedLocked(k)
}

// SetEndpointSlice adds or replaces an EndpointSlice. Slices without the
// kubernetes.io/service-name label are ignored.
func (ix *Index) SetEndpointSlice(s *discoveryv1.EndpointSlice) {
	svcName := s.Labels[discoveryv1.LabelServiceName]
	if svcName == "" {
		ix.DeleteEndpointSlice(s.Namespace, s.Name)
		return
	}
	v := &slice{service: svcName}
	for _, p := range s.Ports {
		if p.Name == nil || *p.Name == "" || p.Port == nil {
			continue
		}
		pr := corev1.ProtocolTCP
		if p.Protocol != nil {
			pr = *p.Protocol
		}
		v.ports = append(v.ports, port{name: strings.ToLower(*p.Name), proto: proto(pr), port: uint16(*p.Port)})
	}
	for _, e := range s.Endpoints {
		ready := e.Conditions.Ready == nil || *e.Conditions.Ready
		host := ""
		if e.Hostname != nil {
			host = *e.Hostname
		}
		for _, a := range e.Addresses {
			if ip, err := netip.ParseAddr(a); err == nil {
				v.endpoints = append(v.endpoints, endpoint{addr: ip.Unmap(), hostname: host, ready: ready})
			}
		}
	}
	k := key{s.Namespace, s.Name}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if old, ok := ix.slices[k]; ok && old.service != svcName {
		ix.deleteSliceLocked(k)
	}
	ix.slices[k] = v
	sk := key{s.Namespace, svcName}
	if ix.bySvc[sk] == nil {
		ix.bySvc[sk] = map[string]*slice{}
	}
	ix.bySvc[sk][s.Name] = v
	ix.changedLocked(sk)
}

// DeleteEndpointSlice removes an EndpointSlice.
func (ix *Index) DeleteEndpointSlice(namespace, name string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.deleteSliceLocked(key{namespace, name})
}

func (ix *Index) deleteSliceLocked(k key) {
	old, ok := ix.slices[k]
	if !ok {
		return
	}
	delete(ix.slices, k)
	sk := key{k.ns, old.service}
	delete(ix.bySvc[sk], k.name)
	if len(ix.bySvc[sk]) == 0 {
		delete(ix.bySvc, sk)
	}
	ix.changedLocked(sk)
}

// changedLocked recomputes a Service's reverse records and bumps the
// zone's serial.
func (ix *Index) changedLocked(k key) {
	ix.serial++
	for _, e := range ix.ptrOf[k] {
		delete(ix.ptr[e.reverse], e.target)
		if len(ix.ptr[e.reverse]) == 0 {
			delete(ix.ptr, e.reverse)
		}
	}
	delete(ix.ptrOf, k)
	s, ok := ix.svcs[k]
	if !ok || s.externalName != "" {
		return
	}
	base := ix.svcName(k)
	var entries []ptrEntry
	for _, ip := range s.clusterIPs {
		entries = append(entries, ptrEntry{reverseName(ip), base})
	}
	for _, sl := range ix.bySvc[k] {
		for _, e := range sl.endpoints {
			if e.ready {
				entries = append(entries, ptrEntry{reverseName(e.addr), e.label() + "." + base})
			}
		}
	}
	for _, e := range entries {
		if ix.ptr[e.reverse] == nil {
			ix.ptr[e.reverse] = map[string]struct{}{}
		}
		ix.ptr[e.reverse][e.target] = struct{}{}
	}
	if len(entries) > 0 {
		ix.ptrOf[k] = entries
	}
}

// svcName is <svc>.<ns>.svc.<zone>.
func (ix *Index) svcName(k key) string { return k.name + "." + k.ns + ".svc." + ix.zone }

// Lookup answers one question about name (any case: the records carry
// the name as asked) of type qtype.
func (ix *Index) Lookup(name string, qtype uint16) Result {
	name = mdns.Fqdn(name)
	lower := strings.ToLower(name)
	if strings.HasSuffix(lower, ".in-addr.arpa.") || strings.HasSuffix(lower, ".ip6.arpa.") {
		return ix.reverse(name, lower, qtype)
	}
	var rest string
	switch {
	case lower == ix.zone:
	case strings.HasSuffix(lower, "."+ix.zone):
		rest = strings.TrimSuffix(lower, "."+ix.zone)
	default:
		return Result{Forward: true}
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if rest == "" {
		if qtype == mdns.TypeSOA {
			return Result{Answer: []mdns.RR{ix.soa()}}
		}
		return ix.nodata()
	}
	l := strings.Split(rest, ".")
	switch l[len(l)-1] {
	case "svc":
		return ix.lookupSvc(name, l[:len(l)-1], qtype)
	case "pod":
		return ix.lookupPod(name, l[:len(l)-1], qtype)
	}
	return ix.nxdomain()
}

// lookupSvc answers names under svc.<zone>; l are the labels before "svc".
func (ix *Index) lookupSvc(name string, l []string, qtype uint16) Result {
	switch len(l) {
	case 0:
		return ix.nodata()
	case 1: // <ns>.svc
		if ix.nsSvcs[l[0]] > 0 {
			return ix.nodata()
		}
		return ix.nxdomain()
	}
	k := key{ns: l[len(l)-1], name: l[len(l)-2]}
	s, ok := ix.svcs[k]
	if !ok {
		return ix.nxdomain()
	}
	sub := l[:len(l)-2]
	if s.externalName != "" {
		if len(sub) > 0 {
			return ix.nxdomain()
		}
		return Result{Answer: []mdns.RR{&mdns.CNAME{Hdr: ix.hdr(name, mdns.TypeCNAME), Target: mdns.Fqdn(strings.ToLower(s.externalName))}}}
	}
	switch {
	case len(sub) == 0: // <svc>.<ns>.svc
		var addrs []netip.Addr
		if s.headless {
			for _, e := range ix.readyEndpoints(k) {
				addrs = append(addrs, e.addr)
			}
		} else {
			addrs = s.clusterIPs
		}
		return ix.addrs(name, addrs, qtype)
	case len(sub) == 1 && !strings.HasPrefix(sub[0], "_"): // <host>.<svc>.<ns>.svc
		if !s.headless {
			return ix.nxdomain()
		}
		var addrs []netip.Addr
		for _, e := range ix.readyEndpoints(k) {
			if e.label() == sub[0] {
				addrs = append(addrs, e.addr)
			}
		}
		if len(addrs) == 0 {
			return ix.nxdomain()
		}
		return ix.addrs(name, addrs, qtype)
	case len(sub) == 1: // _<proto>.<svc>.<ns>.svc: an empty non-terminal when a port has the protocol
		for _, p := range ix.ports(k, s) {
			if "_"+p.proto == sub[0] {
				return ix.nodata()
			}
		}
		return ix.nxdomain()
	case len(sub) == 2 && strings.HasPrefix(sub[0], "_") && strings.HasPrefix(sub[1], "_"):
		return ix.srv(name, k, s, sub[0][1:], sub[1][1:], qtype)
	}
	return ix.nxdomain()
}

// srv answers _<port>._<proto>.<svc>.<ns>.svc.
func (ix *Index) srv(name string, k key, s *service, portName, protoName string, qtype uint16) Result {
	var found []port
	for _, p := range ix.ports(k, s) {
		if p.name == portName && p.proto == protoName {
			found = append(found, p)
		}
	}
	if len(found) == 0 {
		return ix.nxdomain()
	}
	if qtype != mdns.TypeSRV && qtype != mdns.TypeANY {
		return ix.nodata()
	}
	base := ix.svcName(k)
	var r Result
	if !s.headless {
		for _, p := range found {
			r.Answer = append(r.Answer, &mdns.SRV{Hdr: ix.hdr(name, mdns.TypeSRV), Priority: 0, Weight: 100, Port: p.port, Target: base})
		}
		r.Answer = dedupe(r.Answer)
		for _, ip := range s.clusterIPs {
			r.Extra = append(r.Extra, ix.addrRR(base, ip))
		}
		return r
	}
	// A headless Service's ports are its slices'; each ready endpoint of
	// a slice with the port is a target.
	for _, sl := range sortedSlices(ix.bySvc[k]) {
		for _, p := range sl.ports {
			if p.name != portName || p.proto != protoName {
				continue
			}
			for _, e := range sl.endpoints {
				if !e.ready {
					continue
				}
				target := e.label() + "." + base
				r.Answer = append(r.Answer, &mdns.SRV{Hdr: ix.hdr(name, mdns.TypeSRV), Priority: 0, Weight: 100, Port: p.port, Target: target})
				r.Extra = append(r.Extra, ix.addrRR(target, e.addr))
			}
		}
	}
	r.Answer, r.Extra = dedupe(r.Answer), dedupe(r.Extra)
	if len(r.Answer) == 0 {
		return ix.nodata()
	}
	return r
}

// ports are a Service's named ports: its spec's, or for a headless
// Service its slices' too.
func (ix *Index) ports(k key, s *service) []port {
	ps := slices.Clone(s.ports)
	if s.headless {
		for _, sl := range ix.bySvc[k] {
			ps = append(ps, sl.ports...)
		}
	}
	return ps
}

// lookupPod answers <a-b-c-d>.<ns>.pod (CoreDNS's "pods insecure": any
// address in any namespace).
func (ix *Index) lookupPod(name string, l []string, qtype uint16) Result {
	switch len(l) {
	case 0, 1:
		return ix.nodata()
	case 2:
		ip, ok := undash(l[0])
		if !ok {
			return ix.nxdomain()
		}
		return ix.addrs(name, []netip.Addr{ip}, qtype)
	}
	return ix.nxdomain()
}

// reverse answers a PTR question (lower is name in lower case), or
// forwards the name when it is no address the Index knows.
func (ix *Index) reverse(name, lower string, qtype uint16) Result {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	targets, ok := ix.ptr[lower]
	if !ok {
		return Result{Forward: true}
	}
	if qtype != mdns.TypePTR && qtype != mdns.TypeANY {
		return Result{Ns: []mdns.RR{ix.soa()}}
	}
	var r Result
	for _, t := range slices.Sorted(func(yield func(string) bool) {
		for t := range targets {
			if !yield(t) {
				return
			}
		}
	}) {
		r.Answer = append(r.Answer, &mdns.PTR{Hdr: ix.hdr(name, mdns.TypePTR), Ptr: t})
	}
	return r
}

// readyEndpoints are a Service's ready endpoints, sorted by address, each
// address once.
func (ix *Index) readyEndpoints(k key) []endpoint {
	var eps []endpoint
	for _, sl := range ix.bySvc[k] {
		for _, e := range sl.endpoints {
			if e.ready {
				eps = append(eps, e)
			}
		}
	}
	slices.SortFunc(eps, func(a, b endpoint) int {
		if c := a.addr.Compare(b.addr); c != 0 {
			return c
		}
		return strings.Compare(a.hostname, b.hostname)
	})
	return slices.CompactFunc(eps, func(a, b endpoint) bool { return a.addr == b.addr })
}

// addrs answers an A or AAAA question with the addresses of its family;
// other types, and a family with no address, get NODATA.
func (ix *Index) addrs(name string, addrs []netip.Addr, qtype uint16) Result {
	var r Result
	for _, a := range addrs {
		if (qtype == mdns.TypeA || qtype == mdns.TypeANY) && a.Is4() || (qtype == mdns.TypeAAAA || qtype == mdns.TypeANY) && a.Is6() {
			r.Answer = append(r.Answer, ix.addrRR(name, a))
		}
	}
	if len(r.Answer) == 0 {
		return ix.nodata()
	}
	return r
}

func (ix *Index) addrRR(name string, a netip.Addr) mdns.RR {
	if a.Is4() {
		return &mdns.A{Hdr: ix.hdr(name, mdns.TypeA), A: net.IP(a.AsSlice())}
	}
	return &mdns.AAAA{Hdr: ix.hdr(name, mdns.TypeAAAA), AAAA: net.IP(a.AsSlice())}
}

func (ix *Index) hdr(name string, t uint16) mdns.RR_Header {
	return mdns.RR_Header{Name: name, Rrtype: t, Class: mdns.ClassINET, Ttl: ix.ttl}
}

// soa is the zone's SOA record, as CoreDNS writes it.
func (ix *Index) soa() *mdns.SOA {
	return &mdns.SOA{
		Hdr: ix.hdr(ix.zone, mdns.TypeSOA), Ns: "ns.dns." + ix.zone, Mbox: "hostmaster." + ix.zone,
		Serial: ix.serial, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: ix.ttl,
	}
}

func (ix *Index) nodata() Result { return Result{Ns: []mdns.RR{ix.soa()}} }

func (ix *Index) nxdomain() Result {
	return Result{Rcode: mdns.RcodeNameError, Ns: []mdns.RR{ix.soa()}}
}

// proto is a protocol's SRV label: tcp, udp or sctp.
func proto(p corev1.Protocol) string {
	if p == "" {
		return "tcp"
	}
	return strings.ToLower(string(p))
}

// dashed writes an address with dashes for its dots or colons: 10-244-0-5.
func dashed(a netip.Addr) string {
	if a.Is4() {
		return strings.ReplaceAll(a.String(), ".", "-")
	}
	return strings.ReplaceAll(a.String(), ":", "-")
}

// undash reads an address written by dashed.
func undash(s string) (netip.Addr, bool) {
	if strings.Count(s, "-") == 3 {
		if a, err := netip.ParseAddr(strings.ReplaceAll(s, "-", ".")); err == nil && a.Is4() {
			return a, true
		}
	}
	a, err := netip.ParseAddr(strings.ReplaceAll(s, "-", ":"))
	if err != nil || !a.Is6() {
		return netip.Addr{}, false
	}
	return a, true
}

// reverseName is an address's name under in-addr.arpa or ip6.arpa.
func reverseName(a netip.Addr) string {
	if a.Is4() {
		b := a.As4()
		return strconv.Itoa(int(b[3])) + "." + strconv.Itoa(int(b[2])) + "." + strconv.Itoa(int(b[1])) + "." + strconv.Itoa(int(b[0])) + ".in-addr.arpa."
	}
	r, _ := mdns.ReverseAddr(a.String())
	return r
}

func sortedSlices(m map[string]*slice) []*slice {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]*slice, len(names))
	for i, n := range names {
		out[i] = m[n]
	}
	return out
}

// dedupe drops repeated records (same text), keeping the order.
func dedupe(rrs []mdns.RR) []mdns.RR {
	seen := map[string]bool{}
	out := rrs[:0]
	for _, rr := range rrs {
		if s := rr.String(); !seen[s] {
			seen[s] = true
			out = append(out, rr)
		}
	}
	return out
}
