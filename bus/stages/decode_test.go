package stages

import (
	"encoding/json"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/lifecycle"
	"github.com/kubebus/kubebus/internal/storedobj"
)

// The slim decode of a pod reaches the same stages as the whole pod, at
// every step of its life.
func TestDecodeStagePod(t *testing.T) {
	started := corev1.ContainerStatus{Name: "a", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}
	base := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "i"}, {Name: "b", Image: "i"}},
			Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
	}
	steps := []func(p *corev1.Pod){
		func(p *corev1.Pod) {},
		func(p *corev1.Pod) { p.Spec.NodeName = "n1" },
		func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue})
		},
		func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{started} },
		func(p *corev1.Pod) {
			b := started
			b.Name = "b"
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, b)
		},
		func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
		},
	}
	pod := base.DeepCopy()
	var last int
	for i, step := range steps {
		step(pod)
		data, err := json.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeStagePod(data)
		if err != nil {
			t.Fatal(err)
		}
		want := lifecycle.PodReached(pod)
		if g := lifecycle.PodReached(got); !slices.Equal(g, want) {
			t.Errorf("step %d: reached %v, want %v", i, g, want)
		}
		pb, err := storedobj.EncodeProtobuf(pod, corev1.SchemeGroupVersion.WithKind("Pod"))
		if err != nil {
			t.Fatal(err)
		}
		e := Event{Key: bus.ObjectKey{Resource: "pods", Namespace: "ns", Name: "p"}}
		if err := decodeObject(&e, pb); err != nil {
			t.Fatalf("step %d, protobuf: %v", i, err)
		}
		if g := lifecycle.PodReached(e.Pod); !slices.Equal(g, want) {
			t.Errorf("step %d, protobuf: reached %v, want %v", i, g, want)
		}
		if len(want) < last {
			t.Fatalf("step %d: the test's pod went back", i)
		}
		last = len(want)
	}
	if last != len(lifecycle.PodSteps) {
		t.Errorf("the steps reach %d of %d stages", last, len(lifecycle.PodSteps))
	}
	if _, err := decodeStagePod([]byte(`{"spec":{"containers":"no"}}`)); err == nil {
		t.Error("a pod of the wrong shape decoded")
	}
}
