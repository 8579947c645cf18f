package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/test/harness"
)

// BenchmarkLocalPathBind500: seconds from creating 500 claims of the
// default class local-path, each already carrying the node the scheduler
// would select, until all 500 are Bound: per claim the binder hands it to
// the provisioner, the provisioner creates a node-pinned volume, and the
// binder binds both sides (six writes). All-in-one server, its in-process
// controller-manager, no node.
func BenchmarkLocalPathBind500(b *testing.B) {
	const claims = 500
	for iter := 0; iter < b.N; iter++ {
		s := harness.StartServer(b, "")
		cs := s.Clientset(b)
		ctx := context.Background()
		// The default class exists once the provisioner runs.
		harness.Eventually(b, 30*time.Second, func() error {
			_, err := cs.StorageV1().StorageClasses().Get(ctx, "local-path", metav1.GetOptions{})
			return err
		})
		b.ResetTimer()
		start := time.Now()
		for i := range claims {
			c := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("data-%d", i),
					Annotations: map[string]string{"volume.kubernetes.io/selected-node": fmt.Sprintf("node-%d", i%10)}},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			}
			if _, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, c, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		created := time.Since(start)
		harness.Eventually(b, 5*time.Minute, func() error {
			list, err := cs.CoreV1().PersistentVolumeClaims("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			bound := 0
			for _, c := range list.Items {
				if c.Status.Phase == corev1.ClaimBound {
					bound++
				}
			}
			if bound != claims {
				return errNotYet
			}
			return nil
		})
		b.StopTimer()
		b.ReportMetric(created.Seconds(), "s-to-create-500")
		b.ReportMetric(time.Since(start).Seconds(), "s-until-500-bound")
	}
}
