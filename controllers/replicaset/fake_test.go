package replicaset

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers/cache"
)

// fakeInformer is an in-memory cache with the informer's read API and
// handlers; set and remove play the bus events.
type fakeInformer[T runtime.Object] struct {
	mu       sync.Mutex
	objs     map[string]T
	handlers []informer.Handler[T]
}

func newFakeInformer[T runtime.Object](objs ...T) *fakeInformer[T] {
	f := &fakeInformer[T]{objs: map[string]T{}}
	for _, o := range objs {
		f.objs[keyOfObj(o)] = o
	}
	return f
}

func metaOf(o any) metav1.Object { return o.(metav1.Object) }

func keyOfObj(o any) string { m := metaOf(o); return m.GetNamespace() + "/" + m.GetName() }

func (f *fakeInformer[T]) Get(namespace, name string) (T, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objs[namespace+"/"+name]
	return o, ok
}

func (f *fakeInformer[T]) filter(keep func(metav1.Object) bool) []T {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []T
	for _, o := range f.objs {
		if keep(metaOf(o)) {
			out = append(out, o)
		}
	}
	return out
}

func (f *fakeInformer[T]) ListNamespace(ns string) []T {
	return f.filter(func(m metav1.Object) bool { return m.GetNamespace() == ns })
}

func (f *fakeInformer[T]) ByLabels(sel labels.Selector) []T {
	return f.filter(func(m metav1.Object) bool { return sel.Matches(labels.Set(m.GetLabels())) })
}

func (f *fakeInformer[T]) ByIndex(index, value string) []T {
	switch index {
	case cache.ByOwnerUID:
	case cache.ByOrphanNamespace:
		return f.filter(func(m metav1.Object) bool {
			return m.GetNamespace() == value && metav1.GetControllerOfNoCopy(m) == nil
		})
	default:
		panic("fake informer: unknown index " + index)
	}
	return f.filter(func(m metav1.Object) bool {
		for _, r := range m.GetOwnerReferences() {
			if string(r.UID) == value {
				return true
			}
		}
		return false
	})
}

func (f *fakeInformer[T]) AddHandler(h informer.Handler[T]) { f.handlers = append(f.handlers, h) }

// set adds or replaces an object and tells the handlers.
func (f *fakeInformer[T]) set(o T) {
	f.mu.Lock()
	old, had := f.objs[keyOfObj(o)]
	f.objs[keyOfObj(o)] = o
	f.mu.Unlock()
	for _, h := range f.handlers {
		if had {
			h.OnUpdate(old, o)
		} else {
			h.OnAdd(o)
		}
	}
}

// remove deletes an object and tells the handlers.
func (f *fakeInformer[T]) remove(o T) {
	f.mu.Lock()
	delete(f.objs, keyOfObj(o))
	f.mu.Unlock()
	for _, h := range f.handlers {
		h.OnDelete(o)
	}
}

// fakePods records the pod writes; failCreate, when set, decides per
// creation (counted from 1) whether it fails.
type fakePods struct {
	mu         sync.Mutex
	n          int
	created    []*corev1.Pod
	deleted    []string
	patches    map[string]string
	failCreate func(n int) error
	failDelete map[string]error
}

func (f *fakePods) Create(_ context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.failCreate != nil {
		if err := f.failCreate(f.n); err != nil {
			return nil, err
		}
	}
	p := pod.DeepCopy()
	p.Name = fmt.Sprintf("%s%05d", p.GenerateName, f.n)
	p.UID = types.UID(fmt.Sprintf("pod-uid-%d", f.n))
	f.created = append(f.created, p)
	return p, nil
}

func (f *fakePods) Delete(_ context.Context, namespace, name string, _ types.UID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failDelete[name]; err != nil {
		return err
	}
	f.deleted = append(f.deleted, name)
	return nil
}

func (f *fakePods) Patch(_ context.Context, namespace, name string, patch []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.patches == nil {
		f.patches = map[string]string{}
	}
	f.patches[name] = string(patch)
	return nil
}

// fakeRSets records status updates and serves Get from current.
type fakeRSets struct {
	mu       sync.Mutex
	statuses []appsv1.ReplicaSetStatus
	current  map[string]*appsv1.ReplicaSet
}

func (f *fakeRSets) UpdateStatus(_ context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses = append(f.statuses, rs.Status)
	return rs, nil
}

func (f *fakeRSets) Get(_ context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rs, ok := f.current[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "replicasets"}, name)
	}
	return rs, nil
}

func (f *fakeRSets) lastStatus() appsv1.ReplicaSetStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.statuses) == 0 {
		return appsv1.ReplicaSetStatus{}
	}
	return f.statuses[len(f.statuses)-1]
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
