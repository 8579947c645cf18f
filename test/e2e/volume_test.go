package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

const selectedNodeAnnotation = "volume.kubernetes.io/selected-node"

// claimPod is a busybox pod running script with the claim mounted at
// /data; it runs once.
func claimPod(name, claim string, readOnly bool, script string) *corev1.Pod {
	zero := int64(0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name: "main", Image: "busybox:latest", ImagePullPolicy: corev1.PullIfNotPresent,
				Command:      []string{"sh", "-c", script},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: readOnly}}}},
		},
	}
}

func claimOf(name, class, volume string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			VolumeName:       volume,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
		},
	}
}

// waitPodPhase waits until the pod reaches phase and returns it.
func waitPodPhase(t *testing.T, cs kubernetes.Interface, name string, phase corev1.PodPhase, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	harness.Eventually(t, timeout, func() error {
		p, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod = p
		if p.Status.Phase != phase {
			return fmt.Errorf("pod %s is %s (%s), want %s", name, p.Status.Phase, podScheduledMessage(p), phase)
		}
		return nil
	})
	return pod
}

func podScheduledMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Message
		}
	}
	return ""
}

func podLogs(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	b, err := cs.CoreV1().Pods("default").GetLogs(name, &corev1.PodLogOptions{}).DoRaw(context.Background())
	if err != nil {
		t.Fatalf("logs of %s: %v", name, err)
	}
	return string(b)
}

// waitObjectEvent waits for an Event of reason about the named object whose
// message contains text, and returns it.
func waitObjectEvent(t *testing.T, cs kubernetes.Interface, kind, name, reason, text string, timeout time.Duration) corev1.Event {
	t.Helper()
	var found corev1.Event
	harness.Eventually(t, timeout, func() error {
		evs, err := cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		var seen []string
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind != kind || e.InvolvedObject.Name != name {
				continue
			}
			if e.Reason == reason && strings.Contains(e.Message, text) {
				found = e
				return nil
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return fmt.Errorf("no %s event for %s %s with %q; seen %q", reason, kind, name, text, seen)
	})
	return found
}

// TestIntegrationVolumeLocalPath: on the all-in-one's real node, a claim of
// the default class local-path (WaitForFirstConsumer) stays unbound until
// a pod using it is scheduled; the scheduler then selects the pod's node
// for it, the local-path provisioner makes a hostPath volume pinned to
// that node under <data-dir>/storage, the binder binds it, and only then
// is the pod bound and its container started with the volume mounted. A
// second pod of the same claim (read-only) reads what the first wrote. A
// local volume made by hand binds to a claim of a WaitForFirstConsumer
// class without provisioner once the claim's pod is placed.
// A claim bound to a volume pinned to a node that does not exist keeps its
// pod Pending with a volume node affinity conflict; a missing claim keeps
// its pod Pending too; and a pod placed on the node by hand with an
// unbound claim waits in ContainerCreating with a FailedMount event.
func TestIntegrationVolumeLocalPath(t *testing.T) {
	s, node := harness.StartServerWithNode(t)
	cs := s.Clientset(t)
	ctx := context.Background()

	// The default class, as the contract with the provisioner says.
	var sc *storagev1.StorageClass
	harness.Eventually(t, 60*time.Second, func() error {
		var err error
		sc, err = cs.StorageV1().StorageClasses().Get(ctx, "local-path", metav1.GetOptions{})
		return err
	})
	if sc.Provisioner != "kubebus.io/local-path" || sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer ||
		sc.ReclaimPolicy == nil || *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Fatalf("StorageClass local-path: provisioner %q mode %v reclaim %v", sc.Provisioner, sc.VolumeBindingMode, sc.ReclaimPolicy)
	}

	// The claim waits for its first consumer: the binder says so, and
	// nothing selected a node or bound it.
	if _, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, claimOf("data", "local-path", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitObjectEvent(t, cs, "PersistentVolumeClaim", "data", "WaitForFirstConsumer", "", 60*time.Second)
	pvc, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pvc.Status.Phase == corev1.ClaimBound || pvc.Spec.VolumeName != "" || pvc.Annotations[selectedNodeAnnotation] != "" {
		t.Fatalf("claim before any pod: phase %s volume %q selected node %q", pvc.Status.Phase, pvc.Spec.VolumeName, pvc.Annotations[selectedNodeAnnotation])
	}

	// The first pod writes into it.
	writer := claimPod("writer", "data", false, "echo written-by-writer > /data/file && cat /data/file")
	if _, err := cs.CoreV1().Pods("default").Create(ctx, writer, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := waitPodPhase(t, cs, "writer", corev1.PodSucceeded, 120*time.Second)
	if w.Spec.NodeName != node.Name {
		t.Fatalf("writer ran on %q, want %q", w.Spec.NodeName, node.Name)
	}
	if got := strings.TrimSpace(podLogs(t, cs, "writer")); got != "written-by-writer" {
		t.Fatalf("writer's output %q", got)
	}
	pvc, err = cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Annotations[selectedNodeAnnotation] != node.Name {
		t.Fatalf("claim after the pod: phase %s, selected node %q (want Bound, %q)", pvc.Status.Phase, pvc.Annotations[selectedNodeAnnotation], node.Name)
	}
	// The claim was bound before the pod: the Scheduled event comes after
	// the claim's volume exists.
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Name != "pvc-"+string(pvc.UID) || pv.Spec.HostPath == nil {
		t.Fatalf("volume %s: %+v", pv.Name, pv.Spec.PersistentVolumeSource)
	}
	wantDir := filepath.Join(s.Dir, "storage", pv.Name+"_default_data")
	if pv.Spec.HostPath.Path != wantDir {
		t.Errorf("volume path %q, want %q", pv.Spec.HostPath.Path, wantDir)
	}
	if na := pv.Spec.NodeAffinity; na == nil || na.Required == nil || len(na.Required.NodeSelectorTerms) != 1 ||
		len(na.Required.NodeSelectorTerms[0].MatchExpressions) != 1 ||
		na.Required.NodeSelectorTerms[0].MatchExpressions[0].Key != corev1.LabelHostname ||
		fmt.Sprint(na.Required.NodeSelectorTerms[0].MatchExpressions[0].Values) != "["+node.Name+"]" {
		t.Errorf("volume node affinity %+v, want hostname In [%s]", pv.Spec.NodeAffinity, node.Name)
	}
	if b, err := os.ReadFile(filepath.Join(pv.Spec.HostPath.Path, "file")); err != nil || string(b) != "written-by-writer\n" {
		t.Errorf("the file on the node: %q %v", b, err)
	}
	scheduled := waitObjectEvent(t, cs, "Pod", "writer", "Scheduled", node.Name, 30*time.Second)
	if pv.CreationTimestamp.After(eventTime(scheduled)) {
		t.Errorf("volume created at %v, after the pod was scheduled at %v", pv.CreationTimestamp, eventTime(scheduled))
	}

	// The writer goes; a reader of the same claim, read-only, finds the
	// file and cannot write.
	zero := int64(0)
	if err := cs.CoreV1().Pods("default").Delete(ctx, "writer", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 60*time.Second, func() error {
		if _, err := cs.CoreV1().Pods("default").Get(ctx, "writer", metav1.GetOptions{}); err == nil {
			return fmt.Errorf("writer still there")
		}
		return nil
	})
	reader := claimPod("reader", "data", true, "cat /data/file; if touch /data/other 2>/dev/null; then echo writable; else echo read-only; fi")
	if _, err := cs.CoreV1().Pods("default").Create(ctx, reader, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := waitPodPhase(t, cs, "reader", corev1.PodSucceeded, 90*time.Second)
	if r.Spec.NodeName != node.Name {
		t.Fatalf("reader ran on %q, want %q", r.Spec.NodeName, node.Name)
	}
	if got := podLogs(t, cs, "reader"); got != "written-by-writer\nread-only\n" {
		t.Fatalf("reader's output %q", got)
	}

	// A local volume made by hand for the node, of a WaitForFirstConsumer
	// class without a provisioner: a claim of that class binds to it once
	// its pod is placed there.
	manual := storagev1.VolumeBindingWaitForFirstConsumer
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local-static"},
		Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &manual}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	staticDir := filepath.Join(s.Dir, "static")
	if err := os.MkdirAll(staticDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(staticDir, "file"), []byte("made-by-hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	static := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "static"},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName:              "local-static",
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: staticDir}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node.Name}}},
			}}}},
		},
	}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, static, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, claimOf("static", "local-static", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, claimPod("local-reader", "static", false, "cat /data/file"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodPhase(t, cs, "local-reader", corev1.PodSucceeded, 90*time.Second)
	if got := podLogs(t, cs, "local-reader"); got != "made-by-hand\n" {
		t.Fatalf("local-reader's output %q", got)
	}
	if c, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "static", metav1.GetOptions{}); err != nil || c.Spec.VolumeName != "static" {
		t.Fatalf("claim static: %v %v", c, err)
	}

	// A volume pinned to a node that does not exist, and a claim bound to
	// it: its pod cannot be placed.
	pinned := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pinned"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(s.Dir, "pinned")}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"no-such-node"}}},
			}}}},
		},
	}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pinned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, claimOf("pinned", "", "pinned"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 60*time.Second, func() error {
		c, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "pinned", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("claim pinned is %s", c.Status.Phase)
		}
		return nil
	})
	if _, err := cs.CoreV1().Pods("default").Create(ctx, claimPod("stranded", "pinned", false, "true"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pendingWith(t, cs, "stranded", "volume node affinity conflict")

	// A claim that does not exist.
	if _, err := cs.CoreV1().Pods("default").Create(ctx, claimPod("claimless", "nope", false, "true"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pendingWith(t, cs, "claimless", `persistentvolumeclaim "nope" not found`)

	// A pod put on the node by hand (no scheduler) with a claim nobody
	// bound: the kubelet does not start it and says why.
	if _, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, claimOf("waiting", "local-path", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	direct := claimPod("direct", "waiting", false, "true")
	direct.Spec.NodeName = node.Name
	if _, err := cs.CoreV1().Pods("default").Create(ctx, direct, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitObjectEvent(t, cs, "Pod", "direct", "FailedMount", "unmounted volumes=[data]", 60*time.Second)
	d, err := cs.CoreV1().Pods("default").Get(ctx, "direct", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.Phase != corev1.PodPending {
		t.Errorf("pod direct is %s, want Pending", d.Status.Phase)
	}
}

// pendingWith waits until the pod's PodScheduled condition is False with a
// message containing text, and checks it was not bound.
func pendingWith(t *testing.T, cs kubernetes.Interface, name, text string) {
	t.Helper()
	harness.Eventually(t, 60*time.Second, func() error {
		p, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Spec.NodeName != "" {
			t.Fatalf("pod %s was bound to %s", name, p.Spec.NodeName)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && strings.Contains(c.Message, text) {
				return nil
			}
		}
		return fmt.Errorf("pod %s: PodScheduled %q, want one with %q", name, podScheduledMessage(p), text)
	})
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}
