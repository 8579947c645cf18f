package endpointslice

import (
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and limits.
const (
	// ControllerName is the managed-by label's value on slices this
	// controller owns.
	ControllerName = "endpointslice-controller.k8s.io"
	// DefaultMaxEndpointsPerSlice is upstream's --max-endpoints-per-slice.
	DefaultMaxEndpointsPerSlice = 100
	// MaxEndpointsPerSlice is the most a slice may hold.
	MaxEndpointsPerSlice = 1000
)

// planInput is everything a sync decides from.
type planInput struct {
	svc *corev1.Service
	// pods are the pods in the service's namespace that match its selector.
	pods []*corev1.Pod
	// existing are the slices labelled with the service's name.
	existing []*discoveryv1.EndpointSlice
	max      int
	// nameTaken reports a slice name already in use in the namespace (nil:
	// none beyond existing).
	nameTaken func(name string) bool
	// zone returns a node's zone ("" when unknown; nil: no zones).
	zone func(node string) string
}

// plan is what a sync writes. Updated slices are copies of existing ones
// carrying their resourceVersion.
type plan struct {
	create, update, delete []*discoveryv1.EndpointSlice
}

func (p plan) empty() bool { return len(p.create)+len(p.update)+len(p.delete) == 0 }

// managed reports whether this controller owns the slice.
func managed(s *discoveryv1.EndpointSlice) bool {
	return s.Labels[discoveryv1.LabelManagedBy] == ControllerName
}

func ownedBy(s *discoveryv1.EndpointSlice, svc *corev1.Service) bool {
	for _, r := range s.OwnerReferences {
		if r.UID == svc.UID && r.Kind == "Service" {
			return true
		}
	}
	return false
}

// desiredLabels are the service's labels plus the controller's.
func desiredLabels(svc *corev1.Service) map[string]string {
	out := make(map[string]string, len(svc.Labels)+3)
	for k, v := range svc.Labels {
		out[k] = v
	}
	delete(out, corev1.IsHeadlessService)
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		out[corev1.IsHeadlessService] = ""
	}
	out[discoveryv1.LabelServiceName] = svc.Name
	out[discoveryv1.LabelManagedBy] = ControllerName
	return out
}

// group is the endpoints that share an address type and ports.
type group struct {
	key    string
	at     discoveryv1.AddressType
	ports  []discoveryv1.EndpointPort
	want   map[string]discoveryv1.Endpoint // by endpointID, not yet placed
	slices []*discoveryv1.EndpointSlice    // the group's slices being built
	dirty  []*discoveryv1.EndpointSlice    // those that changed already
}

func groupKey(at discoveryv1.AddressType, ports []discoveryv1.EndpointPort) string {
	return string(at) + "|" + portsKey(ports)
}

// planSlices computes the writes that make the service's slices list its
// pods. It is pure.
func planSlices(in planInput) plan {
	var out plan
	svc := in.svc
	groups := map[string]*group{}
	total := map[discoveryv1.AddressType]int{}
	for _, at := range addressTypes(svc) {
		total[at] = 0
		for _, pod := range in.pods {
			if pod.Namespace != svc.Namespace || !inSlices(pod) {
				continue
			}
			zone := ""
			if in.zone != nil && pod.Spec.NodeName != "" {
				zone = in.zone(pod.Spec.NodeName)
			}
			ep, ok := podEndpoint(svc, pod, at, zone)
			if !ok {
				continue
			}
			ports := podPorts(svc, pod)
			k := groupKey(at, ports)
			g := groups[k]
			if g == nil {
				g = &group{key: k, at: at, ports: ports, want: map[string]discoveryv1.Endpoint{}}
				groups[k] = g
			}
			g.want[endpointID(&ep)] = ep
			total[at]++
		}
	}

	// Slices of ours that belong to another incarnation of the service go.
	var owned []*discoveryv1.EndpointSlice
	names := map[string]bool{}
	for _, s := range in.existing {
		names[s.Name] = true
		switch {
		case !managed(s) || s.Labels[discoveryv1.LabelServiceName] != svc.Name || s.Namespace != svc.Namespace:
		case !ownedBy(s, svc) || !slices.Contains(addressTypes(svc), s.AddressType):
			out.delete = append(out.delete, s)
		default:
			owned = append(owned, s)
		}
	}
	slices.SortFunc(owned, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })

	// Endpoints stay where they are; slices whose ports match no group are spare.
	var spare []*discoveryv1.EndpointSlice
	for _, s := range owned {
		g := groups[groupKey(s.AddressType, s.Ports)]
		if g == nil {
			spare = append(spare, s)
			continue
		}
		next := s.DeepCopy()
		next.Endpoints = nil
		dirty := false
		for i := range s.Endpoints {
			id := endpointID(&s.Endpoints[i])
			ep, ok := g.want[id]
			if ok && len(next.Endpoints) < in.max {
				next.Endpoints = append(next.Endpoints, ep)
				delete(g.want, id)
				dirty = dirty || !apiequality.Semantic.DeepEqual(ep, s.Endpoints[i])
			} else {
				dirty = true
			}
		}
		if dirty {
			g.dirty = append(g.dirty, next)
		} else {
			g.slices = append(g.slices, next)
		}
	}

	// New endpoints fill free room, then spare slices, then new slices.
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ordinal := 0
	newName := func() string {
		for ; ; ordinal++ {
			n := sliceName(svc, ordinal)
			if !names[n] && (in.nameTaken == nil || !in.nameTaken(n)) {
				names[n] = true
				return n
			}
		}
	}
	var built []*discoveryv1.EndpointSlice
	for _, k := range keys {
		g := groups[k]
		pending := sortedWant(g.want)
		// Slices that are written anyway take new endpoints first.
		g.slices = append(g.dirty, g.slices...)
		for _, s := range g.slices {
			room := in.max - len(s.Endpoints)
			if room > 0 && len(pending) > 0 {
				n := min(room, len(pending))
				s.Endpoints = append(s.Endpoints, pending[:n]...)
				pending = pending[n:]
			}
		}
		for len(pending) > 0 {
			var s *discoveryv1.EndpointSlice
			if i := slices.IndexFunc(spare, func(s *discoveryv1.EndpointSlice) bool { return s.AddressType == g.at }); i >= 0 {
				s = spare[i].DeepCopy()
				spare = slices.Delete(spare, i, i+1)
			} else {
				s = newSlice(svc, g.at, newName())
			}
			s.Ports = g.ports
			n := min(in.max, len(pending))
			s.Endpoints = pending[:n:n]
			pending = pending[n:]
			g.slices = append(g.slices, s)
		}
		built = append(built, g.slices...)
	}

	// An address type without endpoints keeps one empty placeholder slice.
	for _, at := range addressTypes(svc) {
		if total[at] > 0 {
			continue
		}
		if i := slices.IndexFunc(spare, func(s *discoveryv1.EndpointSlice) bool { return s.AddressType == at }); i >= 0 {
			s := spare[i].DeepCopy()
			spare = slices.Delete(spare, i, i+1)
			s.Ports, s.Endpoints = []discoveryv1.EndpointPort{}, []discoveryv1.Endpoint{}
			built = append(built, s)
			continue
		}
		built = append(built, newSlice(svc, at, newName()))
	}
	out.delete = append(out.delete, spare...)

	// Compare with what is stored.
	byName := map[string]*discoveryv1.EndpointSlice{}
	for _, s := range owned {
		byName[s.Name] = s
	}
	labels := desiredLabels(svc)
	ref := *metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))
	for _, s := range built {
		if len(s.Endpoints) == 0 && total[s.AddressType] > 0 {
			out.delete = append(out.delete, byName[s.Name])
			continue
		}
		sortEndpoints(s.Endpoints)
		s.Labels = maps.Clone(labels)
		s.OwnerReferences = withOwner(s.OwnerReferences, ref)
		if s.Ports == nil {
			s.Ports = []discoveryv1.EndpointPort{}
		}
		if s.Endpoints == nil {
			s.Endpoints = []discoveryv1.Endpoint{}
		}
		old, ok := byName[s.Name]
		switch {
		case !ok:
			out.create = append(out.create, s)
		case !sameSlice(old, s):
			out.update = append(out.update, s)
		}
	}
	return out
}

func sortedWant(want map[string]discoveryv1.Endpoint) []discoveryv1.Endpoint {
	out := make([]discoveryv1.Endpoint, 0, len(want))
	for _, ep := range want {
		out = append(out, ep)
	}
	sortEndpoints(out)
	return out
}

func newSlice(svc *corev1.Service, at discoveryv1.AddressType, name string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: svc.Namespace},
		AddressType: at,
		Ports:       []discoveryv1.EndpointPort{},
		Endpoints:   []discoveryv1.Endpoint{},
	}
}

// withOwner returns refs with the service as controller, replacing any other
// controller reference.
func withOwner(refs []metav1.OwnerReference, ref metav1.OwnerReference) []metav1.OwnerReference {
	out := []metav1.OwnerReference{ref}
	for _, r := range refs {
		if r.UID != ref.UID && (r.Controller == nil || !*r.Controller) {
			out = append(out, r)
		}
	}
	return out
}

// sameSlice reports whether writing next over old would change anything this
// controller manages.
func sameSlice(old, next *discoveryv1.EndpointSlice) bool {
	oldEPs := slices.Clone(old.Endpoints)
	sortEndpoints(oldEPs)
	return old.AddressType == next.AddressType &&
		portsKey(old.Ports) == portsKey(next.Ports) &&
		apiequality.Semantic.DeepEqual(oldEPs, next.Endpoints) &&
		apiequality.Semantic.DeepEqual(old.Labels, next.Labels) &&
		apiequality.Semantic.DeepEqual(old.OwnerReferences, next.OwnerReferences)
}

// sliceName is the service's name, shortened, and five characters derived
// from its UID and the ordinal, like a generated name but reproducible.
func sliceName(svc *corev1.Service, ordinal int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789" // upstream's generateName alphabet
	base := svc.Name + "-"
	if len(base) > 58 {
		base = base[:58]
	}
	h := fnv.New64a()
	h.Write([]byte(string(svc.UID) + "/" + strconv.Itoa(ordinal)))
	v := h.Sum64()
	b := []byte(base)
	for range 5 {
		b = append(b, alphabet[v%uint64(len(alphabet))])
		v /= uint64(len(alphabet))
	}
	return string(b)
}
