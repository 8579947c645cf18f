package deployment

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/controllers/controllertest"
)

// fakeInformer is controllertest's in-memory informer.
type fakeInformer[T runtime.Object] = controllertest.Informer[T]

func newFakeInformer[T runtime.Object](objs ...T) *fakeInformer[T] {
	return controllertest.NewInformer(objs...)
}

func keyOfObj(o any) string { return controllertest.Key(o) }

// fakeAPI is the API server's view of ReplicaSets and Deployments, with
// resourceVersion checks; it implements both writers.
type fakeAPI struct {
	mu      sync.Mutex
	rev     int64
	now     func() time.Time
	rsets   map[string]*appsv1.ReplicaSet
	deps    map[string]*appsv1.Deployment
	writes  []string // "verb resource/name"
	deleted []string
	// createErr, when set, fails ReplicaSet creation.
	createErr error
}

func newFakeAPI(now func() time.Time) *fakeAPI {
	return &fakeAPI{rev: 100, now: now, rsets: map[string]*appsv1.ReplicaSet{}, deps: map[string]*appsv1.Deployment{}}
}

func (f *fakeAPI) nextRV() string { f.rev++; return strconv.FormatInt(f.rev, 10) }

func conflict(name string) error {
	return apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "replicasets"}, name, nil)
}

func (f *fakeAPI) Create(_ context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.createErr != nil {
		return nil, f.createErr
	}
	key := rs.Namespace + "/" + rs.Name
	if _, ok := f.rsets[key]; ok {
		return nil, apierrors.NewAlreadyExists(schema.GroupResource{Group: "apps", Resource: "replicasets"}, rs.Name)
	}
	cp := rs.DeepCopy()
	cp.UID = types.UID(rs.Name + "-uid")
	cp.ResourceVersion = f.nextRV()
	cp.Generation = 1
	cp.CreationTimestamp = metav1.NewTime(f.now().Add(time.Duration(f.rev) * time.Millisecond))
	f.rsets[key] = cp
	f.writes = append(f.writes, "create rs/"+rs.Name)
	return cp.DeepCopy(), nil
}

func (f *fakeAPI) Update(_ context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := rs.Namespace + "/" + rs.Name
	cur, ok := f.rsets[key]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "replicasets"}, rs.Name)
	}
	if rs.ResourceVersion != cur.ResourceVersion {
		return nil, conflict(rs.Name)
	}
	cp := rs.DeepCopy()
	cp.Status = cur.Status
	cp.ResourceVersion = f.nextRV()
	if *cp.Spec.Replicas != *cur.Spec.Replicas || cp.Spec.MinReadySeconds != cur.Spec.MinReadySeconds {
		cp.Generation = cur.Generation + 1
	}
	f.rsets[key] = cp
	f.writes = append(f.writes, "update rs/"+rs.Name)
	return cp.DeepCopy(), nil
}

// Patch applies owner-reference merge patches.
func (f *fakeAPI) Patch(_ context.Context, namespace, name string, patch []byte) (*appsv1.ReplicaSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.rsets[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "replicasets"}, name)
	}
	var p struct {
		Metadata struct {
			ResourceVersion string                  `json:"resourceVersion"`
			OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	if p.Metadata.ResourceVersion != "" && p.Metadata.ResourceVersion != cur.ResourceVersion {
		return nil, conflict(name)
	}
	cp := cur.DeepCopy()
	cp.OwnerReferences = p.Metadata.OwnerReferences
	cp.ResourceVersion = f.nextRV()
	f.rsets[namespace+"/"+name] = cp
	f.writes = append(f.writes, "patch rs/"+name)
	return cp.DeepCopy(), nil
}

func (f *fakeAPI) Delete(_ context.Context, namespace, name string, _ types.UID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.rsets, namespace+"/"+name)
	f.deleted = append(f.deleted, name)
	f.writes = append(f.writes, "delete rs/"+name)
	return nil
}

func (f *fakeAPI) Get(_ context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rs, ok := f.rsets[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "replicasets"}, name)
	}
	return rs.DeepCopy(), nil
}

// fakeDeps is the Deployment half of fakeAPI.
type fakeDeps struct{ *fakeAPI }

func (f fakeDeps) UpdateStatus(_ context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.deps[d.Namespace+"/"+d.Name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, d.Name)
	}
	if d.ResourceVersion != cur.ResourceVersion {
		return nil, conflict(d.Name)
	}
	cp := cur.DeepCopy()
	cp.Status = *d.Status.DeepCopy()
	cp.ResourceVersion = f.nextRV()
	f.deps[d.Namespace+"/"+d.Name] = cp
	f.writes = append(f.writes, "status deployment/"+d.Name)
	return cp.DeepCopy(), nil
}

// Patch applies annotation merge patches.
func (f fakeDeps) Patch(_ context.Context, namespace, name string, patch []byte) (*appsv1.Deployment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.deps[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, name)
	}
	var p struct {
		Metadata struct {
			ResourceVersion string            `json:"resourceVersion"`
			Annotations     map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	if p.Metadata.ResourceVersion != "" && p.Metadata.ResourceVersion != cur.ResourceVersion {
		return nil, conflict(name)
	}
	cp := cur.DeepCopy()
	if cp.Annotations == nil {
		cp.Annotations = map[string]string{}
	}
	for k, v := range p.Metadata.Annotations {
		cp.Annotations[k] = v
	}
	cp.ResourceVersion = f.nextRV()
	f.deps[namespace+"/"+name] = cp
	f.writes = append(f.writes, "patch deployment/"+name)
	return cp.DeepCopy(), nil
}

func (f fakeDeps) Get(_ context.Context, namespace, name string) (*appsv1.Deployment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.deps[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, name)
	}
	return d.DeepCopy(), nil
}

// fakeRecorder collects events as "Type Reason message".
type fakeRecorder struct {
	mu     sync.Mutex
	events []string
}

func (f *fakeRecorder) Event(_ runtime.Object, typ, reason, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, typ+" "+reason+" "+msg)
}

func (f *fakeRecorder) Eventf(o runtime.Object, typ, reason, format string, args ...any) {
	f.Event(o, typ, reason, fmt.Sprintf(format, args...))
}

func (f *fakeRecorder) AnnotatedEventf(o runtime.Object, _ map[string]string, typ, reason, format string, args ...any) {
	f.Eventf(o, typ, reason, format, args...)
}
