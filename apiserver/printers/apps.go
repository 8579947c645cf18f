package printers

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Printers for apps/v1 workloads.

const (
	containersDoc = "Names of the containers in the pod template."
	imagesDoc     = "Images of the containers in the pod template."
)

func deploymentColumns() []metav1.TableColumnDefinition {
	status := appsv1.DeploymentStatus{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Ready", "string", "Ready replicas out of desired replicas."),
		column("Up-to-date", "string", status["updatedReplicas"]),
		column("Available", "string", status["availableReplicas"]),
		ageColumn(),
		wideColumn("Containers", "string", containersDoc),
		wideColumn("Images", "string", imagesDoc),
		wideColumn("Selector", "string", appsv1.DeploymentSpec{}.SwaggerDoc()["selector"]),
	}
}

func deploymentCells(d *appsv1.Deployment, now time.Time) []interface{} {
	selector := "<invalid>"
	if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
		selector = s.String()
	}
	names, images := containerCells(d.Spec.Template.Spec.Containers)
	return []interface{}{
		d.Name,
		fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, replicas(d.Spec.Replicas)),
		int64(d.Status.UpdatedReplicas),
		int64(d.Status.AvailableReplicas),
		age(d.CreationTimestamp, now),
		names,
		images,
		selector,
	}
}

func replicaSetColumns() []metav1.TableColumnDefinition {
	status := appsv1.ReplicaSetStatus{}.SwaggerDoc()
	spec := appsv1.ReplicaSetSpec{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Desired", "integer", spec["replicas"]),
		column("Current", "integer", status["replicas"]),
		column("Ready", "integer", status["readyReplicas"]),
		ageColumn(),
		wideColumn("Containers", "string", containersDoc),
		wideColumn("Images", "string", imagesDoc),
		wideColumn("Selector", "string", spec["selector"]),
	}
}

func replicaSetCells(rs *appsv1.ReplicaSet, now time.Time) []interface{} {
	names, images := containerCells(rs.Spec.Template.Spec.Containers)
	return []interface{}{
		rs.Name,
		int64(replicas(rs.Spec.Replicas)),
		int64(rs.Status.Replicas),
		int64(rs.Status.ReadyReplicas),
		age(rs.CreationTimestamp, now),
		names,
		images,
		metav1.FormatLabelSelector(rs.Spec.Selector),
	}
}

// replicas dereferences spec.replicas; unset reads as 0.
func replicas(n *int32) int32 {
	if n == nil {
		return 0
	}
	return *n
}

// containerCells returns the comma-separated names and images of containers.
func containerCells(containers []corev1.Container) (names, images string) {
	n := make([]string, len(containers))
	im := make([]string, len(containers))
	for i, c := range containers {
		n[i], im[i] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(im, ",")
}
