package printers

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// daemonSetColumns are upstream's DaemonSet columns: NAME DESIRED CURRENT
// READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE, and with -o wide
// CONTAINERS IMAGES SELECTOR.
func daemonSetColumns() []metav1.TableColumnDefinition {
	status := appsv1.DaemonSetStatus{}.SwaggerDoc()
	spec := appsv1.DaemonSetSpec{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Desired", "integer", status["desiredNumberScheduled"]),
		column("Current", "integer", status["currentNumberScheduled"]),
		column("Ready", "integer", status["numberReady"]),
		column("Up-to-date", "integer", status["updatedNumberScheduled"]),
		column("Available", "integer", status["numberAvailable"]),
		column("Node Selector", "string", corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]),
		ageColumn(),
		wideColumn("Containers", "string", containersDoc),
		wideColumn("Images", "string", imagesDoc),
		wideColumn("Selector", "string", spec["selector"]),
	}
}

func daemonSetCells(ds *appsv1.DaemonSet, now time.Time) []interface{} {
	names, images := containerCells(ds.Spec.Template.Spec.Containers)
	st := ds.Status
	return []interface{}{
		ds.Name,
		int64(st.DesiredNumberScheduled),
		int64(st.CurrentNumberScheduled),
		int64(st.NumberReady),
		int64(st.UpdatedNumberScheduled),
		int64(st.NumberAvailable),
		labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
		age(ds.CreationTimestamp, now),
		names,
		images,
		metav1.FormatLabelSelector(ds.Spec.Selector),
	}
}
