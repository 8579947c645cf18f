package printers

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// statefulSetColumns are upstream's StatefulSet columns: NAME READY AGE,
// and with -o wide CONTAINERS IMAGES.
func statefulSetColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Ready", "string", "Number of the pod with ready state"),
		ageColumn(),
		wideColumn("Containers", "string", containersDoc),
		wideColumn("Images", "string", imagesDoc),
	}
}

func statefulSetCells(s *appsv1.StatefulSet, now time.Time) []interface{} {
	names, images := containerCells(s.Spec.Template.Spec.Containers)
	return []interface{}{
		s.Name,
		fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, replicas(s.Spec.Replicas)),
		age(s.CreationTimestamp, now),
		names,
		images,
	}
}

// controllerRevisionColumns are upstream's ControllerRevision columns:
// NAME CONTROLLER REVISION AGE.
func controllerRevisionColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Controller", "string", "Controller of the object"),
		column("Revision", "integer", appsv1.ControllerRevision{}.SwaggerDoc()["revision"]),
		ageColumn(),
	}
}

// controllerRevisionCells names the controller as kind.group/name
// (statefulset.apps/web), "<none>" for an orphan.
func controllerRevisionCells(c *appsv1.ControllerRevision, now time.Time) []interface{} {
	controller := "<none>"
	if ref := metav1.GetControllerOfNoCopy(c); ref != nil {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
		if err != nil || gk.Empty() {
			controller = ref.Name
		} else {
			controller = strings.ToLower(gk.String()) + "/" + ref.Name
		}
	}
	return []interface{}{c.Name, controller, c.Revision, age(c.CreationTimestamp, now)}
}
