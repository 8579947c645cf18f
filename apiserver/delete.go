package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/apiserver/storage"
)

// Finalizers the garbage collector acts on.
const (
	finalizerOrphan     = metav1.FinalizerOrphanDependents
	finalizerForeground = metav1.FinalizerDeleteDependents
)

// parseDeleteOptions reads DeleteOptions as upstream does: from the body
// when there is one, else from the query; then validates them.
func parseDeleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	opts := &metav1.DeleteOptions{}
	if len(body) > 0 {
		if _, err := decodeRequest(r, body, opts, metav1.FieldValidationStrict); err != nil {
			return nil, err
		}
	} else if err := decodeParams(r.URL.Query(), opts); err != nil {
		return nil, err
	}
	if err := validateDeleteOptions(opts); err != nil {
		return nil, err
	}
	if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds < 0 {
		zero := int64(0)
		opts.GracePeriodSeconds = &zero
	}
	return opts, nil
}

// deleteResult says what a delete did.
type deleteResult struct {
	obj     runtime.Object
	deleted bool // removed from storage now (else: marked for deletion)
}

// deleteObject deletes one object with Kubernetes semantics: preconditions,
// finalizers from the propagation policy, graceful deletion for pods bound
// to a node, namespace finalization; immediate removal otherwise.
func (s *Server) deleteObject(ctx context.Context, res *resource.Resource, ns, name string, opts *metav1.DeleteOptions) (deleteResult, error) {
	isDryRun := len(opts.DryRun) > 0
	key := keyFor(res, ns, name)
	for attempt := 0; attempt < 16; attempt++ {
		cur, kv, err := s.getObject(ctx, res, ns, name)
		if err != nil {
			return deleteResult{}, err
		}
		m, _ := meta.Accessor(cur)
		if p := opts.Preconditions; p != nil {
			if p.UID != nil && *p.UID != m.GetUID() {
				return deleteResult{}, apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
				return deleteResult{}, apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, m.GetResourceVersion()))
			}
		}
		if err := s.admit(ctx, res, auth.Delete, nil, cur, "", isDryRun); err != nil {
			return deleteResult{}, err
		}
		next := cur.DeepCopyObject()
		nm, _ := meta.Accessor(next)
		nm.SetFinalizers(finalizersFor(m.GetFinalizers(), opts))
		grace, graceful := gracePeriod(next, opts)
		finalizing := namespaceFinalizing(next)
		if len(nm.GetFinalizers()) == 0 && !graceful && !finalizing {
			if isDryRun {
				return deleteResult{obj: cur, deleted: true}, nil
			}
			var side storage.Side
			if alloc := s.allocator(res); alloc != nil {
				side = alloc.Release(cur)
			}
			rev, _, err := s.store.DeleteWith(ctx, key, kv.ModRevision, side)
			if errors.Is(err, storage.ErrConflict) {
				continue
			}
			if err != nil {
				return deleteResult{}, storageError(err, res.GroupResource(), name)
			}
			m.SetResourceVersion(strconv.FormatInt(rev, 10))
			return deleteResult{obj: cur, deleted: true}, nil
		}
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		switch {
		case nm.GetDeletionTimestamp() == nil:
			t := metav1.NewTime(now.Add(time.Duration(grace) * time.Second))
			nm.SetDeletionTimestamp(&t)
			nm.SetDeletionGracePeriodSeconds(&grace)
		case graceful && nm.GetDeletionGracePeriodSeconds() != nil && grace < *nm.GetDeletionGracePeriodSeconds():
			t := metav1.NewTime(now.Add(time.Duration(grace) * time.Second))
			nm.SetDeletionTimestamp(&t)
			nm.SetDeletionGracePeriodSeconds(&grace)
		}
		if ns, ok := next.(*corev1.Namespace); ok {
			ns.Status.Phase = corev1.NamespaceTerminating
		}
		data, err := s.encodeForStorage(res, next)
		if err != nil {
			return deleteResult{}, err
		}
		if isDryRun || string(data) == string(kv.Value) {
			return deleteResult{obj: next}, nil
		}
		rev, _, err := s.store.Update(ctx, key, data, kv.ModRevision)
		if errors.Is(err, storage.ErrConflict) {
			continue
		}
		if err != nil {
			return deleteResult{}, storageError(err, res.GroupResource(), name)
		}
		nm.SetResourceVersion(strconv.FormatInt(rev, 10))
		return deleteResult{obj: next}, nil
	}
	return deleteResult{}, apierrors.NewConflict(res.GroupResource(), name, errors.New("too many concurrent changes, try again"))
}

// finalizersFor adds or removes the garbage collector's finalizers as the
// propagation policy asks.
func finalizersFor(have []string, opts *metav1.DeleteOptions) []string {
	policy := metav1.DeletionPropagation("")
	if opts.PropagationPolicy != nil {
		policy = *opts.PropagationPolicy
	} else if opts.OrphanDependents != nil {
		policy = metav1.DeletePropagationBackground
		if *opts.OrphanDependents {
			policy = metav1.DeletePropagationOrphan
		}
	}
	var out []string
	for _, f := range have {
		if policy != "" && (f == finalizerOrphan || f == finalizerForeground) {
			continue
		}
		out = append(out, f)
	}
	switch policy {
	case metav1.DeletePropagationOrphan:
		out = append(out, finalizerOrphan)
	case metav1.DeletePropagationForeground:
		out = append(out, finalizerForeground)
	}
	return out
}

// gracePeriod returns the grace period of a delete and whether it is
// graceful: only pods on a node that have not finished get one.
func gracePeriod(obj runtime.Object, opts *metav1.DeleteOptions) (int64, bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return 0, false
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if opts.GracePeriodSeconds != nil {
		grace = *opts.GracePeriodSeconds
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		grace = 0
	}
	return grace, grace > 0
}

// namespaceFinalizing: a namespace with spec finalizers is emptied by the
// namespace controller before it goes.
func namespaceFinalizing(obj runtime.Object) bool {
	ns, ok := obj.(*corev1.Namespace)
	return ok && len(ns.Spec.Finalizers) > 0
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource) error {
	out, err := negotiate(r)
	if err != nil {
		return err
	}
	opts, err := parseDeleteOptions(r)
	if err != nil {
		return err
	}
	result, err := s.deleteObject(r.Context(), res, ri.Namespace, ri.Name, opts)
	if err != nil {
		return err
	}
	code := http.StatusOK
	if !result.deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		code = http.StatusAccepted
	}
	if result.deleted && res.GVK.Kind != "Pod" {
		m, _ := meta.Accessor(result.obj)
		writeOut(w, out, code, &metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusSuccess,
			Details:  &metav1.StatusDetails{Name: ri.Name, Group: res.GVK.Group, Kind: res.Plural, UID: m.GetUID()},
		})
		return nil
	}
	writeOut(w, out, code, result.obj)
	return nil
}

func (s *Server) deleteCollection(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource) error {
	out, err := negotiate(r)
	if err != nil {
		return err
	}
	opts, err := parseDeleteOptions(r)
	if err != nil {
		return err
	}
	prefix := prefixFor(res, ri.Namespace)
	lr, err := parseListRequest(res, r, prefix)
	if err != nil {
		return err
	}
	objs, _, err := s.listObjects(r.Context(), res, prefix, lr)
	if err != nil {
		return err
	}
	var deleted []runtime.Object
	for _, o := range objs {
		m, _ := meta.Accessor(o)
		result, err := s.deleteObject(r.Context(), res, m.GetNamespace(), m.GetName(), opts)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		deleted = append(deleted, result.obj)
	}
	list, err := newList(res, deleted, metav1.ListMeta{})
	if err != nil {
		return err
	}
	writeOut(w, out, http.StatusOK, list)
	return nil
}
