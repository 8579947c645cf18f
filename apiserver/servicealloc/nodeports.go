package servicealloc

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubebus/kubebus/apiserver/storage"
)

// hasNodePorts reports whether svc's type holds node ports.
func hasNodePorts(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

// wantsNodePorts reports whether every port of svc gets a node port: a
// NodePort Service, or a LoadBalancer that did not turn them off.
func wantsNodePorts(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}

// wantsHealthCheckPort reports whether svc needs a health check node port.
func wantsHealthCheckPort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// heldPorts returns the node ports a stored Service holds.
func heldPorts(svc *corev1.Service) map[int]bool {
	out := map[int]bool{}
	if svc == nil || !hasNodePorts(svc) {
		return out
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			out[int(p.NodePort)] = true
		}
	}
	if svc.Spec.HealthCheckNodePort != 0 {
		out[int(svc.Spec.HealthCheckNodePort)] = true
	}
	return out
}

// portPlan collects the node ports one write of a Service holds.
type portPlan struct {
	a       *Allocator
	svc     *corev1.Service
	held    map[int]bool // held by the stored Service
	pending map[int]bool // held after the write
	side    storage.Side
}

// allocateNodePorts fills and checks svc's node ports, as upstream's
// initNodePorts/updateNodePorts: ports the client set are claimed (or kept,
// when the stored Service holds them), ports left at 0 are picked, a port
// number served over two protocols shares one node port, and the node
// ports the Service no longer uses are released.
func (a *Allocator) allocateNodePorts(ctx context.Context, svc, old *corev1.Service) (storage.Side, error) {
	pl := &portPlan{a: a, svc: svc, held: heldPorts(old), pending: map[int]bool{}}
	if hasNodePorts(svc) {
		if err := pl.fill(ctx); err != nil {
			return storage.Side{}, err
		}
	}
	uid := []byte(svc.UID)
	for p := range pl.held {
		if !pl.pending[p] {
			pl.side.Release = append(pl.side.Release, storage.KeyValue{Key: portKey(p), Value: uid})
		}
	}
	return pl.side, nil
}

func (pl *portPlan) fill(ctx context.Context) error {
	ports := pl.svc.Spec.Ports
	byPort := map[int32]int32{}
	// Ports asked for first, so a picked port never takes one of them.
	for i := range ports {
		if np := ports[i].NodePort; np != 0 {
			path := field.NewPath("spec", "ports").Index(i).Child("nodePort")
			if err := pl.request(ctx, int(np), path, ""); err != nil {
				return err
			}
			if byPort[ports[i].Port] == 0 {
				byPort[ports[i].Port] = np
			}
		}
	}
	if wantsNodePorts(pl.svc) {
		for i := range ports {
			p := &ports[i]
			if p.NodePort != 0 {
				continue
			}
			if np := byPort[p.Port]; np != 0 {
				p.NodePort = np
				continue
			}
			np, err := pl.pick(ctx)
			if err != nil {
				return err
			}
			p.NodePort, byPort[p.Port] = int32(np), int32(np)
		}
	}
	if !wantsHealthCheckPort(pl.svc) {
		return nil
	}
	if hc := pl.svc.Spec.HealthCheckNodePort; hc != 0 {
		return pl.request(ctx, int(hc), field.NewPath("spec", "healthCheckNodePort"),
			fmt.Sprintf("failed to allocate requested HealthCheck NodePort %d: ", hc))
	}
	np, err := pl.pick(ctx)
	if err != nil {
		return err
	}
	pl.svc.Spec.HealthCheckNodePort = int32(np)
	return nil
}

// request claims a node port the client set.
func (pl *portPlan) request(ctx context.Context, port int, path *field.Path, prefix string) error {
	if pl.pending[port] {
		return nil // the same port number over another protocol
	}
	if pl.held[port] {
		pl.pending[port] = true
		return nil
	}
	if !pl.a.ports.Contains(port) {
		return invalid(pl.svc, field.ErrorList{field.Invalid(path, port,
			prefix+"provided port is not in the valid range. The range of valid ports is "+pl.a.ports.String())})
	}
	key := portKey(port)
	holder, err := pl.a.holder(ctx, key)
	switch {
	case err != nil:
		return err
	case holder == string(pl.svc.UID):
	case holder != "":
		return invalid(pl.svc, field.ErrorList{field.Invalid(path, port, prefix+"provided port is already allocated")})
	default:
		pl.side.Claim = append(pl.side.Claim, storage.KeyValue{Key: key, Value: []byte(pl.svc.UID)})
	}
	pl.pending[port] = true
	return nil
}

// pick claims a free node port.
func (pl *portPlan) pick(ctx context.Context) (int, error) {
	r := pl.a.ports
	off, err := pl.a.scan(ctx, scanSpec{
		prefix: NodePortPrefix, lo: 0, hi: uint64(r.Size - 1), what: "node port",
		key: func(off uint64) string { return portKey(r.Base + int(off)) },
		offset: func(key string) (uint64, bool) {
			p, ok := parsePortKey(key)
			if !ok || p < r.Base {
				return 0, false
			}
			return uint64(p - r.Base), true
		},
		skip: func(off uint64) bool { return pl.pending[r.Base+int(off)] || pl.held[r.Base+int(off)] },
	})
	if err != nil {
		return 0, err
	}
	port := r.Base + int(off)
	pl.pending[port] = true
	pl.side.Claim = append(pl.side.Claim, storage.KeyValue{Key: portKey(port), Value: []byte(pl.svc.UID)})
	return port, nil
}
