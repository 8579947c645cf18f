package printers

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// now is the fixed clock of every test.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// ago returns a timestamp d before now.
func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

// cellsFor prints obj with the printer for gk and checks the row is as wide
// as the columns.
func cellsFor(t *testing.T, gk schema.GroupKind, obj runtime.Object) []interface{} {
	t.Helper()
	p := For(gk)
	cells, err := p.Cells(obj, now)
	if err != nil {
		t.Fatalf("Cells: %v", err)
	}
	if len(cells) != len(p.Columns) {
		t.Fatalf("got %d cells for %d columns: %v", len(cells), len(p.Columns), cells)
	}
	return cells
}

// byColumn returns the cells of obj keyed by upper-cased column name, as
// kubectl heads them.
func byColumn(t *testing.T, gk schema.GroupKind, obj runtime.Object) map[string]interface{} {
	t.Helper()
	cells := cellsFor(t, gk, obj)
	m := map[string]interface{}{}
	for i, c := range For(gk).Columns {
		m[strings.ToUpper(c.Name)] = cells[i]
	}
	return m
}

// checkCells compares the named cells of obj with want.
func checkCells(t *testing.T, gk schema.GroupKind, obj runtime.Object, want map[string]interface{}) {
	t.Helper()
	got := byColumn(t, gk, obj)
	for col, w := range want {
		g, ok := got[col]
		if !ok {
			t.Errorf("no column %s", col)
			continue
		}
		if g != w {
			t.Errorf("%s = %#v, want %#v", col, g, w)
		}
	}
}

// headers returns the column headers kubectl prints, with or without -o wide.
func headers(cols []metav1.TableColumnDefinition, wide bool) string {
	var h []string
	for _, c := range cols {
		if c.Priority == 0 || wide {
			h = append(h, strings.ToUpper(c.Name))
		}
	}
	return strings.Join(h, " ")
}

func TestForColumns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		gk         schema.GroupKind
		want, wide string
	}{
		{schema.GroupKind{Kind: "Pod"},
			"NAME READY STATUS RESTARTS AGE",
			"NAME READY STATUS RESTARTS AGE IP NODE NOMINATED NODE READINESS GATES"},
		{schema.GroupKind{Kind: "Node"},
			"NAME STATUS ROLES AGE VERSION",
			"NAME STATUS ROLES AGE VERSION INTERNAL-IP EXTERNAL-IP OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME"},
		{schema.GroupKind{Kind: "Namespace"}, "NAME STATUS AGE", "NAME STATUS AGE"},
		{schema.GroupKind{Kind: "Service"},
			"NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE",
			"NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE SELECTOR"},
		{schema.GroupKind{Kind: "Endpoints"}, "NAME ENDPOINTS AGE", "NAME ENDPOINTS AGE"},
		{schema.GroupKind{Kind: "ConfigMap"}, "NAME DATA AGE", "NAME DATA AGE"},
		{schema.GroupKind{Kind: "Secret"}, "NAME TYPE DATA AGE", "NAME TYPE DATA AGE"},
		{schema.GroupKind{Kind: "ServiceAccount"}, "NAME SECRETS AGE", "NAME SECRETS AGE"},
		{schema.GroupKind{Kind: "Event"},
			"LAST SEEN TYPE REASON OBJECT MESSAGE",
			"LAST SEEN TYPE REASON OBJECT SUBOBJECT SOURCE MESSAGE FIRST SEEN COUNT NAME"},
		{schema.GroupKind{Group: "apps", Kind: "Deployment"},
			"NAME READY UP-TO-DATE AVAILABLE AGE",
			"NAME READY UP-TO-DATE AVAILABLE AGE CONTAINERS IMAGES SELECTOR"},
		{schema.GroupKind{Group: "apps", Kind: "ReplicaSet"},
			"NAME DESIRED CURRENT READY AGE",
			"NAME DESIRED CURRENT READY AGE CONTAINERS IMAGES SELECTOR"},
		{schema.GroupKind{Group: "coordination.k8s.io", Kind: "Lease"}, "NAME HOLDER AGE", "NAME HOLDER AGE"},
		{schema.GroupKind{Group: "discovery.k8s.io", Kind: "EndpointSlice"},
			"NAME ADDRESSTYPE PORTS ENDPOINTS AGE", "NAME ADDRESSTYPE PORTS ENDPOINTS AGE"},
		{schema.GroupKind{Group: "scheduling.k8s.io", Kind: "PriorityClass"},
			"NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY", "NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY"},
		{schema.GroupKind{Group: "batch", Kind: "Job"},
			"NAME STATUS COMPLETIONS DURATION AGE", "NAME STATUS COMPLETIONS DURATION AGE CONTAINERS IMAGES SELECTOR"},
		// A kind is matched with its group: a Pod of another group is unknown.
		{schema.GroupKind{Group: "example.com", Kind: "Pod"}, "NAME AGE", "NAME AGE"},
	}
	for _, tt := range tests {
		t.Run(tt.gk.String(), func(t *testing.T) {
			t.Parallel()
			p := For(tt.gk)
			if got := headers(p.Columns, false); got != tt.want {
				t.Errorf("headers = %q, want %q", got, tt.want)
			}
			if got := headers(p.Columns, true); got != tt.wide {
				t.Errorf("wide headers = %q, want %q", got, tt.wide)
			}
			names := 0
			for i, c := range p.Columns {
				if c.Format == "name" {
					names++
					if c.Name != "Name" {
						t.Errorf("column %d %q has format name", i, c.Name)
					}
				}
				if c.Description == "" {
					t.Errorf("column %q has no description", c.Name)
				}
				if c.Type == "" {
					t.Errorf("column %q has no type", c.Name)
				}
			}
			if names != 1 {
				t.Errorf("%d columns with format name, want 1", names)
			}
			if tt.gk.Kind != "Event" && (p.Columns[0].Name != "Name" || p.Columns[0].Format != "name") {
				t.Errorf("first column = %+v, want Name with format name", p.Columns[0])
			}
		})
	}
}

func TestDefaultPrinter(t *testing.T) {
	t.Parallel()
	gk := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	tests := []struct {
		name string
		obj  runtime.Object
		want []interface{}
	}{
		{"typed", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "job-a", CreationTimestamp: ago(90 * time.Minute)}},
			[]interface{}{"job-a", "90m"}},
		{"no creation time", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "job-b"}},
			[]interface{}{"job-b", "<unknown>"}},
		{"unstructured", &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]interface{}{"name": "job-c", "creationTimestamp": now.Add(-50 * time.Hour).Format(time.RFC3339)},
		}}, []interface{}{"job-c", "2d2h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := cellsFor(t, gk, tt.obj)
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Errorf("cell %d = %#v, want %#v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestCellsInput(t *testing.T) {
	t.Parallel()
	podGK := schema.GroupKind{Kind: "Pod"}
	tests := []struct {
		name    string
		obj     runtime.Object
		want    string // the STATUS cell
		wantErr string
	}{
		{name: "typed", obj: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, want: "Running"},
		{name: "unstructured", obj: &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]interface{}{"name": "u"},
			"status":   map[string]interface{}{"phase": "Pending"},
		}}, want: "Pending"},
		{name: "unstructured that does not convert", obj: &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]interface{}{"name": "bad"},
			"spec":     "not an object",
		}}, wantErr: "converting Pod \"bad\""},
		{name: "other kind", obj: &corev1.Node{}, wantErr: "cannot print *v1.Node"},
		{name: "nil pod", obj: (*corev1.Pod)(nil), wantErr: "nil *v1.Pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cells, err := For(podGK).Cells(tt.obj, now)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Cells: %v", err)
			}
			if cells[2] != tt.want {
				t.Errorf("STATUS = %v, want %v", cells[2], tt.want)
			}
		})
	}
}

// unregistered is an object kind no scheme knows.
type unregistered struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (u *unregistered) DeepCopyObject() runtime.Object {
	c := *u
	c.ObjectMeta = *u.ObjectMeta.DeepCopy()
	return &c
}

func TestTableIncludeObject(t *testing.T) {
	t.Parallel()
	newPod := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		}
	}
	deployment := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]interface{}{"name": "web"},
		"spec":     map[string]interface{}{"replicas": int64(2)},
	}}
	tests := []struct {
		name           string
		gk             schema.GroupKind
		obj            runtime.Object
		policy         metav1.IncludeObjectPolicy
		wantAPIVersion string // "" means the row carries no object
		wantKind       string
		wantErr        string
	}{
		{name: "none", gk: schema.GroupKind{Kind: "Pod"}, obj: newPod(), policy: metav1.IncludeNone},
		{name: "metadata", gk: schema.GroupKind{Kind: "Pod"}, obj: newPod(), policy: metav1.IncludeMetadata,
			wantAPIVersion: "meta.k8s.io/v1", wantKind: "PartialObjectMetadata"},
		{name: "empty means metadata", gk: schema.GroupKind{Kind: "Pod"}, obj: newPod(), policy: "",
			wantAPIVersion: "meta.k8s.io/v1", wantKind: "PartialObjectMetadata"},
		{name: "object, typed without type meta", gk: schema.GroupKind{Kind: "Pod"}, obj: newPod(), policy: metav1.IncludeObject,
			wantAPIVersion: "v1", wantKind: "Pod"},
		{name: "object, grouped kind", gk: schema.GroupKind{Group: "apps", Kind: "Deployment"},
			obj: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, policy: metav1.IncludeObject,
			wantAPIVersion: "apps/v1", wantKind: "Deployment"},
		{name: "object, unstructured", gk: schema.GroupKind{Group: "apps", Kind: "Deployment"}, obj: deployment,
			policy: metav1.IncludeObject, wantAPIVersion: "apps/v1", wantKind: "Deployment"},
		{name: "object, unregistered type", gk: schema.GroupKind{Group: "example.com", Kind: "Thing"},
			obj: &unregistered{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, policy: metav1.IncludeObject,
			wantErr: "finding the kind"},
		{name: "metadata, unregistered type", gk: schema.GroupKind{Group: "example.com", Kind: "Thing"},
			obj: &unregistered{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, policy: metav1.IncludeMetadata,
			wantAPIVersion: "meta.k8s.io/v1", wantKind: "PartialObjectMetadata"},
		{name: "unknown policy", gk: schema.GroupKind{Kind: "Pod"}, obj: newPod(), policy: "Everything",
			wantErr: `includeObject "Everything"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := tt.obj.DeepCopyObject()
			table, err := Table(For(tt.gk), []runtime.Object{tt.obj}, tt.policy, now)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Table: %v", err)
			}
			if table.Kind != "Table" || table.APIVersion != "meta.k8s.io/v1" {
				t.Errorf("table type = %s %s, want meta.k8s.io/v1 Table", table.APIVersion, table.Kind)
			}
			if len(table.Rows) != 1 {
				t.Fatalf("got %d rows, want 1", len(table.Rows))
			}
			if got := before.GetObjectKind().GroupVersionKind(); tt.obj.GetObjectKind().GroupVersionKind() != got {
				t.Errorf("Table changed the input's kind to %v", tt.obj.GetObjectKind().GroupVersionKind())
			}

			ext := table.Rows[0].Object
			if tt.wantAPIVersion == "" {
				if ext.Raw != nil || ext.Object != nil {
					t.Errorf("row object = %s / %T, want none", ext.Raw, ext.Object)
				}
				return
			}
			var got struct {
				APIVersion string            `json:"apiVersion"`
				Kind       string            `json:"kind"`
				Metadata   metav1.ObjectMeta `json:"metadata"`
				Spec       json.RawMessage   `json:"spec"`
			}
			if err := json.Unmarshal(ext.Raw, &got); err != nil {
				t.Fatalf("decoding row object %s: %v", ext.Raw, err)
			}
			if got.APIVersion != tt.wantAPIVersion || got.Kind != tt.wantKind {
				t.Errorf("row object is %s %s, want %s %s", got.APIVersion, got.Kind, tt.wantAPIVersion, tt.wantKind)
			}
			if got.Metadata.Name != "web-1" && got.Metadata.Name != "web" {
				t.Errorf("row object name = %q", got.Metadata.Name)
			}
			isPartial := tt.wantKind == "PartialObjectMetadata"
			if isPartial == (got.Spec != nil) {
				t.Errorf("row object spec = %s; partial metadata must have none, the full object must have it", got.Spec)
			}
			if ext.Object == nil || ext.Object.GetObjectKind().GroupVersionKind().Kind != tt.wantKind {
				t.Errorf("row Object = %#v, want a %s", ext.Object, tt.wantKind)
			}
		})
	}
}

func TestTableMetadataContent(t *testing.T) {
	t.Parallel()
	del := ago(time.Minute)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "web-1", Namespace: "prod", UID: "u-1", ResourceVersion: "42",
		Labels: map[string]string{"app": "web"}, DeletionTimestamp: &del,
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-abc"}},
	}}
	table, err := Table(For(schema.GroupKind{Kind: "Pod"}), []runtime.Object{pod}, metav1.IncludeMetadata, now)
	if err != nil {
		t.Fatalf("Table: %v", err)
	}
	var partial metav1.PartialObjectMetadata
	if err := json.Unmarshal(table.Rows[0].Object.Raw, &partial); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	tests := []struct {
		field, got, want string
	}{
		{"name", partial.Name, "web-1"},
		{"namespace", partial.Namespace, "prod"},
		{"uid", string(partial.UID), "u-1"},
		{"resourceVersion", partial.ResourceVersion, "42"},
		{"label app", partial.Labels["app"], "web"},
		{"owner", func() string {
			if len(partial.OwnerReferences) == 0 {
				return ""
			}
			return partial.OwnerReferences[0].Name
		}(), "web-abc"},
		{"deletionTimestamp", func() string {
			if partial.DeletionTimestamp == nil {
				return ""
			}
			return partial.DeletionTimestamp.UTC().Format(time.RFC3339)
		}(), del.UTC().Format(time.RFC3339)},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("%s = %q, want %q", tt.field, tt.got, tt.want)
			}
		})
	}

	// The row's metadata must not share maps with the stored object.
	table.Rows[0].Object.Object.(*metav1.PartialObjectMetadata).Labels["app"] = "changed"
	if pod.Labels["app"] != "web" {
		t.Errorf("changing the row's labels changed the input object")
	}
}

func TestTableShape(t *testing.T) {
	t.Parallel()
	pods := []runtime.Object{
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
	}
	short := Printer{
		Columns: []metav1.TableColumnDefinition{nameColumn(), ageColumn()},
		Cells:   func(runtime.Object, time.Time) ([]interface{}, error) { return []interface{}{"only-one"}, nil },
	}
	tests := []struct {
		name     string
		p        Printer
		objs     []runtime.Object
		wantRows []string // first cells
		wantJSON string   // a fragment of the encoded table
		wantErr  string
	}{
		{name: "rows in order", p: For(schema.GroupKind{Kind: "Pod"}), objs: pods,
			wantRows: []string{"a", "b"}, wantJSON: `"kind":"PartialObjectMetadata"`},
		{name: "no objects", p: For(schema.GroupKind{Kind: "Pod"}), objs: nil,
			wantRows: []string{}, wantJSON: `"rows":[]`},
		{name: "cells and columns disagree", p: short, objs: pods, wantErr: "1 cells for 2 columns"},
		{name: "wrong kind", p: For(schema.GroupKind{Kind: "Node"}), objs: pods, wantErr: "row 0: cannot print"},
		{name: "zero printer", p: Printer{}, objs: pods, wantErr: "no Cells"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			table, err := Table(tt.p, tt.objs, metav1.IncludeMetadata, now)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Table: %v", err)
			}
			if len(table.ColumnDefinitions) != len(tt.p.Columns) {
				t.Errorf("got %d columns, want %d", len(table.ColumnDefinitions), len(tt.p.Columns))
			}
			if len(table.Rows) != len(tt.wantRows) {
				t.Fatalf("got %d rows, want %d", len(table.Rows), len(tt.wantRows))
			}
			for i, want := range tt.wantRows {
				if got := table.Rows[i].Cells[0]; got != want {
					t.Errorf("row %d name = %v, want %v", i, got, want)
				}
			}
			raw, err := json.Marshal(table)
			if err != nil {
				t.Fatalf("encoding table: %v", err)
			}
			if !strings.Contains(string(raw), tt.wantJSON) {
				t.Errorf("encoded table %s lacks %s", raw, tt.wantJSON)
			}
			var back metav1.Table
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatalf("decoding table: %v", err)
			}
			if len(back.Rows) != len(tt.wantRows) || back.Kind != "Table" {
				t.Errorf("decoded table has kind %q and %d rows", back.Kind, len(back.Rows))
			}
		})
	}
}

func TestTableColumnsAreCopied(t *testing.T) {
	t.Parallel()
	p := For(schema.GroupKind{Kind: "Pod"})
	table, err := Table(p, nil, metav1.IncludeNone, now)
	if err != nil {
		t.Fatalf("Table: %v", err)
	}
	table.ColumnDefinitions[0].Name = "Changed"
	if p.Columns[0].Name != "Name" {
		t.Errorf("changing the table's columns changed the printer's")
	}
	if For(schema.GroupKind{Kind: "Pod"}).Columns[0].Name != "Name" {
		t.Errorf("For returns shared column slices")
	}
}

func TestAge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ts   metav1.Time
		want string
	}{
		{"zero", metav1.Time{}, "<unknown>"},
		{"seconds", ago(42 * time.Second), "42s"},
		{"minutes", ago(5 * time.Minute), "5m"},
		{"hours", ago(3 * time.Hour), "3h"},
		{"days", ago(10 * 24 * time.Hour), "10d"},
		{"far future", metav1.NewTime(now.Add(time.Hour)), "<invalid>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := age(tt.ts, now); got != tt.want {
				t.Errorf("age = %q, want %q", got, tt.want)
			}
		})
	}
}
