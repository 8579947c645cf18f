package volumebinding

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/storage/volume"

	"github.com/kubebus/kubebus/scheduler/framework"
)

// PreBindPreFlight implements framework.PreBindPreFlight: Skip unless the
// pod has claims to wait for.
func (pl *VolumeBinding) PreBindPreFlight(_ context.Context, state *framework.CycleState, _ *v1.Pod, _ string) *framework.Status {
	if d, err := framework.ReadAs[*stateData](state, stateKey); err == nil && len(d.waitFor) > 0 {
		return nil
	}
	return framework.NewStatus(framework.Skip)
}

// PreBind implements framework.PreBindPlugin: it writes the selected node
// of the claims Reserve assumed, then waits until every unbound
// WaitForFirstConsumer claim of the pod is bound. On failure or timeout
// it removes the annotations it wrote (when the claim is still unbound and
// still names node) so the pod can go elsewhere next time.
func (pl *VolumeBinding) PreBind(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node string, h framework.BindHandle) *framework.Status {
	d, err := framework.ReadAs[*stateData](state, stateKey)
	if err != nil || len(d.waitFor) == 0 {
		return nil
	}
	var written []*v1.PersistentVolumeClaim
	err = func() error {
		for _, c := range d.reserved {
			if err := selectNode(ctx, h, c, node); err != nil {
				return err
			}
			written = append(written, c)
		}
		return wait.PollUntilContextTimeout(ctx, pl.pollInterval, pl.bindTimeout, true, func(context.Context) (bool, error) {
			return checkBound(h, pod, d.waitFor, node)
		})
	}()
	if err == nil {
		return nil
	}
	if wait.Interrupted(err) && ctx.Err() == nil {
		err = fmt.Errorf("timed out after %s waiting for the PersistentVolumeClaims to be bound", pl.bindTimeout)
	}
	// Undo with a context of its own: ctx may be what ended.
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, c := range written {
		if uerr := unselectNode(uctx, h, c, node); uerr != nil {
			err = errors.Join(err, uerr)
		}
	}
	return framework.AsStatus(fmt.Errorf("binding volumes: %w", err))
}

// selectNode sets the claim's selected-node annotation through the API.
func selectNode(ctx context.Context, h framework.BindHandle, c *v1.PersistentVolumeClaim, node string) error {
	api := h.Client().CoreV1().PersistentVolumeClaims(c.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := api.Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("getting persistentvolumeclaim %q: %w", c.Name, err)
		}
		if cur.UID != c.UID && c.UID != "" {
			return fmt.Errorf("persistentvolumeclaim %q was replaced", c.Name)
		}
		if IsBound(cur) {
			return nil
		}
		switch sel := cur.Annotations[volume.AnnSelectedNode]; sel {
		case node:
			return nil
		case "":
		default:
			return fmt.Errorf("persistentvolumeclaim %q is being provisioned on node %q", c.Name, sel)
		}
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[volume.AnnSelectedNode] = node
		_, err = api.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

// unselectNode removes the selected-node annotation of a claim still
// unbound and still selected for node.
func unselectNode(ctx context.Context, h framework.BindHandle, c *v1.PersistentVolumeClaim, node string) error {
	api := h.Client().CoreV1().PersistentVolumeClaims(c.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := api.Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if IsBound(cur) || cur.Spec.VolumeName != "" || cur.Annotations[volume.AnnSelectedNode] != node {
			return nil
		}
		delete(cur.Annotations, volume.AnnSelectedNode)
		_, err = api.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the selected node of persistentvolumeclaim %q: %w", c.Name, err)
	}
	return nil
}

// checkBound reads the claims from the cache: done when all are bound; an
// error when the pod is gone or a claim lost its selected node (the
// provisioner gave up on it) or was deleted.
func checkBound(h framework.BindHandle, pod *v1.Pod, claims []*v1.PersistentVolumeClaim, node string) (bool, error) {
	if p, ok := h.Pod(pod.Namespace, pod.Name); !ok || p.UID != pod.UID {
		return false, errors.New("pod does not exist any more")
	}
	all := true
	for _, want := range claims {
		c, ok := h.Claim(want.Namespace, want.Name)
		switch {
		case !ok:
			return false, fmt.Errorf("persistentvolumeclaim %q not found", want.Name)
		case IsBound(c):
			continue
		case c.Annotations[volume.AnnSelectedNode] != node && c.ResourceVersion != want.ResourceVersion:
			// Still the version Reserve saw: our write has not arrived yet.
			return false, fmt.Errorf("provisioning failed for PVC %q", c.Name)
		}
		all = false
	}
	return all, nil
}
