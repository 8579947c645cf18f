package admission

import (
	"context"
	"errors"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"

	"github.com/kubebus/kubebus/apiserver/auth"
)

func i64(v int64) *int64 { return &v }

func notReadyTol(s int64) corev1.Toleration {
	return corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: i64(s)}
}

func unreachableTol(s int64) corev1.Toleration {
	return corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: i64(s)}
}

func podCreate(tols ...corev1.Toleration) *auth.AdmissionRequest {
	return &auth.AdmissionRequest{
		Operation:  auth.Create,
		Attributes: auth.Attributes{Resource: "pods", Namespace: "default", Name: "p"},
		Object:     &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{Tolerations: tols}},
	}
}

func TestDefaultTolerationSeconds(t *testing.T) {
	t.Parallel()
	custom := corev1.Toleration{Key: "example.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name   string
		plugin DefaultTolerationSeconds
		req    *auth.AdmissionRequest
		want   []corev1.Toleration // nil: the object must be unchanged
	}{
		{name: "adds both with 300s", req: podCreate(),
			want: []corev1.Toleration{notReadyTol(300), unreachableTol(300)}},
		{name: "configured seconds", plugin: DefaultTolerationSeconds{NotReady: i64(5), Unreachable: i64(0)}, req: podCreate(),
			want: []corev1.Toleration{notReadyTol(5), unreachableTol(0)}},
		{name: "keeps other tolerations first", req: podCreate(custom),
			want: []corev1.Toleration{custom, notReadyTol(300), unreachableTol(300)}},
		{name: "existing not-ready toleration kept as is", req: podCreate(notReadyTol(10)),
			want: []corev1.Toleration{notReadyTol(10), unreachableTol(300)}},
		{name: "existing unreachable toleration without seconds", req: podCreate(corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}),
			want: []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}, notReadyTol(300)}},
		{name: "empty effect covers NoExecute", req: podCreate(corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists}),
			want: []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists}, unreachableTol(300)}},
		{name: "tolerate everything", req: podCreate(corev1.Toleration{Operator: corev1.TolerationOpExists}),
			want: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
		{name: "NoSchedule toleration does not count", req: podCreate(corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}),
			want: []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}, notReadyTol(300), unreachableTol(300)}},
		{name: "update is left alone", req: func() *auth.AdmissionRequest { r := podCreate(); r.Operation = auth.Update; return r }()},
		{name: "subresource is left alone", req: func() *auth.AdmissionRequest { r := podCreate(); r.Subresource = "status"; return r }()},
		{name: "other resources are left alone", req: func() *auth.AdmissionRequest { r := podCreate(); r.Attributes.Resource = "deployments"; return r }()},
		{name: "other groups are left alone", req: func() *auth.AdmissionRequest { r := podCreate(); r.Attributes.APIGroup = "example.com"; return r }()},
		{name: "non-pod object is ignored", req: &auth.AdmissionRequest{Operation: auth.Create, Attributes: auth.Attributes{Resource: "pods"}, Object: &corev1.Service{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var before []corev1.Toleration
			pod, isPod := tc.req.Object.(*corev1.Pod)
			if isPod {
				before = append(before, pod.Spec.Tolerations...)
			}
			if err := tc.plugin.Admit(context.Background(), tc.req); err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if !isPod {
				return
			}
			want := tc.want
			if want == nil {
				want = before
			}
			if !reflect.DeepEqual(want, pod.Spec.Tolerations) {
				t.Errorf("tolerations (-want +got):\n%s", diff.Diff(want, pod.Spec.Tolerations))
			}
		})
	}
}

func TestDefaultTolerationSecondsIdempotent(t *testing.T) {
	t.Parallel()
	req := podCreate()
	var p DefaultTolerationSeconds
	for range 2 {
		if err := p.Admit(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(req.Object.(*corev1.Pod).Spec.Tolerations); got != 2 {
		t.Fatalf("tolerations after two admissions = %d, want 2", got)
	}
}

type admitFunc func(ctx context.Context, req *auth.AdmissionRequest) error

func (f admitFunc) Admit(ctx context.Context, req *auth.AdmissionRequest) error { return f(ctx, req) }

func TestChain(t *testing.T) {
	t.Parallel()
	errDenied := errors.New("denied")
	var calls []string
	record := func(name string, err error) auth.Admitter {
		return admitFunc(func(context.Context, *auth.AdmissionRequest) error { calls = append(calls, name); return err })
	}
	tests := []struct {
		name      string
		chain     Chain
		wantErr   error
		wantCalls []string
	}{
		{name: "nil chain admits", chain: nil},
		{name: "runs in order", chain: Chain{record("a", nil), nil, record("b", nil)}, wantCalls: []string{"a", "b"}},
		{name: "first error stops", chain: Chain{record("a", nil), record("b", errDenied), record("c", nil)}, wantErr: errDenied, wantCalls: []string{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls = nil
			err := tc.chain.Admit(context.Background(), podCreate())
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(tc.wantCalls, calls) {
				t.Errorf("calls = %v, want %v", calls, tc.wantCalls)
			}
		})
	}
}

func TestChainMutationsAreSeenByLaterPlugins(t *testing.T) {
	t.Parallel()
	var seen int
	c := Chain{DefaultTolerationSeconds{}, admitFunc(func(_ context.Context, req *auth.AdmissionRequest) error {
		seen = len(req.Object.(*corev1.Pod).Spec.Tolerations)
		return nil
	})}
	if err := c.Admit(context.Background(), podCreate()); err != nil {
		t.Fatal(err)
	}
	if seen != 2 {
		t.Fatalf("the later plugin saw %d tolerations, want 2", seen)
	}
}
