package agent

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/kubebus/kubebus/apiserver/defaults"
	"github.com/kubebus/kubebus/internal/crash"
)

// Annotations of static pods, as upstream.
const (
	AnnotationConfigSource = "kubernetes.io/config.source"
	AnnotationConfigHash   = "kubernetes.io/config.hash"
	AnnotationConfigSeen   = "kubernetes.io/config.seen"
	sourceFile             = "file"
)

// staticPeriod is how often the manifest directory is read again.
const staticPeriod = 5 * time.Second

// isStatic reports whether a pod came from the manifest directory.
func isStatic(p *corev1.Pod) bool { return p.Annotations[AnnotationConfigSource] == sourceFile }

// StaticPod turns a manifest into the pod the kubelet runs: named
// <name>-<node>, bound to the node, defaulted as the API server would, with
// a UID that is a hash of the manifest and the node (so it is the same after
// a restart).
func StaticPod(data []byte, node string) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	if err := yaml.UnmarshalStrict(data, pod); err != nil {
		return nil, fmt.Errorf("decoding the manifest: %w", err)
	}
	if pod.Kind != "" && pod.Kind != "Pod" {
		return nil, fmt.Errorf("the manifest is a %s, not a Pod", pod.Kind)
	}
	if pod.Name == "" {
		return nil, errors.New("the manifest has no metadata.name")
	}
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	if len(pod.Spec.Containers) == 0 {
		return nil, errors.New("the manifest has no containers")
	}
	sum := md5.New()
	sum.Write(data)
	fmt.Fprintf(sum, "host:%s", node)
	hash := hex.EncodeToString(sum.Sum(nil))
	pod.Name = pod.Name + "-" + node
	pod.UID = types.UID(hash)
	pod.Spec.NodeName = node
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationConfigSource] = sourceFile
	pod.Annotations[AnnotationConfigHash] = hash
	defaults.Default(pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: defaults.PodQOSClass(pod)}
	return pod, nil
}

// MirrorPod is the API's view of a static pod.
func MirrorPod(static *corev1.Pod, node *corev1.Node) *corev1.Pod {
	m := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: static.Name, Namespace: static.Namespace, Labels: static.Labels,
		Annotations: map[string]string{},
	}, Spec: *static.Spec.DeepCopy()}
	for k, v := range static.Annotations {
		m.Annotations[k] = v
	}
	m.Annotations[corev1.MirrorPodAnnotationKey] = static.Annotations[AnnotationConfigHash]
	if node != nil {
		controller := true
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: &controller}}
	}
	return m
}

// staticSource reads static pods from a directory and keeps their mirror
// pods in the API.
type staticSource struct {
	dir, node string
	k         *Kubelet
	kickCh    chan struct{}
	nodeObj   *corev1.Node
}

func (s *staticSource) kick() {
	select {
	case s.kickCh <- struct{}{}:
	default:
	}
}

// load reads the directory and updates the kubelet's desired pods.
func (s *staticSource) load() error {
	entries, err := os.ReadDir(s.dir)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("reading %s: %w", s.dir, err)
	}
	want := map[types.UID]*corev1.Pod{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !slices.Contains([]string{".yaml", ".yml", ".json"}, filepath.Ext(name)) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(s.dir, name))
		if err != nil {
			s.k.log.Warn("reading a static pod manifest", "file", name, "err", err)
			continue
		}
		pod, err := StaticPod(data, s.node)
		if err != nil {
			s.k.log.Warn("skipping a static pod manifest", "file", name, "err", err)
			continue
		}
		want[pod.UID] = pod
	}
	k := s.k
	var changed []types.UID
	k.mu.Lock()
	for uid, p := range k.pods {
		if isStatic(p) && want[uid] == nil {
			delete(k.pods, uid)
			changed = append(changed, uid)
		}
	}
	for uid, p := range want {
		if k.pods[uid] == nil {
			p.Annotations[AnnotationConfigSeen] = k.cfg.Clock.Now().UTC().Format(time.RFC3339Nano)
			k.pods[uid] = p
			changed = append(changed, uid)
		}
	}
	k.mu.Unlock()
	for _, uid := range changed {
		k.q.Add(uid)
	}
	return nil
}

func (s *staticSource) run(ctx context.Context) {
	t := s.k.cfg.Clock.NewTicker(staticPeriod)
	defer t.Stop()
	// A panic in either step is logged and counted (kubebus_panics_total
	// {component="kubelet"}) and the step runs again on the next round.
	for {
		if err := crash.Do(s.k.log, "kubelet", "syncMirrors", "", func() error { return s.syncMirrors(ctx) }); err != nil && ctx.Err() == nil {
			s.k.log.Warn("syncing mirror pods", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if err := crash.Do(s.k.log, "kubelet", "loadStatic", s.dir, s.load); err != nil {
				s.k.log.Warn("reading static pods", "dir", s.dir, "err", err)
			}
		case <-s.kickCh:
		}
	}
}

// syncMirrors creates the missing mirror pods, replaces stale ones and
// deletes those whose static pod is gone.
func (s *staticSource) syncMirrors(ctx context.Context) error {
	k := s.k
	if s.nodeObj == nil {
		n, err := k.cfg.Client.CoreV1().Nodes().Get(ctx, s.node, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading node %s: %w", s.node, err)
		}
		s.nodeObj = n
	}
	k.mu.Lock()
	var statics []*corev1.Pod
	for _, p := range k.pods {
		if isStatic(p) {
			statics = append(statics, p)
		}
	}
	mirrors := map[string]*corev1.Pod{}
	for key, m := range k.mirrors {
		mirrors[key] = m
	}
	k.mu.Unlock()

	var errs []error
	api := k.cfg.Client.CoreV1()
	del := func(m *corev1.Pod) {
		zero := int64(0)
		uid := m.UID
		err := api.Pods(m.Namespace).Delete(ctx, m.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting mirror pod %s/%s: %w", m.Namespace, m.Name, err))
		}
	}
	for _, p := range statics {
		key := p.Namespace + "/" + p.Name
		m := mirrors[key]
		delete(mirrors, key)
		if m != nil && m.Annotations[corev1.MirrorPodAnnotationKey] == p.Annotations[AnnotationConfigHash] && m.DeletionTimestamp == nil {
			continue
		}
		if m != nil {
			del(m)
			continue // created once the deletion is seen
		}
		created, err := api.Pods(p.Namespace).Create(ctx, MirrorPod(p, s.nodeObj), metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("creating mirror pod %s: %w", key, err))
		default:
			k.mu.Lock()
			k.mirrors[key] = created
			k.mu.Unlock()
			k.q.Add(p.UID) // its status goes to the mirror now
		}
	}
	for _, m := range mirrors {
		if m.DeletionTimestamp == nil {
			del(m)
		}
	}
	return errors.Join(errs...)
}

// mirrorOf returns the current mirror pod of a static pod, nil if none.
func (k *Kubelet) mirrorOf(static *corev1.Pod) *corev1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	m := k.mirrors[static.Namespace+"/"+static.Name]
	if m == nil || m.Annotations[corev1.MirrorPodAnnotationKey] != static.Annotations[AnnotationConfigHash] {
		return nil
	}
	return m
}
