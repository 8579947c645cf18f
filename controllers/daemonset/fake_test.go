package daemonset

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/controllers/controllertest"
)

// listInformer adds List to controllertest's in-memory informer.
type listInformer[T runtime.Object] struct {
	*controllertest.Informer[T]
}

func newListInformer[T runtime.Object](objs ...T) listInformer[T] {
	return listInformer[T]{controllertest.NewInformer(objs...)}
}

func (l listInformer[T]) List() []T { return l.ByLabels(labels.Everything()) }

// fakePods records the pod writes.
type fakePods struct {
	mu      sync.Mutex
	n       int
	created []*corev1.Pod
	deleted []string
	patches map[string]string
}

func (f *fakePods) Create(_ context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	p := pod.DeepCopy()
	p.Name = fmt.Sprintf("%s%05d", p.GenerateName, f.n)
	p.UID = types.UID(fmt.Sprintf("pod-uid-%d", f.n))
	f.created = append(f.created, p)
	return p, nil
}

func (f *fakePods) Delete(_ context.Context, _, name string, _ types.UID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, name)
	return nil
}

func (f *fakePods) Patch(_ context.Context, _, name string, patch []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.patches == nil {
		f.patches = map[string]string{}
	}
	f.patches[name] = string(patch)
	return nil
}

// fakeDSets records status updates and serves Get from current.
type fakeDSets struct {
	mu       sync.Mutex
	statuses []appsv1.DaemonSetStatus
	current  map[string]*appsv1.DaemonSet
}

func (f *fakeDSets) UpdateStatus(_ context.Context, ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses = append(f.statuses, ds.Status)
	return ds, nil
}

func (f *fakeDSets) Get(_ context.Context, namespace, name string) (*appsv1.DaemonSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ds, ok := f.current[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "daemonsets"}, name)
	}
	return ds, nil
}

func (f *fakeDSets) last() appsv1.DaemonSetStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.statuses) == 0 {
		return appsv1.DaemonSetStatus{}
	}
	return f.statuses[len(f.statuses)-1]
}

// fakeRevs is an in-memory ControllerRevision API that also feeds the
// revision informer (as the bus would).
type fakeRevs struct {
	mu      sync.Mutex
	objs    map[string]*appsv1.ControllerRevision
	cache   listInformer[*appsv1.ControllerRevision]
	deleted []string
}

func newFakeRevs(cache listInformer[*appsv1.ControllerRevision]) *fakeRevs {
	return &fakeRevs{objs: map[string]*appsv1.ControllerRevision{}, cache: cache}
}

var revGR = schema.GroupResource{Group: "apps", Resource: "controllerrevisions"}

func (f *fakeRevs) Create(_ context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := rev.Namespace + "/" + rev.Name
	if _, ok := f.objs[k]; ok {
		return nil, apierrors.NewAlreadyExists(revGR, rev.Name)
	}
	cp := rev.DeepCopy()
	f.objs[k] = cp
	f.cache.Set(cp)
	return cp, nil
}

func (f *fakeRevs) Get(_ context.Context, namespace, name string) (*appsv1.ControllerRevision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.objs[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(revGR, name)
	}
	return r, nil
}

func (f *fakeRevs) Update(_ context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cp := rev.DeepCopy()
	f.objs[rev.Namespace+"/"+rev.Name] = cp
	f.cache.Set(cp)
	return cp, nil
}

func (f *fakeRevs) Delete(_ context.Context, namespace, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.objs[namespace+"/"+name]
	if !ok {
		return apierrors.NewNotFound(revGR, name)
	}
	delete(f.objs, namespace+"/"+name)
	f.cache.Remove(r)
	f.deleted = append(f.deleted, name)
	return nil
}

// fakeRecorder collects events as "Type Reason".
type fakeRecorder struct {
	mu     sync.Mutex
	events []string
}

func (f *fakeRecorder) Event(_ runtime.Object, typ, reason, _ string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, typ+" "+reason)
}

func (f *fakeRecorder) Eventf(o runtime.Object, typ, reason, msg string, _ ...any) {
	f.Event(o, typ, reason, msg)
}

func (f *fakeRecorder) AnnotatedEventf(o runtime.Object, _ map[string]string, typ, reason, msg string, _ ...any) {
	f.Event(o, typ, reason, msg)
}

func (f *fakeRecorder) count(s string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, e := range f.events {
		if e == s {
			n++
		}
	}
	return n
}
