package podwrite

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/client-go/kubernetes"
)

// Writer is the pod writes of the ReplicaSet and DaemonSet controllers:
// Client makes them, unit tests fake them.
type Writer interface {
	Create(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	// Delete deletes a pod if it still has uid.
	Delete(ctx context.Context, namespace, name string, uid types.UID) error
	// Patch applies a JSON merge patch.
	Patch(ctx context.Context, namespace, name string, patch []byte) error
}

var _ Writer = Client{}

// Client makes pod writes through a kubernetes.Interface.
type Client struct{ c kubernetes.Interface }

// NewClient returns a Client writing through c.
func NewClient(c kubernetes.Interface) Client { return Client{c: c} }

// createAttempts bounds how often Create sends one pod, and createBackoff
// is the pause before the second send (doubled after each).
const (
	createAttempts = 3
	createBackoff  = 250 * time.Millisecond
)

// Create creates pod in its namespace. A pod with a generateName and no
// name is named here, as the API server would name it, so that a create
// whose answer was lost (the connection cut, an internal error: it may
// have been stored) can be sent again under the same name; a resend that
// finds the name taken means the first send was stored, and Create returns
// the pod as sent, with no error. A create that may have been stored but
// could not be confirmed either way (the attempts ran out, a resend was
// refused, or the API server timed out: a resend would wait as long again)
// fails with a Timeout error, which callers count as a pod that may come.
func (p Client) Create(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	generated := pod.Name == "" && pod.GenerateName != ""
	if generated {
		pod = withGeneratedName(pod)
	}
	pods := p.c.CoreV1().Pods(pod.Namespace)
	wait := createBackoff
	lost := false // an earlier send under this name may have been stored
	for attempt := 1; ; attempt++ {
		out, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		switch {
		case err == nil:
			return out, nil
		case lost && apierrors.IsAlreadyExists(err):
			return pod, nil
		case generated && apierrors.IsAlreadyExists(err) && attempt < createAttempts:
			// Another object has the name: pick another, as the API
			// server does.
			pod = withGeneratedName(pod)
			continue
		case apierrors.IsTimeout(err):
			return nil, err
		case mayBeStored(err):
			lost = true
		case lost:
			return nil, unconfirmed(pod, err)
		default:
			return nil, err
		}
		if attempt == createAttempts || ctx.Err() != nil {
			return nil, unconfirmed(pod, err)
		}
		select {
		case <-ctx.Done():
			return nil, unconfirmed(pod, err)
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// withGeneratedName returns a copy of pod named from its generateName.
func withGeneratedName(pod *corev1.Pod) *corev1.Pod {
	named := *pod
	named.Name = names.SimpleNameGenerator.GenerateName(pod.GenerateName)
	return &named
}

// mayBeStored reports whether a failed create may have been stored anyway:
// no answer from the API server, or an internal error (a write to etcd
// whose outcome is unknown).
func mayBeStored(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return true
	}
	return apierrors.IsInternalError(err) || apierrors.IsServerTimeout(err)
}

// unconfirmed is the error of a create that may have been stored.
func unconfirmed(pod *corev1.Pod, last error) error {
	return apierrors.NewTimeoutError(fmt.Sprintf("creating pod %s/%s: it may have been stored, and no send could confirm it (last answer: %v)", pod.Namespace, pod.Name, last), 0)
}

// Delete deletes a pod if it still has uid (else the API server answers
// Conflict).
func (p Client) Delete(ctx context.Context, namespace, name string, uid types.UID) error {
	return p.c.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

// Patch applies a JSON merge patch.
func (p Client) Patch(ctx context.Context, namespace, name string, patch []byte) error {
	return p.PatchType(ctx, namespace, name, types.MergePatchType, patch)
}

// PatchType applies a patch of type pt.
func (p Client) PatchType(ctx context.Context, namespace, name string, pt types.PatchType, patch []byte) error {
	_, err := p.c.CoreV1().Pods(namespace).Patch(ctx, name, pt, patch, metav1.PatchOptions{})
	return err
}
