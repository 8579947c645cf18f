package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationWorkloadKindsEverywhere: the workload and storage kinds
// are served like every other resource: `kubectl get all` lists the
// namespaced workloads, every kind is on the bus (the tap prints its
// changes), and owner references to them feed the garbage collector.
func TestIntegrationWorkloadKindsEverywhere(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "")
	cs := s.Clientset(t)
	ctx := context.Background()
	const ns = "default"
	zero := int32(0)
	labels := map[string]string{"app": "kinds"}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	jobTemplate := corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"true"}}}}}
	suspend := true

	// Objects that no controller acts on: no replicas, suspended, a
	// DaemonSet whose node selector matches no node.
	sts, err := cs.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kinds-sts"},
		Spec: appsv1.StatefulSetSpec{Replicas: &zero, ServiceName: "kinds", Template: template,
			Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dsTemplate := template.DeepCopy()
	dsTemplate.Spec.NodeSelector = map[string]string{"kinds": "no-such-node"}
	if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kinds-ds"},
		Spec:       appsv1.DaemonSetSpec{Template: *dsTemplate, Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cj, err := cs.BatchV1().CronJobs(ns).Create(ctx, &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "kinds-cj"},
		Spec: batchv1.CronJobSpec{Schedule: "0 0 1 1 *", Suspend: &suspend,
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobTemplate}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A Job the CronJob owns, as its controller would make it.
	job, err := cs.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "kinds-job", OwnerReferences: []metav1.OwnerReference{
			*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))}},
		Spec: batchv1.JobSpec{Suspend: &suspend, Template: jobTemplate},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A ControllerRevision the StatefulSet owns.
	if _, err := cs.AppsV1().ControllerRevisions(ns).Create(ctx, &appsv1.ControllerRevision{
		// Labelled as the set's selector: the controller releases owned
		// revisions that do not match it, as upstream.
		ObjectMeta: metav1.ObjectMeta{Name: "kinds-sts-manual", Labels: labels, OwnerReferences: []metav1.OwnerReference{
			*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
		Revision: 99, Data: runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace"}}}`)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "kinds-pv"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              "kinds-manual",
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/kinds-pv"}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	className := "kinds-other"
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "kinds-pvc"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &className,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: className},
		Provisioner: "example.com/none",
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	minAvailable := intstr.FromInt32(1)
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "kinds-pdb"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// kubectl get all: the workloads are in the "all" category.
	all := s.MustRun(t, harness.Kubectl(t), "", "get", "all", "-n", ns, "-o", "name")
	for _, want := range []string{"statefulset.apps/kinds-sts", "daemonset.apps/kinds-ds", "job.batch/kinds-job", "cronjob.batch/kinds-cj"} {
		if !strings.Contains(all, want) {
			t.Errorf("kubectl get all does not list %s:\n%s", want, all)
		}
	}
	// kubectl get by short names.
	short := s.MustRun(t, harness.Kubectl(t), "", "get", "sts,ds,job,cronjob,pv,pvc,sc,pdb,controllerrevisions", "-n", ns, "-o", "name")
	for _, want := range []string{"statefulset.apps/kinds-sts", "persistentvolume/kinds-pv", "persistentvolumeclaim/kinds-pvc",
		"storageclass.storage.k8s.io/kinds-other", "poddisruptionbudget.policy/kinds-pdb", "controllerrevision.apps/kinds-sts-manual"} {
		if !strings.Contains(short, want) {
			t.Errorf("kubectl get sts,ds,job,cronjob,pv,pvc,sc,pdb,controllerrevisions does not list %s:\n%s", want, short)
		}
	}

	// The bus: the tap prints each kind's ADDED event.
	url := s.BusURL(t)
	t.Setenv("KUBECONFIG", s.Kubeconfig)
	for res, name := range map[string]string{
		"sts": "kinds-sts", "ds": "kinds-ds", "apps/controllerrevisions": "kinds-sts-manual", "jobs": "kinds-job", "cj": "kinds-cj",
		"pv": "kinds-pv", "pvc": "kinds-pvc", "sc": className, "pdb": "kinds-pdb",
	} {
		harness.Eventually(t, 30*time.Second, func() error {
			for _, rec := range tapJSON(t, url, "--resource", res) {
				if rec["name"] == name && rec["type"] == "ADDED" {
					return nil
				}
			}
			return fmt.Errorf("the tap of %s has no ADDED %s", res, name)
		})
	}

	// The garbage collector follows owner references to the new kinds.
	background := metav1.DeletePropagationBackground
	if err := cs.BatchV1().CronJobs(ns).Delete(ctx, cj.Name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	if err := cs.AppsV1().StatefulSets(ns).Delete(ctx, sts.Name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 60*time.Second, func() error {
		if _, err := cs.BatchV1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the CronJob's Job: %v, want NotFound", err)
		}
		if _, err := cs.AppsV1().ControllerRevisions(ns).Get(ctx, "kinds-sts-manual", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the StatefulSet's ControllerRevision: %v, want NotFound", err)
		}
		return nil
	})
}
