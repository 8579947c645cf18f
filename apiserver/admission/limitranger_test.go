package admission

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
)

type lrLister struct {
	ranges []*corev1.LimitRange
	err    error
}

func (l lrLister) ListLimitRanges(context.Context, string) ([]*corev1.LimitRange, error) {
	return l.ranges, l.err
}

func lrRange(items ...corev1.LimitRangeItem) *corev1.LimitRange {
	return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: "ns"}, Spec: corev1.LimitRangeSpec{Limits: items}}
}

func lrContainer(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func lrPod(containers []corev1.Container, init ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: containers, InitContainers: init}}
}

func TestLimitRangerDefaults(t *testing.T) {
	t.Parallel()
	defaults := lrRange(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer,
		Default: rl("cpu", "500m", "memory", "256Mi"), DefaultRequest: rl("cpu", "100m", "memory", "128Mi")})
	tests := []struct {
		name       string
		pod        *corev1.Pod
		want       []corev1.ResourceRequirements // containers then init containers
		annotation string
	}{
		{
			name: "fills everything",
			pod:  lrPod([]corev1.Container{lrContainer("app", nil, nil)}, lrContainer("setup", nil, nil)),
			want: []corev1.ResourceRequirements{
				{Requests: rl("cpu", "100m", "memory", "128Mi"), Limits: rl("cpu", "500m", "memory", "256Mi")},
				{Requests: rl("cpu", "100m", "memory", "128Mi"), Limits: rl("cpu", "500m", "memory", "256Mi")},
			},
			annotation: "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app; " +
				"cpu, memory request for init container setup; cpu, memory limit for init container setup",
		},
		{
			name: "keeps what the container sets",
			pod:  lrPod([]corev1.Container{lrContainer("app", rl("cpu", "50m"), rl("cpu", "1", "memory", "1Gi"))}),
			want: []corev1.ResourceRequirements{
				{Requests: rl("cpu", "50m", "memory", "128Mi"), Limits: rl("cpu", "1", "memory", "1Gi")},
			},
			annotation: "LimitRanger plugin set: memory request for container app",
		},
		{
			name: "nothing to set",
			pod:  lrPod([]corev1.Container{lrContainer("app", rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))}),
			want: []corev1.ResourceRequirements{
				{Requests: rl("cpu", "1", "memory", "1Gi"), Limits: rl("cpu", "1", "memory", "1Gi")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := rqRequest(auth.Create, "pods", "x", tt.pod, nil)
			if err := NewLimitRanger(lrLister{ranges: []*corev1.LimitRange{defaults}}).Admit(context.Background(), req); err != nil {
				t.Fatalf("Admit: %v", err)
			}
			var got []corev1.ResourceRequirements
			for _, c := range append(append([]corev1.Container(nil), tt.pod.Spec.Containers...), tt.pod.Spec.InitContainers...) {
				got = append(got, c.Resources)
			}
			if !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("resources = %v, want %v", got, tt.want)
			}
			if a := tt.pod.Annotations[LimitRangerAnnotation]; a != tt.annotation {
				t.Errorf("annotation = %q, want %q", a, tt.annotation)
			}
		})
	}
}

func TestLimitRangerLimits(t *testing.T) {
	t.Parallel()
	container := func(item corev1.LimitRangeItem) corev1.LimitRangeItem {
		item.Type = corev1.LimitTypeContainer
		return item
	}
	podItem := func(item corev1.LimitRangeItem) corev1.LimitRangeItem { item.Type = corev1.LimitTypePod; return item }
	tests := []struct {
		name    string
		item    corev1.LimitRangeItem
		pod     *corev1.Pod
		wantErr string
	}{
		{"within max", container(corev1.LimitRangeItem{Max: rl("cpu", "500m")}),
			lrPod([]corev1.Container{lrContainer("a", rl("cpu", "100m"), rl("cpu", "500m"))}), ""},
		{"limit over max", container(corev1.LimitRangeItem{Max: rl("cpu", "500m")}),
			lrPod([]corev1.Container{lrContainer("a", rl("cpu", "100m"), rl("cpu", "1"))}),
			`pods "x" is forbidden: maximum cpu usage per Container is 500m, but limit is 1`},
		{"no limit under a max", container(corev1.LimitRangeItem{Max: rl("memory", "1Gi")}),
			lrPod([]corev1.Container{lrContainer("a", nil, nil)}),
			`pods "x" is forbidden: maximum memory usage per Container is 1Gi.  No limit is specified`},
		{"request under min", container(corev1.LimitRangeItem{Min: rl("cpu", "200m")}),
			lrPod([]corev1.Container{lrContainer("a", rl("cpu", "100m"), nil)}),
			`pods "x" is forbidden: minimum cpu usage per Container is 200m, but request is 100m`},
		{"init container checked too", container(corev1.LimitRangeItem{Min: rl("cpu", "200m")}),
			lrPod([]corev1.Container{lrContainer("a", rl("cpu", "300m"), nil)}, lrContainer("i", nil, nil)),
			`pods "x" is forbidden: minimum cpu usage per Container is 200m.  No request is specified`},
		{"ratio", container(corev1.LimitRangeItem{MaxLimitRequestRatio: rl("cpu", "2")}),
			lrPod([]corev1.Container{lrContainer("a", rl("cpu", "100m"), rl("cpu", "300m"))}),
			`pods "x" is forbidden: cpu max limit to request ratio per Container is 2, but provided ratio is 3.000000`},
		{"ratio without a request", container(corev1.LimitRangeItem{MaxLimitRequestRatio: rl("cpu", "2")}),
			lrPod([]corev1.Container{lrContainer("a", nil, rl("cpu", "300m"))}),
			`pods "x" is forbidden: cpu max limit to request ratio per Container is 2, but no request is specified or request is 0`},
		{"several violations", container(corev1.LimitRangeItem{Max: rl("cpu", "1", "memory", "1Gi")}),
			lrPod([]corev1.Container{lrContainer("a", nil, rl("cpu", "2", "memory", "2Gi"))}),
			`pods "x" is forbidden: [maximum cpu usage per Container is 1, but limit is 2, maximum memory usage per Container is 1Gi, but limit is 2Gi]`},
		{"pod total over max", podItem(corev1.LimitRangeItem{Max: rl("cpu", "1")}),
			lrPod([]corev1.Container{lrContainer("a", rl("cpu", "600m"), rl("cpu", "600m")), lrContainer("b", rl("cpu", "600m"), rl("cpu", "600m"))}),
			`pods "x" is forbidden: maximum cpu usage per Pod is 1, but limit is 1200m`},
		{"pod total counts the largest init container", podItem(corev1.LimitRangeItem{Min: rl("memory", "1Gi")}),
			lrPod([]corev1.Container{lrContainer("a", rl("memory", "100Mi"), nil)}, lrContainer("i", rl("memory", "2Gi"), nil)), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := NewLimitRanger(lrLister{ranges: []*corev1.LimitRange{lrRange(tt.item)}}).Admit(context.Background(), rqRequest(auth.Create, "pods", "x", tt.pod, nil))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Admit: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Admit = %v, want %q", err, tt.wantErr)
			}
			if !apierrors.IsForbidden(err) {
				t.Errorf("Admit = %v, want a 403", err)
			}
		})
	}
}

// TestLimitRangerDefaultsThenLimits: the defaults a range sets are checked
// against its own max.
func TestLimitRangerDefaultsThenLimits(t *testing.T) {
	t.Parallel()
	lr := lrRange(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: rl("cpu", "2"), Max: rl("cpu", "1")})
	err := NewLimitRanger(lrLister{ranges: []*corev1.LimitRange{lr}}).Admit(context.Background(),
		rqRequest(auth.Create, "pods", "x", lrPod([]corev1.Container{lrContainer("a", nil, nil)}), nil))
	if want := `pods "x" is forbidden: maximum cpu usage per Container is 1, but limit is 2`; err == nil || err.Error() != want {
		t.Fatalf("Admit = %v, want %q", err, want)
	}
}

func TestLimitRangerClaims(t *testing.T) {
	t.Parallel()
	lr := lrRange(corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim, Min: rl("storage", "1Gi"), Max: rl("storage", "2Gi")})
	claim := func(size string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns"}}
		if size != "" {
			c.Spec.Resources.Requests = rl("storage", size)
		}
		return c
	}
	tests := []struct {
		size, wantErr string
		op            auth.Operation
	}{
		{"1Gi", "", auth.Create},
		{"10Gi", `persistentvolumeclaims "data" is forbidden: maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 10Gi`, auth.Create},
		{"500Mi", `persistentvolumeclaims "data" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi`, auth.Create},
		{"3Gi", `persistentvolumeclaims "data" is forbidden: maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 3Gi`, auth.Update},
		{"", `persistentvolumeclaims "data" is forbidden: [minimum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified, maximum storage usage per PersistentVolumeClaim is 2Gi.  No request is specified]`, auth.Create},
	}
	for _, tt := range tests {
		t.Run(string(tt.op)+" "+tt.size, func(t *testing.T) {
			t.Parallel()
			var old *corev1.PersistentVolumeClaim
			if tt.op == auth.Update {
				old = claim("1Gi")
			}
			req := rqRequest(tt.op, "persistentvolumeclaims", "data", claim(tt.size), nil)
			if old != nil {
				req.OldObject = old
			}
			err := NewLimitRanger(lrLister{ranges: []*corev1.LimitRange{lr}}).Admit(context.Background(), req)
			if got := lrErrString(err); got != tt.wantErr {
				t.Errorf("Admit = %q, want %q", got, tt.wantErr)
			}
		})
	}
}

func lrErrString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestLimitRangerSkips(t *testing.T) {
	t.Parallel()
	lister := lrLister{ranges: []*corev1.LimitRange{lrRange(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("cpu", "1"), Default: rl("cpu", "1")})}}
	big := func() *corev1.Pod { return lrPod([]corev1.Container{lrContainer("a", nil, rl("cpu", "4"))}) }
	deleting := big()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	tests := []struct {
		name string
		req  *auth.AdmissionRequest
	}{
		{"pod update", rqRequest(auth.Update, "pods", "x", big(), big())},
		{"subresource", func() *auth.AdmissionRequest {
			r := rqRequest(auth.Create, "pods", "x", big(), nil)
			r.Subresource = "binding"
			return r
		}()},
		{"other resources", rqRequest(auth.Create, "services", "x", &corev1.Service{}, nil)},
		{"claim being deleted", rqRequest(auth.Update, "persistentvolumeclaims", "x", &corev1.PersistentVolumeClaim{},
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := NewLimitRanger(lister).Admit(context.Background(), tt.req); err != nil {
				t.Errorf("Admit: %v", err)
			}
		})
	}
	err := NewLimitRanger(lrLister{err: errors.New("boom")}).Admit(context.Background(), &auth.AdmissionRequest{
		Operation: auth.Create, Object: big(), Attributes: auth.Attributes{Resource: "pods", APIVersion: "v1", Namespace: "ns", Name: "x"}})
	if want := `pods "x" is forbidden: unable to CREATE /v1, Resource=pods at this time because there was an error enforcing limit ranges`; lrErrString(err) != want {
		t.Errorf("list failure: %q, want %q", lrErrString(err), want)
	}
}
