package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
	"github.com/kubebus/kubebus/test/prereq"
)

// agentDaemonSet runs on every node, the real one included: busybox (the
// image the local node has) that stops at once on SIGTERM.
const agentDaemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 5}
  template:
    metadata:
      labels: {app: agent}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: agent
        image: busybox:latest
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`

// tolerantDaemonSet is for hollow-0 and hollow-1 only, and tolerates the
// taint the test puts on them.
const tolerantDaemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: tolerant
spec:
  selector:
    matchLabels: {app: tolerant}
  template:
    metadata:
      labels: {app: tolerant}
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: kubernetes.io/hostname, operator: In, values: [hollow-0, hollow-1]}
      tolerations:
      - {key: dedicated, operator: Exists}
      containers:
      - name: agent
        image: busybox:latest
`

// surgeDaemonSet runs on the hollow nodes only and rolls out by surging.
const surgeDaemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: surge
spec:
  selector:
    matchLabels: {app: surge}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 0, maxSurge: 10%}
  template:
    metadata:
      labels: {app: surge}
    spec:
      nodeSelector: {node.kubernetes.io/instance-type: hollow}
      containers:
      - name: agent
        image: registry.k8s.io/pause:3.10
`

// TestIntegrationDaemonSet: the real local node and 50 hollow nodes each get
// exactly one pod of a DaemonSet, placed by the scheduler through the node
// affinity the controller sets; a node that joins gets its pod and loses it
// when it leaves; a NoSchedule taint keeps new pods off and a NoExecute one
// evicts, unless the DaemonSet tolerates it; an image change rolls out
// without ever more than maxUnavailable nodes lacking an available pod,
// followed by `kubectl rollout status`, listed by `rollout history` and
// undone by `rollout undo` (kubectl 1.32 and 1.33); a DaemonSet with
// maxSurge starts each new pod beside the old one.
func TestIntegrationDaemonSet(t *testing.T) {
	s, node := harness.StartServerWithNode(t)
	cs := s.Clientset(t)
	ctx := context.Background()
	kubectl := map[string]string{}
	for _, minor := range []string{"1.32", "1.33"} {
		if kubectl[minor] = harness.PinnedKubectl(t, minor); kubectl[minor] == "" {
			prereq.Missing(t, "kubectl.%s not found on PATH or beside the stock kubectl", minor)
		}
	}
	harness.StartHollowNodes(t, s, 50)
	// Cleanups run last first: the DaemonSets and their pods go while the
	// hollow kubelets are still there to finish the pods' deletion.
	t.Cleanup(func() { deleteDaemonSets(t, cs) })
	dsWaitNodesReady(t, cs, 51)

	// One pod per node.
	start := time.Now()
	s.MustRun(t, kubectl["1.33"], agentDaemonSet, "apply", "-f", "-")
	waitDaemonSet(t, cs, "agent", 51, "")
	t.Logf("51 agent pods available after %v", time.Since(start).Round(time.Millisecond))
	pods := podsOf(t, cs, "default", "app=agent")
	perNode := map[string]int{}
	for _, p := range pods {
		perNode[p.Spec.NodeName]++
		terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) != 1 || len(terms[0].MatchFields) != 1 || terms[0].MatchFields[0].Key != "metadata.name" || terms[0].MatchFields[0].Values[0] != p.Spec.NodeName {
			t.Errorf("pod %s on %s has node affinity %+v", p.Name, p.Spec.NodeName, terms)
		}
	}
	if len(pods) != 51 || len(perNode) != 51 || perNode[node.Name] != 1 {
		t.Fatalf("%d pods on %d nodes (%d on the real node %s)", len(pods), len(perNode), perNode[node.Name], node.Name)
	}
	out := s.MustRun(t, kubectl["1.32"], "", "get", "ds", "agent", "-o", "wide")
	if !strings.Contains(out, "NODE SELECTOR") || !strings.Contains(out, "CONTAINERS") || !dsMatch(`agent\s+51\s+51\s+51\s+51\s+51\s+<none>`, out) {
		t.Errorf("kubectl get ds -o wide:\n%s", out)
	}
	events := s.MustRun(t, kubectl["1.33"], "", "get", "events", "--field-selector", "involvedObject.kind=DaemonSet,reason=SuccessfulCreate", "-o", "name")
	if n := len(strings.Fields(events)); n == 0 {
		t.Errorf("no SuccessfulCreate events on the DaemonSet")
	}

	// A node that joins gets its pod.
	extra := harness.StartHollowNodes(t, s, 1, "--node-name-prefix", "extra-", "--instance", "extra", "--node-ip-range", "127.2.0.0/16")
	t.Cleanup(func() { deleteDaemonSets(t, cs) })
	waitDaemonSet(t, cs, "agent", 52, "")
	gone := dsPodsOn(t, cs, "app=agent", "extra-0")
	if len(gone) != 1 {
		t.Fatalf("%d agent pods on the new node", len(gone))
	}

	// A node that leaves loses its pod (no kubelet is left to finish its
	// graceful deletion: the test does, as the pod GC would).
	extra.Stop()
	if err := cs.CoreV1().Nodes().Delete(ctx, "extra-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDaemonSet(t, cs, "agent", 51, "")
	harness.Eventually(t, 30*time.Second, func() error {
		p, err := cs.CoreV1().Pods("default").Get(ctx, gone[0].Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.DeletionTimestamp == nil {
			return fmt.Errorf("pod %s of the removed node is not being deleted", p.Name)
		}
		return nil
	})
	if err := cs.CoreV1().Pods("default").Delete(ctx, gone[0].Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
		t.Fatal(err)
	}

	// Taints: NoSchedule keeps new pods off (the old one stays, counted
	// misscheduled), NoExecute evicts; the tolerant DaemonSet goes there.
	s.MustRun(t, kubectl["1.33"], "", "taint", "nodes", "hollow-0", "dedicated=ds:NoSchedule")
	s.MustRun(t, kubectl["1.33"], "", "taint", "nodes", "hollow-1", "dedicated=ds:NoExecute")
	waitDaemonSet(t, cs, "agent", 49, "")
	harness.Eventually(t, 30*time.Second, func() error {
		if p := dsPodsOn(t, cs, "app=agent", "hollow-1"); len(p) != 0 {
			return fmt.Errorf("%d agent pods still on hollow-1 (NoExecute)", len(p))
		}
		ds, err := cs.AppsV1().DaemonSets("default").Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ds.Status.NumberMisscheduled != 1 {
			return fmt.Errorf("%d misscheduled, want hollow-0's", ds.Status.NumberMisscheduled)
		}
		return nil
	})
	victim := dsPodsOn(t, cs, "app=agent", "hollow-0")
	if len(victim) != 1 {
		t.Fatalf("%d agent pods on hollow-0 (NoSchedule: the old one stays)", len(victim))
	}
	if err := cs.CoreV1().Pods("default").Delete(ctx, victim[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		ds, err := cs.AppsV1().DaemonSets("default").Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ds.Status.NumberMisscheduled != 0 {
			return fmt.Errorf("%d misscheduled", ds.Status.NumberMisscheduled)
		}
		return nil
	})
	if p := dsPodsOn(t, cs, "app=agent", "hollow-0"); len(p) != 0 {
		t.Fatalf("a new agent pod on the NoSchedule-tainted hollow-0: %s", p[0].Name)
	}
	s.MustRun(t, kubectl["1.33"], tolerantDaemonSet, "apply", "-f", "-")
	waitDaemonSet(t, cs, "tolerant", 2, "")
	for _, n := range []string{"hollow-0", "hollow-1"} {
		if p := dsPodsOn(t, cs, "app=tolerant", n); len(p) != 1 {
			t.Errorf("%d tolerant pods on %s", len(p), n)
		}
	}

	// Rolling updates, watched pod by pod.
	rollout := func(bin, image string, change ...string) {
		t.Helper()
		guard := dsWatchRollout(t, cs, "agent", 49, 5, 0)
		start := time.Now()
		s.MustRun(t, bin, "", change...)
		var wg sync.WaitGroup
		outs := map[string]string{}
		var mu sync.Mutex
		for minor, k := range kubectl {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := s.Run(t, k, "", "rollout", "status", "ds/agent", "--timeout=4m")
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					outs[minor] = "error: " + err.Error()
				} else {
					outs[minor] = out
				}
			}()
		}
		wg.Wait()
		for minor, out := range outs {
			if !strings.Contains(out, `daemon set "agent" successfully rolled out`) {
				t.Errorf("kubectl.%s rollout status ds/agent:\n%s", minor, out)
			}
		}
		waitDaemonSet(t, cs, "agent", 49, image)
		worst := guard()
		t.Logf("rolled out %s in %v; at most %d of 49 nodes unavailable", image, time.Since(start).Round(time.Millisecond), worst.unavailable)
		if worst.unavailable == 0 {
			t.Errorf("the watch never saw a node unavailable during the rollout")
		}
	}
	rollout(kubectl["1.33"], "docker.io/library/busybox:latest", "set", "image", "ds/agent", "agent=docker.io/library/busybox:latest")

	for minor, k := range kubectl {
		out := s.MustRun(t, k, "", "rollout", "history", "ds/agent")
		if !dsMatch(`(?m)^1\s`, out) || !dsMatch(`(?m)^2\s`, out) {
			t.Errorf("kubectl.%s rollout history ds/agent:\n%s", minor, out)
		}
	}
	out = s.MustRun(t, kubectl["1.32"], "", "rollout", "history", "ds/agent", "--revision=1")
	if !strings.Contains(out, "Image:") || !strings.Contains(out, "busybox:latest") || strings.Contains(out, "docker.io/library/busybox") {
		t.Errorf("kubectl rollout history ds/agent --revision=1:\n%s", out)
	}
	rollout(kubectl["1.33"], "busybox:latest", "rollout", "undo", "ds/agent")
	rollout(kubectl["1.32"], "docker.io/library/busybox:latest", "rollout", "undo", "ds/agent")

	// maxSurge: the hollow nodes' DaemonSet replaces each pod by starting
	// the new one beside it, never leaving a node without an available pod
	// and never surging on more than maxSurge (10% of 48: 5) nodes at once.
	s.MustRun(t, kubectl["1.33"], surgeDaemonSet, "apply", "-f", "-")
	waitDaemonSet(t, cs, "surge", 48, "")
	guard := dsWatchRollout(t, cs, "surge", 48, 0, 5)
	start = time.Now()
	s.MustRun(t, kubectl["1.32"], "", "set", "image", "ds/surge", "agent=registry.k8s.io/pause:3.9")
	out = s.MustRun(t, kubectl["1.32"], "", "rollout", "status", "ds/surge", "--timeout=4m")
	if !strings.Contains(out, `daemon set "surge" successfully rolled out`) {
		t.Errorf("kubectl rollout status ds/surge:\n%s", out)
	}
	waitDaemonSet(t, cs, "surge", 48, "registry.k8s.io/pause:3.9")
	worst := guard()
	t.Logf("surged %v; at most %d nodes surged at once", time.Since(start).Round(time.Millisecond), worst.surged)
	if worst.surged == 0 {
		t.Errorf("the watch never saw a node surged during the rollout")
	}

	revs, err := cs.AppsV1().ControllerRevisions("default").List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
	if err != nil {
		t.Fatal(err)
	}
	var numbers []int64
	for _, r := range revs.Items {
		numbers = append(numbers, r.Revision)
	}
	if len(numbers) != 2 {
		t.Errorf("revisions %v, want 3 and 4 (each template once)", numbers)
	}
}

// deleteDaemonSets deletes the DaemonSets of the default namespace and
// their pods, and waits for the pods to be gone.
func deleteDaemonSets(t *testing.T, cs kubernetes.Interface) {
	ctx := context.Background()
	if err := cs.AppsV1().DaemonSets("default").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Logf("cleanup: deleting the daemonsets: %v", err)
	}
	sel := metav1.ListOptions{LabelSelector: "app in (agent,tolerant,surge)"}
	if err := cs.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		t.Logf("cleanup: deleting the daemonset pods: %v", err)
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		l, err := cs.CoreV1().Pods("default").List(ctx, sel)
		if err == nil && len(l.Items) == 0 {
			return
		}
	}
	t.Logf("cleanup: daemonset pods still there after a minute")
}

// dsWaitNodesReady waits for n Ready nodes.
func dsWaitNodesReady(t *testing.T, cs kubernetes.Interface, n int) {
	t.Helper()
	harness.Eventually(t, 90*time.Second, func() error {
		nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for _, no := range nodes.Items {
			for _, c := range no.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready != n {
			return fmt.Errorf("%d of %d nodes Ready", ready, n)
		}
		return nil
	})
}

// waitDaemonSet waits until DaemonSet name is rolled out on want nodes:
// its status observed the latest generation and counts want scheduled,
// updated and available pods, and no misscheduled one unless the caller
// checks that; with image, every pod of it runs image.
func waitDaemonSet(t *testing.T, cs kubernetes.Interface, name string, want int32, image string) {
	t.Helper()
	harness.Eventually(t, 4*time.Minute, func() error {
		ds, err := cs.AppsV1().DaemonSets("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		st := ds.Status
		if st.ObservedGeneration < ds.Generation || st.DesiredNumberScheduled != want || st.CurrentNumberScheduled != want ||
			st.UpdatedNumberScheduled != want || st.NumberAvailable != want || st.NumberReady != want {
			return fmt.Errorf("daemonset %s (generation %d): %+v, want %d", name, ds.Generation, st, want)
		}
		if image == "" {
			return nil
		}
		for _, p := range podsOf(t, cs, "default", "app="+name) {
			if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image != image {
				return fmt.Errorf("pod %s runs %s", p.Name, p.Spec.Containers[0].Image)
			}
		}
		return nil
	})
}

// dsPodsOn lists the pods with selector bound to node (or meant for it).
func dsPodsOn(t *testing.T, cs kubernetes.Interface, selector, node string) []corev1.Pod {
	t.Helper()
	var out []corev1.Pod
	for _, p := range podsOf(t, cs, "default", selector) {
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// rolloutLimits are the worst a watched rollout got: nodes without an
// available pod, and nodes with a second pod not yet ready (surged).
type rolloutLimits struct{ unavailable, surged int }

// dsWatchRollout watches the pods labelled app=name from now on and fails
// the test when, at any revision, more than maxUnavailable of the desired
// nodes have no ready pod that is not being deleted, or more than maxSurge
// nodes have a pod that is not ready beside another (neither being
// deleted). The nodes are those with a ready pod now (desired of them).
// The returned function stops the watch and returns the worst seen.
func dsWatchRollout(t *testing.T, cs kubernetes.Interface, name string, desired, maxUnavailable, maxSurge int) func() rolloutLimits {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sel := metav1.ListOptions{LabelSelector: "app=" + name}
	list, err := cs.CoreV1().Pods("default").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string]*corev1.Pod{}
	for i := range list.Items {
		pods[list.Items[i].Name] = &list.Items[i]
	}
	// count returns the available pods per node and the surged nodes.
	count := func() (map[string]bool, int) {
		avail, live, unready := map[string]bool{}, map[string]int{}, map[string]bool{}
		for _, p := range pods {
			if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
				continue
			}
			live[p.Spec.NodeName]++
			if ready(p) {
				avail[p.Spec.NodeName] = true
			} else {
				unready[p.Spec.NodeName] = true
			}
		}
		surged := 0
		for n, c := range live {
			if c > 1 && unready[n] {
				surged++
			}
		}
		return avail, surged
	}
	nodes, _ := count()
	if len(nodes) != desired {
		t.Fatalf("%d nodes with an available %s pod before the rollout, want %d", len(nodes), name, desired)
	}
	sel.ResourceVersion = list.ResourceVersion
	w, err := cs.CoreV1().Pods("default").Watch(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	var worst rolloutLimits
	var violation string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				pods[p.Name] = p
			case watch.Deleted:
				delete(pods, p.Name)
			}
			avail, surged := count()
			missing := 0
			for n := range nodes {
				if !avail[n] {
					missing++
				}
			}
			worst.unavailable = max(worst.unavailable, missing)
			worst.surged = max(worst.surged, surged)
			if (missing > maxUnavailable || surged > maxSurge) && violation == "" {
				violation = fmt.Sprintf("%d of %d nodes without an available pod (max %d), %d surged (max %d) at resourceVersion %s (%s %s)",
					missing, desired, maxUnavailable, surged, maxSurge, p.ResourceVersion, ev.Type, p.Name)
			}
		}
	}()
	return func() rolloutLimits {
		cancel()
		w.Stop()
		<-done
		if violation != "" {
			t.Errorf("daemonset %s: %s", name, violation)
		}
		return worst
	}
}

func dsMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }
