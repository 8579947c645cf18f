package pods

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// ObjectGetter reads the ConfigMaps and Secrets containers refer to. A
// missing object must be reported with an error for which
// apierrors.IsNotFound is true (client-go and informer listers do).
type ObjectGetter interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// EnvInput is what ResolveEnv needs besides the pod and the container.
type EnvInput struct {
	Getter ObjectGetter
	// PodIPs and HostIPs back status.podIP(s) and status.hostIP(s); when
	// empty, the pod's status is used.
	PodIPs, HostIPs []string
	// NodeAllocatable stands in for limits a container does not set, in
	// resourceFieldRef (as upstream).
	NodeAllocatable corev1.ResourceList
	// ServiceEnv are the service link variables (KUBERNETES_SERVICE_HOST
	// ...): they do not override the container's own and can be
	// referred to with $(NAME).
	ServiceEnv []runtime.KeyValue
}

// envList is an ordered environment where a later definition replaces the
// value of an earlier one in place.
type envList struct {
	keys []string
	vals map[string]string
}

func (e *envList) set(k, v string) {
	if _, ok := e.vals[k]; !ok {
		e.keys = append(e.keys, k)
	}
	e.vals[k] = v
}

// ResolveEnv returns the environment of container c of pod, as upstream
// builds it: envFrom sources in order (prefix added, keys that cannot be
// environment variable names skipped), then env in order (value with
// $(NAME) expanded over the variables defined before it and the service
// variables; valueFrom resolved), then the service variables not already
// defined. Optional references to missing objects or keys are skipped.
// Errors read like upstream's, for CreateContainerConfigError.
func ResolveEnv(ctx context.Context, pod *corev1.Pod, c *corev1.Container, in EnvInput) ([]runtime.KeyValue, error) {
	if pod == nil || c == nil {
		return nil, errors.New("pods: ResolveEnv needs a pod and a container")
	}
	env := envList{vals: map[string]string{}}
	service := map[string]string{}
	for _, kv := range in.ServiceEnv {
		service[kv.Key] = kv.Value
	}
	r := resolver{ctx: ctx, pod: pod, in: in, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}

	for _, from := range c.EnvFrom {
		var data map[string]string
		switch {
		case from.ConfigMapRef != nil:
			cm, err := r.configMap(from.ConfigMapRef.Name, isOptional(from.ConfigMapRef.Optional))
			if err != nil {
				return nil, err
			}
			if cm != nil {
				data = cm.Data
			}
		case from.SecretRef != nil:
			s, err := r.secret(from.SecretRef.Name, isOptional(from.SecretRef.Optional))
			if err != nil {
				return nil, err
			}
			if s != nil {
				data = map[string]string{}
				for k, v := range s.Data {
					data[k] = string(v)
				}
			}
		default:
			return nil, fmt.Errorf("envFrom of container %q has neither configMapRef nor secretRef", c.Name)
		}
		for _, k := range sortedKeys(data) {
			if name := from.Prefix + k; validEnvName(name) {
				env.set(name, data[k])
			}
		}
	}

	for _, ev := range c.Env {
		if ev.ValueFrom == nil {
			env.set(ev.Name, Expand(ev.Value, mapLookup(env.vals, service)))
			continue
		}
		v, ok, err := r.valueFrom(c, ev)
		if err != nil {
			return nil, err
		}
		if ok {
			env.set(ev.Name, v)
		}
	}

	for _, kv := range in.ServiceEnv {
		if _, ok := env.vals[kv.Key]; !ok {
			env.set(kv.Key, kv.Value)
		}
	}
	out := make([]runtime.KeyValue, 0, len(env.keys))
	for _, k := range env.keys {
		out = append(out, runtime.KeyValue{Key: k, Value: env.vals[k]})
	}
	return out, nil
}

func isOptional(b *bool) bool { return b != nil && *b }

// validEnvName reports whether name can be put in an environment: not
// empty and without '=' or NUL. (Upstream's relaxed validation allows any
// other printable name.)
func validEnvName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "=\x00")
}

// resolver reads and caches the objects a container refers to.
type resolver struct {
	ctx        context.Context
	pod        *corev1.Pod
	in         EnvInput
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

// configMap returns the named ConfigMap of the pod's namespace; nil
// without error when it is missing and optional.
func (r *resolver) configMap(name string, optional bool) (*corev1.ConfigMap, error) {
	if cm, ok := r.configMaps[name]; ok {
		return cm, nil
	}
	if r.in.Getter == nil {
		return nil, fmt.Errorf("getting configmap %q: no object getter configured", name)
	}
	cm, err := r.in.Getter.GetConfigMap(r.ctx, r.pod.Namespace, name)
	switch {
	case apierrors.IsNotFound(err) && optional:
		cm = nil
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("configmap %q not found", name)
	case err != nil:
		return nil, fmt.Errorf("getting configmap %q: %w", name, err)
	}
	r.configMaps[name] = cm
	return cm, nil
}

// secret is configMap for Secrets.
func (r *resolver) secret(name string, optional bool) (*corev1.Secret, error) {
	if s, ok := r.secrets[name]; ok {
		return s, nil
	}
	if r.in.Getter == nil {
		return nil, fmt.Errorf("getting secret %q: no object getter configured", name)
	}
	s, err := r.in.Getter.GetSecret(r.ctx, r.pod.Namespace, name)
	switch {
	case apierrors.IsNotFound(err) && optional:
		s = nil
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("secret %q not found", name)
	case err != nil:
		return nil, fmt.Errorf("getting secret %q: %w", name, err)
	}
	r.secrets[name] = s
	return s, nil
}

// valueFrom resolves one env var's valueFrom; ok is false when an optional
// source is missing and the variable is left out.
func (r *resolver) valueFrom(c *corev1.Container, ev corev1.EnvVar) (v string, ok bool, err error) {
	src := ev.ValueFrom
	switch {
	case src.FieldRef != nil:
		v, err := FieldRefValue(r.pod, src.FieldRef, r.in.PodIPs, r.in.HostIPs)
		if err != nil {
			return "", false, fmt.Errorf("env %q: %w", ev.Name, err)
		}
		return v, true, nil
	case src.ResourceFieldRef != nil:
		v, err := ResourceFieldRefValue(r.pod, c, src.ResourceFieldRef, r.in.NodeAllocatable)
		if err != nil {
			return "", false, fmt.Errorf("env %q: %w", ev.Name, err)
		}
		return v, true, nil
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		optional := isOptional(ref.Optional)
		cm, err := r.configMap(ref.Name, optional)
		if err != nil || cm == nil {
			return "", false, err
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, true, nil
		}
		if v, ok := cm.BinaryData[ref.Key]; ok {
			return string(v), true, nil
		}
		if optional {
			return "", false, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, r.pod.Namespace, ref.Name)
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		optional := isOptional(ref.Optional)
		s, err := r.secret(ref.Name, optional)
		if err != nil || s == nil {
			return "", false, err
		}
		if v, ok := s.Data[ref.Key]; ok {
			return string(v), true, nil
		}
		if v, ok := s.StringData[ref.Key]; ok {
			return v, true, nil
		}
		if optional {
			return "", false, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, r.pod.Namespace, ref.Name)
	}
	return "", false, fmt.Errorf("env %q: valueFrom has no source", ev.Name)
}

// FieldRefValue returns the value of a downward API field of pod:
// metadata.name, .namespace, .uid, .labels, .annotations,
// .labels['k'], .annotations['k'], spec.nodeName,
// spec.serviceAccountName, status.podIP(s) and status.hostIP(s). podIPs
// and hostIPs, when not empty, take precedence over the pod's status.
func FieldRefValue(pod *corev1.Pod, ref *corev1.ObjectFieldSelector, podIPs, hostIPs []string) (string, error) {
	if ref.APIVersion != "" && ref.APIVersion != "v1" {
		return "", fmt.Errorf("unsupported fieldRef apiVersion %q", ref.APIVersion)
	}
	if len(podIPs) == 0 {
		for _, ip := range pod.Status.PodIPs {
			podIPs = append(podIPs, ip.IP)
		}
		if len(podIPs) == 0 && pod.Status.PodIP != "" {
			podIPs = []string{pod.Status.PodIP}
		}
	}
	if len(hostIPs) == 0 {
		for _, ip := range pod.Status.HostIPs {
			hostIPs = append(hostIPs, ip.IP)
		}
		if len(hostIPs) == 0 && pod.Status.HostIP != "" {
			hostIPs = []string{pod.Status.HostIP}
		}
	}
	first := func(ips []string) string {
		if len(ips) == 0 {
			return ""
		}
		return ips[0]
	}
	path := ref.FieldPath
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		return first(podIPs), nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	case "status.hostIP":
		return first(hostIPs), nil
	case "status.hostIPs":
		return strings.Join(hostIPs, ","), nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if key, ok := subscript(path, prefix); ok {
			return m[key], nil
		}
	}
	return "", fmt.Errorf("unsupported fieldPath: %s", path)
}

// subscript parses prefix['key'] (or prefix["key"]).
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"[")
	if !ok || !strings.HasSuffix(rest, "]") || len(rest) < 3 {
		return "", false
	}
	rest = rest[:len(rest)-1]
	q := rest[0]
	if (q != '\'' && q != '"') || rest[len(rest)-1] != q {
		return "", false
	}
	return rest[1 : len(rest)-1], true
}

// formatMap formats labels or annotations as the downward API does: one
// key="value" per line, sorted by key, values quoted.
func formatMap(m map[string]string) string {
	lines := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		lines = append(lines, k+"="+strconv.Quote(m[k]))
	}
	return strings.Join(lines, "\n")
}

// ResourceFieldRefValue returns a container's request or limit
// (limits.cpu, limits.memory, limits.ephemeral-storage, requests.* and
// hugepages-*) divided by the divisor (default 1) and rounded up, as
// upstream. A limit the container does not set is the node's allocatable.
// ref.ContainerName, when set, selects the container (volumes); else c.
func ResourceFieldRefValue(pod *corev1.Pod, c *corev1.Container, ref *corev1.ResourceFieldSelector, allocatable corev1.ResourceList) (string, error) {
	if ref.ContainerName != "" {
		c = findContainer(pod, ref.ContainerName)
		if c == nil {
			return "", fmt.Errorf("resourceFieldRef: container %q not found in pod %s/%s", ref.ContainerName, pod.Namespace, pod.Name)
		}
	}
	if c == nil {
		return "", errors.New("resourceFieldRef needs a containerName")
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported container resource: %s", ref.Resource)
	}
	res := corev1.ResourceName(name)
	switch {
	case res == corev1.ResourceCPU, res == corev1.ResourceMemory, res == corev1.ResourceEphemeralStorage,
		strings.HasPrefix(name, corev1.ResourceHugePagesPrefix):
	default:
		return "", fmt.Errorf("unsupported container resource: %s", ref.Resource)
	}
	var q resource.Quantity
	if kind == "limits" {
		v, ok := c.Resources.Limits[res]
		if !ok {
			v = allocatable[res]
		}
		q = v
	} else {
		q = c.Resources.Requests[res]
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if res == corev1.ResourceCPU {
		if divisor.MilliValue() <= 0 {
			return "", fmt.Errorf("invalid divisor %s for %s", divisor.String(), ref.Resource)
		}
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	if divisor.Value() <= 0 {
		return "", fmt.Errorf("invalid divisor %s for %s", divisor.String(), ref.Resource)
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

// findContainer returns the container or init container named name.
func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		if i := slices.IndexFunc(list, func(c corev1.Container) bool { return c.Name == name }); i >= 0 {
			return &list[i]
		}
	}
	return nil
}
