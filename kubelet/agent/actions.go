package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/internal/crash"
	"github.com/kubebus/kubebus/kubelet/pods"
	"github.com/kubebus/kubebus/kubelet/pods/volumes"
	"github.com/kubebus/kubebus/kubelet/prober"
	"github.com/kubebus/kubebus/kubelet/runtime"
)

// Waiting reasons for containers that could not start, as upstream.
const (
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonCreateContainerError       = "CreateContainerError"
	ReasonErrImagePull               = "ErrImagePull"
	ReasonErrImageNeverPull          = "ErrImageNeverPull"
	ReasonRunContainerError          = "RunContainerError"
)

// execute runs the plan's actions in order and stops at the first
// failure. Consecutive kills run in parallel.
func (k *Kubelet) execute(ctx context.Context, pod *corev1.Pod, plan pods.Plan, st *podState) error {
	sandboxID := plan.SandboxID
	var sandboxIP string
	acts := plan.Actions
	for i := 0; i < len(acts); i++ {
		a := acts[i]
		var err error
		switch a.Kind {
		case pods.CreateSandbox:
			if err = k.mountClaims(ctx, pod); err != nil {
				break
			}
			var sb runtime.Sandbox
			sb, err = k.createSandbox(ctx, pod)
			sandboxID, sandboxIP = sb.ID, sb.IP
		case pods.StartContainer:
			err = k.startContainer(ctx, pod, a, sandboxID, sandboxIP, st)
		case pods.KillContainer:
			j := i
			for j+1 < len(acts) && acts[j+1].Kind == pods.KillContainer && !acts[j+1].Sidecar {
				j++
			}
			err = k.killContainers(ctx, pod, acts[i:j+1])
			i = j
		case pods.RemoveContainer:
			err = k.rt.RemoveContainer(ctx, a.ContainerID)
		case pods.StopSandbox:
			err = k.rt.StopPodSandbox(ctx, a.SandboxID)
		case pods.RemoveSandbox:
			err = k.rt.RemovePodSandbox(ctx, a.SandboxID)
		case pods.DeletePod:
			err = k.deletePod(ctx, pod)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
	}
	return nil
}

// mountClaims sets the pod's persistentVolumeClaim volumes up before its
// sandbox is made, as upstream's volume manager does: while a claim is
// missing or unbound (or its volume cannot be mounted here) the pod waits
// in ContainerCreating with a FailedMount event, and is retried.
func (k *Kubelet) mountClaims(ctx context.Context, pod *corev1.Pod) error {
	if pod == nil {
		return nil
	}
	if err := k.volumes.SetupClaims(ctx, pod); err != nil {
		k.event(pod, corev1.EventTypeWarning, "FailedMount", "%s", volumes.FailedMountMessage(err))
		return err
	}
	return nil
}

func (k *Kubelet) createSandbox(ctx context.Context, pod *corev1.Pod) (runtime.Sandbox, error) {
	if pod == nil {
		return runtime.Sandbox{}, errors.New("no pod to create a sandbox for")
	}
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		hostname = pod.Spec.Hostname
	}
	cfg := runtime.SandboxConfig{
		PodUID: string(pod.UID), Name: pod.Name, Namespace: pod.Namespace, Hostname: hostname,
		HostNetwork: pod.Spec.HostNetwork, Labels: pod.Labels, ResolvConf: k.resolvConf(pod),
		HostIPC: pod.Spec.HostIPC, HostPID: pod.Spec.HostPID,
		ShareProcessNamespace: pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace,
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				cfg.PortMappings = append(cfg.PortMappings, runtime.PortMapping{Protocol: string(p.Protocol), ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIP: p.HostIP})
			}
		}
	}
	sb, err := k.rt.RunPodSandbox(ctx, cfg)
	if err != nil {
		k.event(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		return sb, err
	}
	return sb, nil
}

// specOf returns the container an action starts.
func specOf(pod *corev1.Pod, a pods.Action) *corev1.Container {
	list := pod.Spec.Containers
	if a.Init {
		list = pod.Spec.InitContainers
	}
	if a.Index < 0 || a.Index >= len(list) {
		return nil
	}
	return &list[a.Index]
}

func (k *Kubelet) startContainer(ctx context.Context, pod *corev1.Pod, a pods.Action, sandboxID, sandboxIP string, st *podState) error {
	if pod == nil {
		return errors.New("no pod to start a container for")
	}
	c := specOf(pod, a)
	if c == nil {
		return fmt.Errorf("container %s is not in the pod's spec", a.Container)
	}
	fail := func(reason string, err error) error {
		k.mu.Lock()
		st.errs[c.Name] = pods.Waiting{Reason: reason, Message: err.Error()}
		k.mu.Unlock()
		k.event(pod, corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return err
	}
	imageID, err := k.ensureImage(ctx, pod, c)
	if err != nil {
		reason := ReasonErrImagePull
		if c.ImagePullPolicy == corev1.PullNever {
			reason = ReasonErrImageNeverPull
		}
		return fail(reason, err)
	}
	if err := k.volumes.Setup(ctx, pod); err != nil {
		return fail(ReasonCreateContainerConfigError, err)
	}
	podIPs := []string{}
	if sandboxIP != "" {
		podIPs = append(podIPs, sandboxIP)
	}
	env, err := pods.ResolveEnv(ctx, pod, c, pods.EnvInput{Getter: k.getter, PodIPs: podIPs, HostIPs: k.cfg.HostIPs, NodeAllocatable: k.cfg.Allocatable, ServiceEnv: k.svcEnv.env(ctx)})
	if err != nil {
		return fail(ReasonCreateContainerConfigError, err)
	}
	mounts, err := k.volumes.Mounts(pod, c, env)
	if err != nil {
		return fail(ReasonCreateContainerConfigError, err)
	}
	logPath := pods.LogPath(k.cfg.LogDir, pod, c.Name, a.Attempt)
	cfg, err := pods.BuildContainerConfig(pods.ContainerInput{Pod: pod, Container: c, Attempt: a.Attempt, Env: env, Mounts: mounts, LogPath: logPath, SandboxID: sandboxID})
	if err != nil {
		return fail(ReasonCreateContainerConfigError, err)
	}
	if a.Init {
		cfg.Labels[runtime.LabelInit] = "true"
	}
	// A log file left by an earlier kubelet for this attempt starts over.
	_ = os.Remove(logPath)
	id, err := k.rt.CreateContainer(ctx, sandboxID, cfg)
	if err != nil {
		return fail(ReasonCreateContainerError, err)
	}
	k.event(pod, corev1.EventTypeNormal, "Created", "Created container %s", c.Name)
	if err := k.rt.StartContainer(ctx, id); err != nil {
		return fail(ReasonRunContainerError, err)
	}
	k.mu.Lock()
	delete(st.errs, c.Name)
	k.lastUsed[imageID] = k.cfg.Clock.Now()
	k.mu.Unlock()
	k.event(pod, corev1.EventTypeNormal, "Started", "Started container %s", c.Name)
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		t := prober.Target{Pod: pod, Container: c, ContainerID: id, PodIP: sandboxIP}
		if err := k.prober.RunHandler(ctx, c.Lifecycle.PostStart, t); err != nil {
			k.event(pod, corev1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed: %v", err)
			if stopErr := k.rt.StopContainer(ctx, id, pods.MinStopGrace); stopErr != nil {
				return errors.Join(err, stopErr)
			}
			return fmt.Errorf("postStart hook of %s: %w", c.Name, err)
		}
	}
	return nil
}

// ensureImage makes the container's image present as its pull policy says
// and returns its ID.
func (k *Kubelet) ensureImage(ctx context.Context, pod *corev1.Pod, c *corev1.Container) (string, error) {
	img, err := k.rt.ImageStatus(ctx, c.Image)
	if err != nil {
		return "", fmt.Errorf("checking image %q: %w", c.Image, err)
	}
	switch {
	case img != nil && c.ImagePullPolicy != corev1.PullAlways:
		return img.ID, nil
	case img == nil && c.ImagePullPolicy == corev1.PullNever:
		return "", fmt.Errorf("container image %q is not present with pull policy of Never", c.Image)
	}
	k.event(pod, corev1.EventTypeNormal, "Pulling", "Pulling image %q", c.Image)
	got, err := k.rt.PullImage(ctx, c.Image)
	if err != nil {
		return "", fmt.Errorf("pulling image %q: %w", c.Image, err)
	}
	k.event(pod, corev1.EventTypeNormal, "Pulled", "Successfully pulled image %q", c.Image)
	return got.ID, nil
}

// killContainers stops containers in parallel, each after its preStop
// hook, within its grace period.
func (k *Kubelet) killContainers(ctx context.Context, pod *corev1.Pod, acts []pods.Action) error {
	var wg sync.WaitGroup
	errs := make([]error, len(acts))
	for i, a := range acts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = k.killContainer(ctx, pod, a)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (k *Kubelet) killContainer(ctx context.Context, pod *corev1.Pod, a pods.Action) error {
	start := k.cfg.Clock.Now()
	if pod != nil {
		msg := a.Message
		if msg == "" {
			msg = "Stopping container " + a.Container
		}
		k.event(pod, corev1.EventTypeNormal, "Killing", "%s", msg)
	}
	if a.PreStop != nil && a.GracePeriod > 0 && pod != nil {
		var spec *corev1.Container
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == a.Container {
				spec = &pod.Spec.Containers[i]
			}
		}
		if spec != nil {
			hctx, cancel := context.WithTimeout(ctx, a.GracePeriod)
			err := k.prober.RunHandler(hctx, a.PreStop, prober.Target{Pod: pod, Container: spec, ContainerID: a.ContainerID, PodIP: pod.Status.PodIP})
			cancel()
			if err != nil {
				k.event(pod, corev1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed: %v", err)
			}
		}
	}
	grace := max(a.GracePeriod-k.cfg.Clock.Since(start), pods.MinStopGrace)
	return k.rt.StopContainer(ctx, a.ContainerID, grace)
}

// deletePod cleans the pod's volumes up and deletes it from the API for
// good (a static pod's mirror is the static source's business).
func (k *Kubelet) deletePod(ctx context.Context, pod *corev1.Pod) error {
	if pod == nil {
		return nil
	}
	if err := k.volumes.Cleanup(pod.UID); err != nil {
		return fmt.Errorf("cleaning the volumes up: %w", err)
	}
	if isStatic(pod) {
		return nil
	}
	zero := int64(0)
	uid := pod.UID
	err := k.cfg.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// report computes the pod's status and writes it when it changed.
func (k *Kubelet) report(ctx context.Context, pod *corev1.Pod, sbs []runtime.Sandbox, cs []runtime.Container, st *podState) error {
	k.mu.Lock()
	waiting := map[string]pods.Waiting{}
	for n, w := range st.waiting {
		waiting[n] = w
	}
	for n, w := range st.errs {
		waiting[n] = w
	}
	k.mu.Unlock()
	cur := pod
	if isStatic(pod) {
		if cur = k.mirrorOf(pod); cur == nil {
			return nil // no mirror yet: the status goes there once it exists
		}
		// The static pod's own status is what the mirror shows.
		cur = cur.DeepCopy()
		cur.Spec = pod.Spec
	}
	status := pods.ComputeStatus(pods.StatusInput{Pod: cur, Sandboxes: sbs, Containers: cs, Probes: k.probeResults(cs), Waiting: waiting, HostIPs: k.cfg.HostIPs, Now: k.cfg.Clock.Now()})
	k.probes.UpdatePod(pod, podIP(sbs), running(cs))
	if equality.Semantic.DeepEqual(status, cur.Status) {
		return nil
	}
	return writeStatus(ctx, k.cfg.Client, cur, status)
}

// writeStatus writes a pod's status, re-reading the pod on a conflict.
func writeStatus(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, status corev1.PodStatus) error {
	api := client.CoreV1().Pods(pod.Namespace)
	upd := pod.DeepCopy()
	upd.Status = status
	for range 3 {
		_, err := api.UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err):
			return fmt.Errorf("writing the status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		fresh, err := api.Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if fresh.UID != pod.UID {
			return nil
		}
		upd = fresh.DeepCopy()
		upd.Status = status
	}
	return fmt.Errorf("writing the status of pod %s/%s: conflicts", pod.Namespace, pod.Name)
}

func (k *Kubelet) event(pod *corev1.Pod, typ, reason, format string, args ...any) {
	if k.recorder == nil || pod == nil {
		return
	}
	ref := pod
	if isStatic(pod) {
		if ref = k.mirrorOf(pod); ref == nil {
			return
		}
	}
	k.recorder.Eventf(ref, typ, reason, format, args...)
}

// apiGetter reads ConfigMaps, Secrets, PersistentVolumeClaims and
// PersistentVolumes through the API when a pod starts a container (no
// cache: they are read once per start; the Node authorizer allows those of
// the node's pods).
type apiGetter struct{ client kubernetes.Interface }

func (g apiGetter) GetConfigMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	return g.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

func (g apiGetter) GetSecret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	return g.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}

func (g apiGetter) GetPersistentVolumeClaim(ctx context.Context, ns, name string) (*corev1.PersistentVolumeClaim, error) {
	return g.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
}

func (g apiGetter) GetPersistentVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error) {
	return g.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
}

// fingerprint summarizes what the runtime holds of a pod, so a relist can
// tell which pods changed. An exited container counts with its exit code
// and reason, so that a corrected exit is synced too.
func fingerprint(sbs []runtime.Sandbox, cs []runtime.Container) string {
	var b strings.Builder
	for _, s := range sbs {
		fmt.Fprintf(&b, "s:%s:%s;", s.ID, s.State)
	}
	for _, c := range cs {
		fmt.Fprintf(&b, "c:%s:%s", c.ID, c.State)
		if c.State == runtime.ContainerExited {
			fmt.Fprintf(&b, ":%d:%s", c.ExitCode, c.Reason)
		}
		b.WriteByte(';')
	}
	return b.String()
}

// every runs fn every period until ctx ends; where names fn in the panic
// log and kubebus_panics_total.
func (k *Kubelet) every(ctx context.Context, where string, period time.Duration, fn func(context.Context)) {
	t := k.cfg.Clock.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			// A panic is logged and counted; the next tick runs fn again.
			_ = crash.Do(k.log, "kubelet", where, "", func() error { fn(ctx); return nil })
		}
	}
}

// relist enqueues the pods whose sandboxes or containers changed, and the
// ones the runtime holds that no source wants (orphans).
func (k *Kubelet) relist(ctx context.Context) {
	sbs, err := k.rt.ListPodSandboxes(ctx)
	if err != nil {
		k.log.Warn("relisting sandboxes", "err", err)
		return
	}
	cs, err := k.rt.ListContainers(ctx)
	if err != nil {
		k.log.Warn("relisting containers", "err", err)
		return
	}
	bySB := map[string][]runtime.Sandbox{}
	byC := map[string][]runtime.Container{}
	for _, s := range sbs {
		bySB[s.PodUID] = append(bySB[s.PodUID], s)
	}
	for _, c := range cs {
		uid := c.Labels[runtime.LabelPodUID]
		byC[uid] = append(byC[uid], c)
	}
	now := map[string]string{}
	for uid := range bySB {
		now[uid] = fingerprint(bySB[uid], byC[uid])
	}
	for uid := range byC {
		now[uid] = fingerprint(bySB[uid], byC[uid])
	}
	k.mu.Lock()
	var changed []string
	for uid, fp := range now {
		if k.seen[types.UID(uid)] != fp {
			changed = append(changed, uid)
			k.seen[types.UID(uid)] = fp
		}
	}
	for uid := range k.seen {
		if _, ok := now[string(uid)]; !ok {
			changed = append(changed, string(uid))
			delete(k.seen, uid)
		}
	}
	k.mu.Unlock()
	for _, uid := range changed {
		if uid != "" {
			k.q.Add(types.UID(uid))
		}
	}
}
