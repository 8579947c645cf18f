package printers

import (
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes/scheme"
)

// Printer turns objects of one kind into table rows.
type Printer struct {
	Columns []metav1.TableColumnDefinition // Priority 0: default; 1: only with -o wide
	Cells   func(obj runtime.Object, now time.Time) ([]interface{}, error)
}

// For returns the printer for a kind; unknown kinds get NAME, AGE.
func For(gk schema.GroupKind) Printer {
	switch gk {
	case schema.GroupKind{Kind: "Pod"}:
		return Printer{Columns: podColumns(), Cells: cellsOf(podCells)}
	case schema.GroupKind{Kind: "Node"}:
		return Printer{Columns: nodeColumns(), Cells: cellsOf(nodeCells)}
	case schema.GroupKind{Kind: "Namespace"}:
		return Printer{Columns: namespaceColumns(), Cells: cellsOf(namespaceCells)}
	case schema.GroupKind{Kind: "Service"}:
		return Printer{Columns: serviceColumns(), Cells: cellsOf(serviceCells)}
	case schema.GroupKind{Kind: "Endpoints"}:
		return Printer{Columns: endpointsColumns(), Cells: cellsOf(endpointsCells)}
	case schema.GroupKind{Kind: "ConfigMap"}:
		return Printer{Columns: configMapColumns(), Cells: cellsOf(configMapCells)}
	case schema.GroupKind{Kind: "Secret"}:
		return Printer{Columns: secretColumns(), Cells: cellsOf(secretCells)}
	case schema.GroupKind{Kind: "ServiceAccount"}:
		return Printer{Columns: serviceAccountColumns(), Cells: cellsOf(serviceAccountCells)}
	case schema.GroupKind{Kind: "Event"}:
		return Printer{Columns: eventColumns(), Cells: cellsOf(eventCells)}
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}:
		return Printer{Columns: deploymentColumns(), Cells: cellsOf(deploymentCells)}
	case schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}:
		return Printer{Columns: replicaSetColumns(), Cells: cellsOf(replicaSetCells)}
	case schema.GroupKind{Group: "apps", Kind: "StatefulSet"}:
		return Printer{Columns: statefulSetColumns(), Cells: cellsOf(statefulSetCells)}
	case schema.GroupKind{Group: "apps", Kind: "ControllerRevision"}:
		return Printer{Columns: controllerRevisionColumns(), Cells: cellsOf(controllerRevisionCells)}
	case schema.GroupKind{Group: "apps", Kind: "DaemonSet"}:
		return Printer{Columns: daemonSetColumns(), Cells: cellsOf(daemonSetCells)}
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
		return Printer{Columns: jobColumns(), Cells: cellsOf(jobCells)}
	case schema.GroupKind{Group: "batch", Kind: "CronJob"}:
		return Printer{Columns: cronJobColumns(), Cells: cellsOf(cronJobCells)}
	case schema.GroupKind{Group: "policy", Kind: "PodDisruptionBudget"}:
		return Printer{Columns: podDisruptionBudgetColumns(), Cells: cellsOf(podDisruptionBudgetCells)}
	case schema.GroupKind{Group: "coordination.k8s.io", Kind: "Lease"}:
		return Printer{Columns: leaseColumns(), Cells: cellsOf(leaseCells)}
	case schema.GroupKind{Group: "discovery.k8s.io", Kind: "EndpointSlice"}:
		return Printer{Columns: endpointSliceColumns(), Cells: cellsOf(endpointSliceCells)}
	case schema.GroupKind{Kind: "PersistentVolume"}:
		return Printer{Columns: persistentVolumeColumns(), Cells: cellsOf(persistentVolumeCells)}
	case schema.GroupKind{Kind: "PersistentVolumeClaim"}:
		return Printer{Columns: persistentVolumeClaimColumns(), Cells: cellsOf(persistentVolumeClaimCells)}
	case schema.GroupKind{Group: "storage.k8s.io", Kind: "StorageClass"}:
		return Printer{Columns: storageClassColumns(), Cells: cellsOf(storageClassCells)}
	case schema.GroupKind{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:
		return Printer{Columns: priorityClassColumns(), Cells: cellsOf(priorityClassCells)}
	}
	return Printer{Columns: []metav1.TableColumnDefinition{nameColumn(), ageColumn()}, Cells: defaultCells}
}

// Table renders objs (all of the printer's kind) as a metav1.Table. includeObject is
// the request's includeObject (None, Object, Metadata; empty means Metadata): rows carry
// nothing, the full object, or a PartialObjectMetadata (apiVersion meta.k8s.io/v1, kind
// PartialObjectMetadata) as a runtime.RawExtension, as the upstream API server does.
//
// A row's RawExtension has both Raw (its JSON, which is what gets encoded) and
// Object set. The objects in objs are not modified.
func Table(p Printer, objs []runtime.Object, includeObject metav1.IncludeObjectPolicy, now time.Time) (*metav1.Table, error) {
	switch includeObject {
	case metav1.IncludeNone, metav1.IncludeObject, metav1.IncludeMetadata, "":
	default:
		return nil, fmt.Errorf("printers: includeObject %q is not one of None, Object, Metadata", includeObject)
	}
	if p.Cells == nil {
		return nil, fmt.Errorf("printers: printer has no Cells function")
	}
	table := &metav1.Table{
		TypeMeta:          metav1.TypeMeta{Kind: "Table", APIVersion: metav1.SchemeGroupVersion.String()},
		ColumnDefinitions: append([]metav1.TableColumnDefinition(nil), p.Columns...),
		Rows:              make([]metav1.TableRow, 0, len(objs)),
	}
	for i, obj := range objs {
		cells, err := p.Cells(obj, now)
		if err != nil {
			return nil, fmt.Errorf("printers: row %d: %w", i, err)
		}
		if len(cells) != len(p.Columns) {
			return nil, fmt.Errorf("printers: row %d has %d cells for %d columns", i, len(cells), len(p.Columns))
		}
		row := metav1.TableRow{Cells: cells}
		switch includeObject {
		case metav1.IncludeObject:
			row.Object, err = fullObject(obj)
		case metav1.IncludeMetadata, "":
			row.Object, err = metadataObject(obj)
		}
		if err != nil {
			return nil, fmt.Errorf("printers: row %d: %w", i, err)
		}
		table.Rows = append(table.Rows, row)
	}
	return table, nil
}

// fullObject returns a copy of obj with apiVersion and kind set, as the
// upstream server's conversion to the request version leaves it.
func fullObject(obj runtime.Object) (runtime.RawExtension, error) {
	out := obj.DeepCopyObject()
	if gvk := out.GetObjectKind().GroupVersionKind(); gvk.Kind == "" || gvk.Version == "" {
		kinds, _, err := scheme.Scheme.ObjectKinds(out)
		if err != nil {
			return runtime.RawExtension{}, fmt.Errorf("finding the kind of %T: %w", obj, err)
		}
		out.GetObjectKind().SetGroupVersionKind(kinds[0])
	}
	return encode(out)
}

// metadataObject returns obj's metadata as a PartialObjectMetadata.
func metadataObject(obj runtime.Object) (runtime.RawExtension, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("reading metadata of %T: %w", obj, err)
	}
	partial := meta.AsPartialObjectMetadata(m).DeepCopy()
	partial.TypeMeta = metav1.TypeMeta{
		APIVersion: metav1.SchemeGroupVersion.String(),
		Kind:       "PartialObjectMetadata",
	}
	return encode(partial)
}

func encode(obj runtime.Object) (runtime.RawExtension, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("encoding %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, err)
	}
	return runtime.RawExtension{Raw: raw, Object: obj}, nil
}

// cellsOf adapts a cell function for one typed kind to Printer.Cells. It
// also accepts the kind as *unstructured.Unstructured and converts it.
func cellsOf[T any, P interface {
	*T
	runtime.Object
}](cells func(obj P, now time.Time) []interface{}) func(runtime.Object, time.Time) ([]interface{}, error) {
	return func(obj runtime.Object, now time.Time) ([]interface{}, error) {
		switch o := obj.(type) {
		case P:
			if o == nil {
				return nil, fmt.Errorf("nil %T", obj)
			}
			return cells(o, now), nil
		case *unstructured.Unstructured:
			typed := P(new(T))
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, typed); err != nil {
				return nil, fmt.Errorf("converting %s %q to %T: %w", o.GetKind(), o.GetName(), typed, err)
			}
			return cells(typed, now), nil
		}
		return nil, fmt.Errorf("cannot print %T with the printer for %T", obj, P(nil))
	}
}

// defaultCells prints NAME and AGE of any object with metadata.
func defaultCells(obj runtime.Object, now time.Time) ([]interface{}, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("reading metadata of %T: %w", obj, err)
	}
	return []interface{}{m.GetName(), age(m.GetCreationTimestamp(), now)}, nil
}

// Column helpers. Names are in the case upstream uses; kubectl prints them
// upper-cased.

func column(name, typ, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: description}
}

func wideColumn(name, typ, description string) metav1.TableColumnDefinition {
	c := column(name, typ, description)
	c.Priority = 1
	return c
}

func nameColumn() metav1.TableColumnDefinition {
	c := column("Name", "string", metav1.ObjectMeta{}.SwaggerDoc()["name"])
	c.Format = "name"
	return c
}

func ageColumn() metav1.TableColumnDefinition {
	return column("Age", "string", metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"])
}

// Cell helpers.

// age is the AGE cell: how long before now t was, "<unknown>" for zero.
func age(t metav1.Time, now time.Time) string {
	return since(t.Time, now)
}

func since(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// orNone returns s, or "<none>" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
