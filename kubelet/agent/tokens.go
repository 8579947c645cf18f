package agent

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// ServiceAccountToken implements volumes.TokenSource: a TokenRequest for
// the pod's service account, bound to the pod (so the token is refused
// once the pod is gone), as upstream's kubelet token manager asks for it.
func (g apiGetter) ServiceAccountToken(ctx context.Context, pod *corev1.Pod, audience string, expirationSeconds int64) (string, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		ExpirationSeconds: &expirationSeconds,
		BoundObjectRef:    &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	out, err := g.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for service account %s/%s: %w", pod.Namespace, sa, err)
	}
	return out.Status.Token, nil
}

// serviceEnv gives containers the variables of the kubernetes Service
// (KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT and the link-style
// KUBERNETES_PORT_*), so in-cluster clients find the API server, as
// upstream's kubelet does for the master service. The Service is read
// through the API and kept for a minute.
type serviceEnv struct {
	get func(ctx context.Context) (*corev1.Service, error)

	mu      sync.Mutex
	vars    []runtime.KeyValue
	fetched time.Time
}

func (e *serviceEnv) env(ctx context.Context) []runtime.KeyValue {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.vars != nil && time.Since(e.fetched) < time.Minute {
		return e.vars
	}
	svc, err := e.get(ctx)
	if err != nil {
		return e.vars // the last known, or none
	}
	e.vars, e.fetched = kubernetesServiceEnv(svc), time.Now()
	return e.vars
}

// kubernetesServiceEnv are upstream's service variables for the
// kubernetes Service.
func kubernetesServiceEnv(svc *corev1.Service) []runtime.KeyValue {
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone || len(svc.Spec.Ports) == 0 {
		return []runtime.KeyValue{}
	}
	ip := svc.Spec.ClusterIP
	first := svc.Spec.Ports[0]
	vars := []runtime.KeyValue{
		{Key: "KUBERNETES_SERVICE_HOST", Value: ip},
		{Key: "KUBERNETES_SERVICE_PORT", Value: strconv.Itoa(int(first.Port))},
	}
	for _, p := range svc.Spec.Ports {
		if p.Name != "" {
			vars = append(vars, runtime.KeyValue{Key: "KUBERNETES_SERVICE_PORT_" + envName(p.Name), Value: strconv.Itoa(int(p.Port))})
		}
	}
	proto := func(p corev1.ServicePort) string {
		if p.Protocol == "" {
			return "tcp"
		}
		return lower(string(p.Protocol))
	}
	vars = append(vars, runtime.KeyValue{Key: "KUBERNETES_PORT", Value: fmt.Sprintf("%s://%s:%d", proto(first), ip, first.Port)})
	for _, p := range svc.Spec.Ports {
		pfx := fmt.Sprintf("KUBERNETES_PORT_%d_%s", p.Port, envName(proto(p)))
		vars = append(vars,
			runtime.KeyValue{Key: pfx, Value: fmt.Sprintf("%s://%s:%d", proto(p), ip, p.Port)},
			runtime.KeyValue{Key: pfx + "_PROTO", Value: proto(p)},
			runtime.KeyValue{Key: pfx + "_PORT", Value: strconv.Itoa(int(p.Port))},
			runtime.KeyValue{Key: pfx + "_ADDR", Value: ip})
	}
	return vars
}

func envName(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			b[i] = c - 'a' + 'A'
		case c == '-':
			b[i] = '_'
		}
	}
	return string(b)
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c - 'A' + 'a'
		}
	}
	return string(b)
}
