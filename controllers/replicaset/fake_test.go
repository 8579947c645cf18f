package replicaset

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
