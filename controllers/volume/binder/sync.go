package binder

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/volume"
)

// Reconcile syncs the claim or volume req names.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	if req.Namespace == "" {
		return controllers.Result{}, r.syncVolume(ctx, req.Name)
	}
	return controllers.Result{}, r.syncClaim(ctx, req.Namespace, req.Name)
}

func (r *reconciler) syncClaim(ctx context.Context, namespace, name string) error {
	c, ok := r.claims.Get(namespace, name)
	if !ok {
		return nil
	}
	s := claimState{Claim: c, Volumes: r.volumes.List()}
	if def := volume.DefaultClass(r.classes.List()); def != nil {
		s.DefaultClass = def.Name
	}
	if class := volume.ClaimClass(c); class != "" {
		if sc, ok := r.classes.Get("", class); ok {
			s.Class = sc
		}
	}
	if node := c.Annotations[volume.AnnSelectedNode]; node != "" {
		s.Node = r.node(node)
	}
	d := planClaim(s)
	if d.Event != nil {
		r.rec.Event(c, d.Event.Type, d.Event.Reason, d.Event.Message)
	}
	var err error
	switch d.Action {
	case claimSetClass:
		c = c.DeepCopy()
		c.Spec.StorageClassName = &d.Class
		_, err = r.client.CoreV1().PersistentVolumeClaims(c.Namespace).Update(ctx, c, metav1.UpdateOptions{})
		if err == nil {
			r.log.Info("assigned the default StorageClass", "claim", namespace+"/"+name, "class", d.Class)
		}
	case claimBind:
		err = r.bind(ctx, c, d.Volume)
	case claimProvision:
		err = r.askProvisioner(ctx, c, d.Provisioner)
	case claimLost:
		if c.Status.Phase != corev1.ClaimLost {
			c = c.DeepCopy()
			c.Status.Phase = corev1.ClaimLost
			_, err = r.client.CoreV1().PersistentVolumeClaims(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
		}
	}
	if err = ignoreNotFound(err); err != nil {
		return fmt.Errorf("syncing claim %s/%s: %w", namespace, name, err)
	}
	return nil
}

// node is the cached node name, or a stand-in carrying only the hostname
// label when the cache does not hold it.
func (r *reconciler) node(name string) *corev1.Node {
	if n, ok := r.nodes.Get("", name); ok {
		return n
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
}

// bind binds claim and pv to each other, as upstream: the volume's
// claimRef, then its phase Bound, then the claim's volumeName and
// annotations, then its phase Bound with the volume's capacity and access
// modes. Each step is skipped when already done, so an interrupted bind
// resumes.
func (r *reconciler) bind(ctx context.Context, c *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	pvs := r.client.CoreV1().PersistentVolumes()
	name := pv.Name
	if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != c.UID || ref.Name != c.Name || ref.Namespace != c.Namespace {
		pv = pv.DeepCopy()
		if pv.Spec.ClaimRef == nil {
			setAnnotation(&pv.ObjectMeta, volume.AnnBoundByController, "yes")
		}
		pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
			Namespace: c.Namespace, Name: c.Name, UID: c.UID, ResourceVersion: c.ResourceVersion}
		var err error
		if pv, err = pvs.Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("binding volume %s: %w", name, err)
		}
	}
	if pv.Status.Phase != corev1.VolumeBound {
		pv = pv.DeepCopy()
		pv.Status.Phase, pv.Status.Reason, pv.Status.Message = corev1.VolumeBound, "", ""
		var err error
		if pv, err = pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("marking volume %s Bound: %w", name, err)
		}
	}
	pvcs := r.client.CoreV1().PersistentVolumeClaims(c.Namespace)
	if c.Spec.VolumeName != pv.Name || c.Annotations[volume.AnnBindCompleted] == "" {
		c = c.DeepCopy()
		if c.Spec.VolumeName != pv.Name {
			c.Spec.VolumeName = pv.Name
			setAnnotation(&c.ObjectMeta, volume.AnnBoundByController, "yes")
		}
		setAnnotation(&c.ObjectMeta, volume.AnnBindCompleted, "yes")
		var err error
		if c, err = pvcs.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("binding claim to volume %s: %w", name, err)
		}
	}
	capacity := corev1.ResourceList{corev1.ResourceStorage: pv.Spec.Capacity[corev1.ResourceStorage]}
	if c.Status.Phase != corev1.ClaimBound || !apiequality.Semantic.DeepEqual(c.Status.Capacity, capacity) ||
		!slices.Equal(c.Status.AccessModes, pv.Spec.AccessModes) {
		c = c.DeepCopy()
		c.Status.Phase = corev1.ClaimBound
		c.Status.Capacity = capacity
		c.Status.AccessModes = slices.Clone(pv.Spec.AccessModes)
		if _, err := pvcs.UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("marking claim Bound: %w", err)
		}
		r.log.Info("bound", "claim", c.Namespace+"/"+c.Name, "volume", pv.Name)
	}
	return nil
}

// askProvisioner annotates the claim with the provisioner that should
// provision it (provisioners act only on claims so annotated).
func (r *reconciler) askProvisioner(ctx context.Context, c *corev1.PersistentVolumeClaim, provisioner string) error {
	if c.Annotations[volume.AnnStorageProvisioner] == provisioner && c.Annotations[volume.AnnBetaStorageProvisioner] == provisioner {
		return nil
	}
	c = c.DeepCopy()
	setAnnotation(&c.ObjectMeta, volume.AnnStorageProvisioner, provisioner)
	setAnnotation(&c.ObjectMeta, volume.AnnBetaStorageProvisioner, provisioner)
	_, err := r.client.CoreV1().PersistentVolumeClaims(c.Namespace).Update(ctx, c, metav1.UpdateOptions{})
	return err
}

func (r *reconciler) syncVolume(ctx context.Context, name string) error {
	pv, ok := r.volumes.Get("", name)
	if !ok {
		return nil
	}
	claim, err := r.claimOf(ctx, pv)
	if err != nil {
		return err
	}
	d := planVolume(volumeState{Volume: pv, Claim: claim})
	if d.Event != nil {
		r.rec.Event(pv, d.Event.Type, d.Event.Reason, d.Event.Message)
	}
	pvs := r.client.CoreV1().PersistentVolumes()
	switch d.Action {
	case volumePhase:
		pv = pv.DeepCopy()
		pv.Status.Phase, pv.Status.Reason, pv.Status.Message = d.Phase, d.Reason, ""
		if d.Event != nil {
			pv.Status.Message = d.Event.Message
		}
		_, err = pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{})
		if err == nil && d.Phase == corev1.VolumeReleased {
			r.log.Info("volume released", "volume", name, "reclaimPolicy", pv.Spec.PersistentVolumeReclaimPolicy)
		}
	case volumeSyncClaim:
		return r.syncClaim(ctx, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
	case volumeUnbind:
		pv = pv.DeepCopy()
		pv.Spec.ClaimRef = nil
		delete(pv.Annotations, volume.AnnBoundByController)
		if pv, err = pvs.Update(ctx, pv, metav1.UpdateOptions{}); err == nil {
			pv.Status.Phase = corev1.VolumeAvailable
			_, err = pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{})
		}
	case volumeClearUID:
		pv = pv.DeepCopy()
		pv.Spec.ClaimRef.UID = ""
		_, err = pvs.Update(ctx, pv, metav1.UpdateOptions{})
	case volumeDelete:
		uid := pv.UID
		err = pvs.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err == nil {
			r.log.Info("deleted released volume", "volume", name)
		}
	}
	if err = ignoreNotFound(err); err != nil {
		return fmt.Errorf("syncing volume %s: %w", name, err)
	}
	return nil
}

// claimOf returns the claim pv's claimRef names if it exists with that
// UID. A claim the cache lacks is read from the API server before the
// volume is released: the claim may be newer than the cache.
func (r *reconciler) claimOf(ctx context.Context, pv *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	ref := pv.Spec.ClaimRef
	if ref == nil {
		return nil, nil
	}
	c, ok := r.claims.Get(ref.Namespace, ref.Name)
	if !ok {
		got, err := r.client.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("reading claim %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		c = got
	}
	if ref.UID != "" && c.UID != ref.UID {
		return nil, nil
	}
	return c, nil
}

// ignoreNotFound drops NotFound: an object deleted under a sync needs no
// retry (its deletion enqueues what depends on it).
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func setAnnotation(m *metav1.ObjectMeta, k, v string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	} else {
		m.Annotations = maps.Clone(m.Annotations)
	}
	m.Annotations[k] = v
}
