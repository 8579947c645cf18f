package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

// storageObjects: an Immediate class without a provisioner, pre-created
// hostPath volumes for it and for claims without a class, the claims, and a
// claim of the default class.
const storageObjects = `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: manual
provisioner: kubernetes.io/no-provisioner
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: static
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /srv/static}
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: manual-1
spec:
  storageClassName: manual
  persistentVolumeReclaimPolicy: Delete
  capacity: {storage: 2Gi}
  accessModes: [ReadWriteOnce, ReadOnlyMany]
  hostPath: {path: /srv/manual-1}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: plain
spec:
  storageClassName: ""
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 512Mi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: fast
spec:
  storageClassName: manual
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: waiting
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`

// storageRow returns the fields of the line of out whose first field is
// name (the columns' empty cells vanish), or nil.
func storageRow(out, name string) []string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return f
		}
	}
	return nil
}

// storageExpectRow waits until `kubectl get args` prints a row for name
// whose fields, without the trailing AGE, are want.
func storageExpectRow(t *testing.T, s *harness.Server, kubectl, name string, want []string, args ...string) string {
	t.Helper()
	var out string
	harness.Eventually(t, 60*time.Second, func() error {
		var err error
		if out, err = s.Run(t, kubectl, "", append([]string{"get"}, args...)...); err != nil {
			return err
		}
		row := storageRow(out, name)
		if len(row) != len(want)+1 || !slices.Equal(row[:len(want)], want) {
			return fmt.Errorf("row %q, want %q + AGE; output:\n%s", row, want, out)
		}
		return nil
	})
	return out
}

// storageHeader checks the first line of out is the column headers.
func storageHeader(t *testing.T, out, want string) {
	t.Helper()
	if got := strings.Join(strings.Fields(strings.SplitN(out, "\n", 2)[0]), " "); got != want {
		t.Errorf("header %q, want %q", got, want)
	}
}

// storageClaimEvent waits for an Event of reason on the claim.
func storageClaimEvent(t *testing.T, cs kubernetes.Interface, claim, reason string) {
	t.Helper()
	harness.Eventually(t, 60*time.Second, func() error {
		evs, err := cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + claim})
		if err != nil {
			return err
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Reason == reason && e.InvolvedObject.Kind == "PersistentVolumeClaim" {
				return nil
			}
			seen = append(seen, e.Reason)
		}
		return fmt.Errorf("no %s event for claim %s (seen %v)", reason, claim, seen)
	})
}

// TestIntegrationStorageControlPlane, with the stock kubectl and a hollow
// node: `kubectl get sc` shows the default class local-path; a claim of it
// stays Pending, waiting for its first consumer; pre-created volumes bind
// a class-less claim and an Immediate-class claim; kubectl prints pv, pvc
// and sc with upstream's columns (also kubectl 1.33); a claim in use by a
// pod stays Terminating until the pod is gone, then its Retain volume is
// Released while a Delete volume is deleted with its claim.
func TestIntegrationStorageControlPlane(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "")
	cs := s.Clientset(t)
	kubectl := harness.Kubectl(t)
	ctx := context.Background()
	harness.StartHollowNodes(t, s, 1)

	out := storageExpectRow(t, s, kubectl, "local-path", []string{"local-path", "(default)", "kubebus.io/local-path", "Delete", "WaitForFirstConsumer", "false"}, "sc")
	storageHeader(t, out, "NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE")

	s.MustRun(t, kubectl, storageObjects, "apply", "-f", "-")
	// Claims without a class bind pre-created volumes without one; an
	// Immediate class binds at once; the default class waits for a pod.
	storageExpectRow(t, s, kubectl, "persistentvolume/static",
		[]string{"persistentvolume/static", "1Gi", "RWO", "Retain", "Bound", "default/plain", "<unset>"}, "pv,pvc")
	storageExpectRow(t, s, kubectl, "persistentvolume/manual-1",
		[]string{"persistentvolume/manual-1", "2Gi", "RWO,ROX", "Delete", "Bound", "default/fast", "manual", "<unset>"}, "pv,pvc")
	storageExpectRow(t, s, kubectl, "persistentvolumeclaim/plain",
		[]string{"persistentvolumeclaim/plain", "Bound", "static", "1Gi", "RWO", "<unset>"}, "pv,pvc")
	storageExpectRow(t, s, kubectl, "persistentvolumeclaim/fast",
		[]string{"persistentvolumeclaim/fast", "Bound", "manual-1", "2Gi", "RWO,ROX", "manual", "<unset>"}, "pv,pvc")
	storageClaimEvent(t, cs, "waiting", "WaitForFirstConsumer")
	out = storageExpectRow(t, s, kubectl, "waiting", []string{"waiting", "Pending", "local-path", "<unset>"}, "pvc")
	storageHeader(t, out, "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE")
	out = s.MustRun(t, kubectl, "", "get", "pv", "-o", "wide")
	storageHeader(t, out, "NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS VOLUMEATTRIBUTESCLASS REASON AGE VOLUMEMODE")
	if k := harness.PinnedKubectl(t, "1.33"); k != "" {
		storageExpectRow(t, s, k, "persistentvolumeclaim/fast",
			[]string{"persistentvolumeclaim/fast", "Bound", "manual-1", "2Gi", "RWO,ROX", "manual", "<unset>"}, "pv,pvc,sc")
	}
	for _, name := range []string{"plain", "fast", "waiting"} {
		c, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(c.Finalizers, "kubernetes.io/pvc-protection") {
			t.Errorf("claim %s finalizers %v", name, c.Finalizers)
		}
	}

	// A pod on the node uses plain: deleting the claim leaves it
	// Terminating while the pod is there.
	user := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "user"},
		Spec: corev1.PodSpec{NodeName: "hollow-0", Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "plain"}}}}},
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, user, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.MustRun(t, kubectl, "", "delete", "pvc", "plain", "fast", "--wait=false")
	storageExpectRow(t, s, kubectl, "plain", []string{"plain", "Terminating", "static", "1Gi", "RWO", "<unset>"}, "pvc")
	// fast, in no pod, goes; its Delete volume goes with it. The
	// protection controller saw plain's deletion before fast's, and kept it.
	harness.Eventually(t, 60*time.Second, func() error {
		out, err := s.Run(t, kubectl, "", "get", "pv,pvc", "-o", "name")
		if err != nil {
			return err
		}
		if strings.Contains(out, "fast") || strings.Contains(out, "manual-1") {
			return fmt.Errorf("fast or manual-1 still there:\n%s", out)
		}
		return nil
	})
	storageExpectRow(t, s, kubectl, "plain", []string{"plain", "Terminating", "static", "1Gi", "RWO", "<unset>"}, "pvc")

	s.MustRun(t, kubectl, "", "delete", "pod", "user", "--grace-period=0", "--force")
	harness.Eventually(t, 60*time.Second, func() error {
		out, err := s.Run(t, kubectl, "", "get", "pvc", "-o", "name")
		if err != nil {
			return err
		}
		if strings.Contains(out, "plain") {
			return fmt.Errorf("plain still there")
		}
		return nil
	})
	storageExpectRow(t, s, kubectl, "static", []string{"static", "1Gi", "RWO", "Retain", "Released", "default/plain", "<unset>"}, "pv")
}

// TestIntegrationStorageRealNode: on the all-in-one's real node, a pod
// writes into a claim of the default class, which the scheduler, the
// local-path provisioner and the binder make a node-local volume for; the
// file survives the pod, and a new pod reads it. Deleting the claim while
// a pod uses it leaves it Terminating; once the pod is gone the claim goes
// and its volume (reclaim policy Delete) is deleted; the directory stays on
// the node, as documented.
func TestIntegrationStorageRealNode(t *testing.T) {
	s, node := harness.StartServerWithNode(t)
	cs := s.Clientset(t)
	kubectl := harness.Kubectl(t)
	ctx := context.Background()
	s.MustRun(t, kubectl, `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: notes
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 64Mi}}
`, "apply", "-f", "-")
	storageClaimEvent(t, cs, "notes", "WaitForFirstConsumer")

	pod := func(name, script string) *corev1.Pod {
		zero := int64(0)
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: &zero,
				Containers: []corev1.Container{{Name: "main", Image: "busybox:latest", ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"sh", "-c", script}, VolumeMounts: []corev1.VolumeMount{{Name: "notes", MountPath: "/notes"}}}},
				Volumes: []corev1.Volume{{Name: "notes", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "notes"}}}}},
		}
	}
	phase := func(name string, want corev1.PodPhase) {
		t.Helper()
		harness.Eventually(t, 120*time.Second, func() error {
			p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Status.Phase != want {
				return fmt.Errorf("pod %s is %s, want %s", name, p.Status.Phase, want)
			}
			return nil
		})
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("first", "echo kept > /notes/file"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	phase("first", corev1.PodSucceeded)
	c, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "notes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Status.Phase != corev1.ClaimBound || c.Annotations["volume.kubernetes.io/selected-node"] != node.Name {
		t.Fatalf("claim %s, selected node %q", c.Status.Phase, c.Annotations["volume.kubernetes.io/selected-node"])
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(s.Dir, "storage", pv.Name+"_default_notes")
	if pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != dir || pv.Annotations["pv.kubernetes.io/provisioned-by"] != "kubebus.io/local-path" {
		t.Fatalf("volume %s: %+v %v", pv.Name, pv.Spec.PersistentVolumeSource, pv.Annotations)
	}
	s.MustRun(t, kubectl, "", "delete", "pod", "first")

	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("second", "cat /notes/file; sleep 3600"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	phase("second", corev1.PodRunning)
	harness.Eventually(t, 30*time.Second, func() error {
		out, err := s.Run(t, kubectl, "", "logs", "second")
		if err != nil {
			return err
		}
		if out != "kept\n" {
			return fmt.Errorf("second read %q", out)
		}
		return nil
	})

	// In use: Terminating until the pod is gone.
	s.MustRun(t, kubectl, "", "delete", "pvc", "notes", "--wait=false")
	storageExpectRow(t, s, kubectl, "notes", []string{"notes", "Terminating", pv.Name, "64Mi", "RWO", "local-path", "<unset>"}, "pvc")
	s.MustRun(t, kubectl, "", "delete", "pod", "second")
	harness.Eventually(t, 90*time.Second, func() error {
		out, err := s.Run(t, kubectl, "", "get", "pv,pvc", "-o", "name")
		if err != nil {
			return err
		}
		if strings.Contains(out, "notes") || strings.Contains(out, pv.Name) {
			return fmt.Errorf("still there:\n%s", out)
		}
		return nil
	})
	if b, err := os.ReadFile(filepath.Join(dir, "file")); err != nil || string(b) != "kept\n" {
		t.Errorf("the volume's directory on the node: %q %v (it is left in place)", b, err)
	}
}
