package servicealloc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubebus/kubebus/apiserver/storage"
)

// Reader is the part of the store the allocator reads.
type Reader interface {
	Get(ctx context.Context, key string) (storage.KV, error)
	List(ctx context.Context, prefix, startKey string, rev, limit int64) (storage.Page, error)
}

// Config configures an Allocator.
type Config struct {
	Store Reader
	// ClusterIPRange is the --service-cluster-ip-range CIDR
	// (DefaultClusterIPRange when empty).
	ClusterIPRange string
	// NodePortRange is the --service-node-port-range (DefaultNodePortRange
	// when empty).
	NodePortRange string
	// Rand returns a random number in [0, n); nil means math/rand/v2.
	Rand func(n uint64) uint64
}

func (c *Config) validate() error {
	if c.Store == nil {
		return errors.New("servicealloc: no store")
	}
	if c.ClusterIPRange == "" {
		c.ClusterIPRange = DefaultClusterIPRange
	}
	if c.NodePortRange == "" {
		c.NodePortRange = DefaultNodePortRange
	}
	if c.Rand == nil {
		c.Rand = rand.Uint64N
	}
	return nil
}

// Scan bounds: a search for a free value reads at most maxReads pages of
// pageSize claims.
const (
	pageSize = 256
	maxReads = 16
)

// Allocator gives Services cluster IPs and node ports. It is safe for
// concurrent use; it holds no state besides its configuration.
type Allocator struct {
	store Reader
	ips   IPRange
	ports PortRange
	rand  func(uint64) uint64
}

// New checks cfg and returns an allocator.
func New(cfg Config) (*Allocator, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ips, err := ParseIPRange(cfg.ClusterIPRange)
	if err != nil {
		return nil, err
	}
	ports, err := ParsePortRange(cfg.NodePortRange)
	if err != nil {
		return nil, err
	}
	return &Allocator{store: cfg.Store, ips: ips, ports: ports, rand: cfg.Rand}, nil
}

// IPRange returns the cluster IP range.
func (a *Allocator) IPRange() IPRange { return a.ips }

// PortRange returns the node port range.
func (a *Allocator) PortRange() PortRange { return a.ports }

// errFull is the internal error when no free value is found.
type errFull struct{ what string }

func (e errFull) Error() string { return fmt.Sprintf("failed to allocate a %s: range is full", e.what) }

// AllocateService completes svc, a Service about to be written (old is the
// stored Service on an update, nil on a create): it fills the IP families,
// picks a cluster IP and node ports where they are needed and empty, and
// checks those the client asked for. It returns the keys the write must
// claim and release in its transaction. A request that cannot be met is a
// 422 (field errors, as upstream); an etcd failure is returned wrapped.
func (a *Allocator) AllocateService(ctx context.Context, svc, old *corev1.Service) (storage.Side, error) {
	var side storage.Side
	uid := []byte(svc.UID)
	if errs := a.ipFamilies(svc); len(errs) > 0 {
		return side, invalid(svc, errs)
	}
	held := heldIPs(old)
	if needsClusterIP(svc) {
		switch ip := svc.Spec.ClusterIP; {
		case ip == "":
			addr, err := a.pickIP(ctx)
			if err != nil {
				return side, err
			}
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = addr.String(), []string{addr.String()}
			side.Claim = append(side.Claim, storage.KeyValue{Key: ipKey(addr), Value: uid})
		case held[ip]:
		default:
			key, err := a.checkIP(ctx, svc, ip)
			if err != nil {
				return side, err
			}
			if key != "" {
				side.Claim = append(side.Claim, storage.KeyValue{Key: key, Value: uid})
			}
		}
	}
	keep := heldIPs(svc)
	for ip := range held {
		if !keep[ip] {
			if addr, err := netip.ParseAddr(ip); err == nil {
				side.Release = append(side.Release, storage.KeyValue{Key: ipKey(addr), Value: uid})
			}
		}
	}
	ports, err := a.allocateNodePorts(ctx, svc, old)
	if err != nil {
		return side, err
	}
	side.Claim = append(side.Claim, ports.Claim...)
	side.Release = append(side.Release, ports.Release...)
	return side, nil
}

// ReleaseService returns the keys deleting svc frees. A key is freed only
// if it still holds svc's UID.
func (a *Allocator) ReleaseService(svc *corev1.Service) storage.Side {
	var side storage.Side
	uid := []byte(svc.UID)
	for ip := range heldIPs(svc) {
		if addr, err := netip.ParseAddr(ip); err == nil {
			side.Release = append(side.Release, storage.KeyValue{Key: ipKey(addr), Value: uid})
		}
	}
	for p := range heldPorts(svc) {
		side.Release = append(side.Release, storage.KeyValue{Key: portKey(p), Value: uid})
	}
	return side
}

// ipFamilies fills spec.ipFamilies for a single-stack cluster and rejects
// what the cluster cannot give, as upstream's initIPFamilyFields.
func (a *Allocator) ipFamilies(svc *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	fam := a.ips.Family()
	var errs field.ErrorList
	for i, f := range spec.IPFamilies {
		if f != fam {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilies").Index(i), f, "not configured on this cluster"))
		}
	}
	headlessNoSelector := spec.ClusterIP == corev1.ClusterIPNone && len(spec.Selector) == 0
	if p := spec.IPFamilyPolicy; p != nil && *p == corev1.IPFamilyPolicyRequireDualStack && !headlessNoSelector {
		errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilyPolicy"), *p, "this cluster is not configured for dual-stack services"))
	}
	if len(spec.ClusterIPs) > 1 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs"), spec.ClusterIPs, "this cluster is not configured for dual-stack services"))
	}
	if len(errs) == 0 && len(spec.IPFamilies) == 0 {
		spec.IPFamilies = []corev1.IPFamily{fam}
	}
	return errs
}

// checkIP checks a cluster IP the client asked for and returns its key to
// claim ("" when svc already holds it).
func (a *Allocator) checkIP(ctx context.Context, svc *corev1.Service, ip string) (string, error) {
	path := field.NewPath("spec", "clusterIPs")
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return "", invalid(svc, field.ErrorList{field.Invalid(path, svc.Spec.ClusterIPs, fmt.Sprintf("failed to allocate IP %s: not a valid IP address", ip))})
	}
	if _, ok := a.ips.Offset(addr); !ok {
		return "", invalid(svc, field.ErrorList{field.Invalid(path, svc.Spec.ClusterIPs,
			fmt.Sprintf("failed to allocate IP %s: provided IP is not in the valid range. The range of valid IPs is %s", ip, a.ips))})
	}
	key := ipKey(addr)
	holder, err := a.holder(ctx, key)
	switch {
	case err != nil:
		return "", err
	case holder == string(svc.UID):
		return "", nil
	case holder != "":
		return "", invalid(svc, field.ErrorList{field.Invalid(path, svc.Spec.ClusterIPs,
			fmt.Sprintf("failed to allocate IP %s: provided IP is already allocated", ip))})
	}
	return key, nil
}

// holder returns the UID of the Service holding key, "" when it is free.
func (a *Allocator) holder(ctx context.Context, key string) (string, error) {
	kv, err := a.store.Get(ctx, key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading allocation %s: %w", key, err)
	case len(kv.Value) == 0:
		return "?", nil
	}
	return string(kv.Value), nil
}

// pickIP finds a free cluster IP, never the reserved first address.
func (a *Allocator) pickIP(ctx context.Context) (netip.Addr, error) {
	lo, hi := a.ips.bounds()
	reserved, _ := a.ips.Offset(a.ips.Reserved())
	off, err := a.scan(ctx, scanSpec{
		prefix: IPPrefix, lo: lo, hi: hi, what: "cluster IP",
		key: func(off uint64) string { return ipKey(a.ips.Addr(off)) },
		offset: func(key string) (uint64, bool) {
			addr, ok := parseIPKey(key)
			if !ok {
				return 0, false
			}
			return a.ips.rawOffset(addr)
		},
		skip: func(off uint64) bool { return off == reserved },
	})
	if err != nil {
		return netip.Addr{}, err
	}
	return a.ips.Addr(off), nil
}

// scanSpec says what to scan for a free value.
type scanSpec struct {
	prefix string
	lo, hi uint64 // offsets a value may take
	what   string
	key    func(off uint64) string
	offset func(key string) (uint64, bool)
	skip   func(off uint64) bool
}

// scan finds a free offset in [lo, hi]: from a random one to hi, then from
// lo on, reading claimed keys in pages, at most maxReads of them.
func (a *Allocator) scan(ctx context.Context, s scanSpec) (uint64, error) {
	start := s.lo + a.rand(s.hi-s.lo+1)
	reads := 0
	for _, seg := range segments(s.lo, s.hi, start) {
		from, startKey := seg[0], s.key(seg[0])
		for from <= seg[1] {
			if reads == maxReads {
				return 0, apierrors.NewInternalError(errFull{s.what})
			}
			reads++
			page, err := a.store.List(ctx, s.prefix, startKey, 0, pageSize)
			if err != nil {
				return 0, fmt.Errorf("listing %s allocations: %w", s.what, err)
			}
			taken := make([]uint64, 0, len(page.KVs))
			for _, kv := range page.KVs {
				if off, ok := s.offset(kv.Key); ok {
					taken = append(taken, off)
				}
			}
			r := gap(from, seg[1], taken, !page.More, s.skip)
			if r.found {
				return r.free, nil
			}
			if !r.more {
				break
			}
			from, startKey = r.next, s.key(r.next)
			// Keys that are not offsets (another family) still move the
			// scan on.
			if n := len(page.KVs); n > 0 && page.KVs[n-1].Key+"\x00" > startKey {
				startKey = page.KVs[n-1].Key + "\x00"
			}
		}
	}
	return 0, apierrors.NewInternalError(errFull{s.what})
}

func needsClusterIP(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

// heldIPs returns the cluster IPs a stored Service holds.
func heldIPs(svc *corev1.Service) map[string]bool {
	out := map[string]bool{}
	if svc == nil || !needsClusterIP(svc) {
		return out
	}
	for _, ip := range svc.Spec.ClusterIPs {
		if ip != "" && ip != corev1.ClusterIPNone {
			out[ip] = true
		}
	}
	if ip := svc.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone {
		out[ip] = true
	}
	return out
}

func invalid(svc *corev1.Service, errs field.ErrorList) error {
	return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name, errs)
}

// Allocate is AllocateService for the API server's generic write path.
func (a *Allocator) Allocate(ctx context.Context, obj, old runtime.Object) (storage.Side, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return storage.Side{}, fmt.Errorf("servicealloc: cannot allocate for a %T", obj)
	}
	var oldSvc *corev1.Service
	if old != nil {
		if oldSvc, ok = old.(*corev1.Service); !ok {
			return storage.Side{}, fmt.Errorf("servicealloc: cannot allocate for a %T", old)
		}
	}
	return a.AllocateService(ctx, svc, oldSvc)
}

// Release is ReleaseService for the API server's generic delete path.
func (a *Allocator) Release(obj runtime.Object) storage.Side {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return storage.Side{}
	}
	return a.ReleaseService(svc)
}
