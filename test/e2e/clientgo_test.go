package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

// clientGoCase is one scenario against a shared server, in its own namespace.
type clientGoCase struct {
	name string
	run  func(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string)
}

// TestIntegrationClientGo drives the typed client-go clientset against
// `kubebus server` and checks the Kubernetes API semantics client-go and
// the controllers built on it rely on.
func TestIntegrationClientGo(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", apiOnly...)
	cs := s.Clientset(t)
	tests := []clientGoCase{
		{"create sets server fields and defaults", clientGoCreate},
		{"get", clientGoGet},
		{"list with label selectors", clientGoLabelSelectors},
		{"list with field selectors", clientGoFieldSelectors},
		{"pagination with limit and continue", clientGoPagination},
		{"update with a stale resourceVersion conflicts", clientGoStaleUpdate},
		{"status subresource", clientGoStatusSubresource},
		{"generation bumps on spec changes only", clientGoGeneration},
		{"scale subresource", clientGoScale},
		{"pod binding", clientGoBinding},
		{"delete with preconditions", clientGoDeletePreconditions},
		{"graceful delete of a bound pod", clientGoGracefulDelete},
		{"finalizers keep an object until removed", clientGoFinalizers},
		{"delete collection with a selector", clientGoDeleteCollection},
		{"watch resumes from a resourceVersion without gaps or repeats", clientGoWatchResume},
		{"watch with a label selector", clientGoWatchSelector},
		{"watch bookmarks", clientGoWatchBookmarks},
		{"watch list: initial events end with a bookmark", clientGoWatchList},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			tc.run(t, ctx, cs, newTestNamespace(t, ctx, cs, "clientgo-"))
		})
	}
	if strings.Contains(s.Logs(), "panic") {
		t.Errorf("server logged a panic:\n%s", s.Logs())
	}
}

// TestIntegrationClientGoWatchExpired compacts the embedded etcd and checks
// that reads from before the compaction answer 410.
func TestIntegrationClientGoWatchExpired(t *testing.T) {
	harness.SkipShort(t)
	s, etcdURL := startServerWithEtcdPort(t)
	cs := s.Clientset(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	ns := newTestNamespace(t, ctx, cs, "expired-")
	cms := cs.CoreV1().ConfigMaps(ns)

	var first *corev1.ConfigMap
	for i := 0; i < 3; i++ {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = cm
		}
	}
	page, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if page.Continue == "" {
		t.Fatalf("list limit=1 of 3 configmaps returned no continue token")
	}
	cm := first.DeepCopy()
	for i := 0; i < 3; i++ {
		cm.Data = map[string]string{"n": strconv.Itoa(i)}
		if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	compactEtcd(t, ctx, etcdURL, s.EtcdTLS(t))

	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"watch from a compacted revision gets a 410 Expired event", func(t *testing.T) {
			w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
			if err != nil {
				t.Fatalf("watch from compacted rv %s failed before streaming: %v; want a 200 stream with an ERROR event", first.ResourceVersion, err)
			}
			defer w.Stop()
			ev := nextWatchEvent(t, w, 20*time.Second)
			if ev.Type != watch.Error {
				t.Fatalf("first event = %s %T; want ERROR", ev.Type, ev.Object)
			}
			st, ok := ev.Object.(*metav1.Status)
			if !ok {
				t.Fatalf("ERROR event carries %T; want *v1.Status", ev.Object)
			}
			if st.Code != http.StatusGone || st.Reason != metav1.StatusReasonExpired {
				t.Errorf("ERROR event status = code %d reason %q (%s); want 410 Expired", st.Code, st.Reason, st.Message)
			}
			select {
			case ev, ok := <-w.ResultChan():
				if ok {
					t.Errorf("after the 410 the watch sent %s; want it closed", ev.Type)
				}
			case <-time.After(20 * time.Second):
				t.Errorf("watch still open 20s after the 410 event")
			}
		}},
		{"list at an exact compacted revision is 410", func(t *testing.T) {
			_, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
			if code := apiStatusCode(err); code != http.StatusGone {
				t.Errorf("list rv=%s match=Exact after compaction: %v (code %d); want 410", first.ResourceVersion, err, code)
			}
		}},
		{"continue token from before the compaction is 410 Expired", func(t *testing.T) {
			_, err := cms.List(ctx, metav1.ListOptions{Limit: 1, Continue: page.Continue})
			if !apierrors.IsResourceExpired(err) {
				t.Errorf("list with a continue token at compacted rv %s: %v; want 410 Expired", page.ResourceVersion, err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// compactEtcd compacts etcd at its current revision.
func compactEtcd(t *testing.T, ctx context.Context, etcdURL string, tc *tls.Config) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdURL}, TLS: tc, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("connecting to etcd %s: %v", etcdURL, err)
	}
	defer cli.Close()
	resp, err := cli.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("reading etcd revision: %v", err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatalf("compacting etcd at %d: %v", resp.Header.Revision, err)
	}
}

func clientGoCreate(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) {
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cm.Name, "gen-") || len(cm.Name) != len("gen-")+5 {
		t.Errorf("generateName gen- produced name %q; want gen- plus 5 characters", cm.Name)
	}
	checkServerFields(t, &cm.ObjectMeta)
	got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get of generated name %s: %v", cm.Name, err)
	}
	if got.UID != cm.UID || got.ResourceVersion != cm.ResourceVersion || !got.CreationTimestamp.Equal(&cm.CreationTimestamp) {
		t.Errorf("stored %s = uid %s rv %s created %v; create returned uid %s rv %s created %v",
			cm.Name, got.UID, got.ResourceVersion, got.CreationTimestamp, cm.UID, cm.ResourceVersion, cm.CreationTimestamp)
	}

	d, err := cs.AppsV1().Deployments(ns).Create(ctx, webDeployment("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkServerFields(t, &d.ObjectMeta)
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "tagged", Image: "busybox:1.36"},
			{Name: "latest", Image: "busybox"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkServerFields(t, &pod.ObjectMeta)

	tmpl := d.Spec.Template.Spec
	checks := []struct {
		field     string
		got, want any
	}{
		{"deployment metadata.generation", d.Generation, int64(1)},
		{"deployment spec.replicas", ptrValue(d.Spec.Replicas), int32(1)},
		{"deployment spec.strategy.type", d.Spec.Strategy.Type, appsv1.RollingUpdateDeploymentStrategyType},
		{"deployment spec.strategy.rollingUpdate.maxSurge", rollingUpdateField(d, true), "25%"},
		{"deployment spec.strategy.rollingUpdate.maxUnavailable", rollingUpdateField(d, false), "25%"},
		{"deployment spec.revisionHistoryLimit", ptrValue(d.Spec.RevisionHistoryLimit), int32(10)},
		{"deployment spec.progressDeadlineSeconds", ptrValue(d.Spec.ProgressDeadlineSeconds), int32(600)},
		{"deployment template restartPolicy", tmpl.RestartPolicy, corev1.RestartPolicyAlways},
		{"deployment template dnsPolicy", tmpl.DNSPolicy, corev1.DNSClusterFirst},
		{"deployment template schedulerName", tmpl.SchedulerName, corev1.DefaultSchedulerName},
		{"deployment template terminationGracePeriodSeconds", ptrValue(tmpl.TerminationGracePeriodSeconds), int64(30)},
		{"deployment template container terminationMessagePath", tmpl.Containers[0].TerminationMessagePath, corev1.TerminationMessagePathDefault},
		{"deployment template container imagePullPolicy", tmpl.Containers[0].ImagePullPolicy, corev1.PullIfNotPresent},
		{"pod spec.restartPolicy", pod.Spec.RestartPolicy, corev1.RestartPolicyAlways},
		{"pod spec.dnsPolicy", pod.Spec.DNSPolicy, corev1.DNSClusterFirst},
		{"pod spec.schedulerName", pod.Spec.SchedulerName, corev1.DefaultSchedulerName},
		{"pod spec.terminationGracePeriodSeconds", ptrValue(pod.Spec.TerminationGracePeriodSeconds), int64(30)},
		{"pod spec.enableServiceLinks", ptrValue(pod.Spec.EnableServiceLinks), true},
		{"pod spec.containers[tagged].imagePullPolicy", pod.Spec.Containers[0].ImagePullPolicy, corev1.PullIfNotPresent},
		{"pod spec.containers[latest].imagePullPolicy", pod.Spec.Containers[1].ImagePullPolicy, corev1.PullAlways},
		{"pod spec.containers[0].terminationMessagePolicy", pod.Spec.Containers[0].TerminationMessagePolicy, corev1.TerminationMessageReadFile},
		{"pod status.phase", pod.Status.Phase, corev1.PodPending},
		{"pod status.qosClass", pod.Status.QOSClass, corev1.PodQOSBestEffort},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v; want %v", c.field, c.got, c.want)
		}
	}
}

func clientGoGet(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) {
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "there"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, ns, obj string
		wantNotFound  bool
	}{
		{"existing", ns, "there", false},
		{"missing name", ns, "not-there", true},
		{"other namespace", "default", "there", true},
		{"missing namespace", "no-such-namespace", "there", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cs.CoreV1().ConfigMaps(tc.ns).Get(ctx, tc.obj, metav1.GetOptions{})
			if tc.wantNotFound {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("get %s/%s: %v; want 404 NotFound", tc.ns, tc.obj, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.UID != cm.UID || got.ResourceVersion != cm.ResourceVersion || got.Data["k"] != "v" {
				t.Errorf("get = uid %s rv %s data %v; want uid %s rv %s data k=v", got.UID, got.ResourceVersion, got.Data, cm.UID, cm.ResourceVersion)
			}
			if got.Kind != "" && got.Kind != "ConfigMap" {
				t.Errorf("kind = %q", got.Kind)
			}
		})
	}
}

func clientGoLabelSelectors(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) {
	objs := map[string]map[string]string{
		"a1":   {"app": "a", "tier": "web"},
		"a2":   {"app": "a"},
		"b1":   {"app": "b", "tier": "db"},
		"c1":   {"app": "c"},
		"none": nil,
	}
	for name, labels := range objs {
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		selector string
		want     []string
	}{
		{"", []string{"a1", "a2", "b1", "c1", "none"}},
		{"app=a", []string{"a1", "a2"}},
		{"app==a", []string{"a1", "a2"}},
		{"app in (a,b)", []string{"a1", "a2", "b1"}},
		{"app!=a", []string{"b1", "c1", "none"}},
		{"app notin (a,b)", []string{"c1", "none"}},
		{"tier", []string{"a1", "b1"}},
		{"!tier", []string{"a2", "c1", "none"}},
		{"app=a,tier=web", []string{"a1"}},
		{"app=a,!tier", []string{"a2"}},
		{"app=zzz", nil},
	}
	for _, tc := range tests {
		t.Run(tc.selector, func(t *testing.T) {
			list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: tc.selector})
			if err != nil {
				t.Fatal(err)
			}
			if got := configMapNames(list.Items); !slices.Equal(got, tc.want) {
				t.Errorf("labelSelector %q = %v; want %v", tc.selector, got, tc.want)
			}
		})
	}
}

func clientGoFieldSelectors(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) {
	for _, name := range []string{"cm-a", "cm-b", "cm-c"} {
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pods := []struct{ name, node string }{{"p-unscheduled", ""}, {"p-node1", "node-1"}, {"p-node2", "node-2"}, {"p-running", "node-1"}}
	for _, p := range pods {
		pod := busyboxPod(p.name)
		pod.Spec.NodeName = p.node
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	running, err := cs.CoreV1().Pods(ns).Get(ctx, "p-running", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running.Status.Phase = corev1.PodRunning
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, running, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The status.phase rows need the phase stored by UpdateStatus.
	phaseStored := true
	if got, err := cs.CoreV1().Pods(ns).Get(ctx, "p-running", metav1.GetOptions{}); err != nil || got.Status.Phase != corev1.PodRunning {
		phaseStored = false
		t.Errorf("UpdateStatus with phase Running stored phase %q (err %v); the status.phase selector rows cannot run", got.Status.Phase, err)
	}

	tests := []struct {
		resource, selector string
		want               []string
	}{
		{"configmaps", "metadata.name=cm-b", []string{"cm-b"}},
		{"configmaps", "metadata.name!=cm-b", []string{"cm-a", "cm-c"}},
		{"configmaps", "metadata.namespace=" + ns, []string{"cm-a", "cm-b", "cm-c"}},
		{"configmaps", "metadata.name=nope", nil},
		{"pods", "spec.nodeName=node-1", []string{"p-node1", "p-running"}},
		{"pods", "spec.nodeName=", []string{"p-unscheduled"}},
		{"pods", "spec.nodeName!=", []string{"p-node1", "p-node2", "p-running"}},
		{"pods", "status.phase=Running", []string{"p-running"}},
		{"pods", "status.phase=Pending", []string{"p-node1", "p-node2", "p-unscheduled"}},
		{"pods", "spec.nodeName=node-1,status.phase!=Running", []string{"p-node1"}},
		{"pods", "metadata.name=p-node2", []string{"p-node2"}},
	}
	for _, tc := range tests {
		t.Run(tc.resource+" "+tc.selector, func(t *testing.T) {
			if strings.Contains(tc.selector, "status.phase") && !phaseStored {
				t.Fatal("no pod has phase Running: UpdateStatus did not store it")
			}
			opts := metav1.ListOptions{FieldSelector: tc.selector}
			var got []string
			if tc.resource == "pods" {
				list, err := cs.CoreV1().Pods(ns).List(ctx, opts)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range list.Items {
					got = append(got, p.Name)
				}
			} else {
				list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, opts)
				if err != nil {
					t.Fatal(err)
				}
				got = configMapNames(list.Items)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s fieldSelector %q = %v; want %v", tc.resource, tc.selector, got, tc.want)
			}
		})
	}
}

func clientGoPagination(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) {
	cms := cs.CoreV1().ConfigMaps(ns)
	const total, limit = 25, 7
	var want []string
	for i := 0; i < total; i++ {
		name := fmt.Sprintf("page-%02d", i)
		want = append(want, name)
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		seen     []string
		sizes    []int
		listRV   string
		cont     string
		mutated  bool
		maxPages = total/limit + 2
	)
	for page := 0; ; page++ {
		if page == maxPages {
			t.Fatalf("still paging after %d pages (seen %d items)", page, len(seen))
		}
		list, err := cms.List(ctx, metav1.ListOptions{Limit: limit, Continue: cont})
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		sizes = append(sizes, len(list.Items))
		seen = append(seen, configMapNames(list.Items)...)
		if page == 0 {
			listRV = list.ResourceVersion
		} else if list.ResourceVersion != listRV {
			t.Errorf("page %d resourceVersion = %s; want the first page's %s", page, list.ResourceVersion, listRV)
		}
		for _, cm := range list.Items {
			if rvInt(t, cm.ResourceVersion) > rvInt(t, listRV) {
				t.Errorf("page %d item %s rv %s is newer than the list rv %s", page, cm.Name, cm.ResourceVersion, listRV)
			}
		}
		if !mutated {
			// Changes after the first page must not show up in later pages:
			// they all read the snapshot at the first page's revision.
			mutated = true
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "page-99-late"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := cms.Delete(ctx, "page-24", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		cont = list.Continue
		if cont == "" {
			break
		}
	}
	if want := []int{7, 7, 7, 4}; !slices.Equal(sizes, want) {
		t.Errorf("page sizes = %v; want %v", sizes, want)
	}
	if !slices.Equal(seen, want) {
		t.Errorf("items across pages = %v; want each of %v exactly once, in order", seen, want)
	}
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := configMapNames(list.Items)
	if !slices.Contains(names, "page-99-late") || slices.Contains(names, "page-24") || list.Continue != "" {
		t.Errorf("fresh unpaginated list = %v (continue %q); want page-99-late present, page-24 gone, no continue", names, list.Continue)
	}
}

func clientGoStaleUpdate(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) {
	cms := cs.CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := cm.DeepCopy()
	cm.Data["v"] = "2"
	cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.ResourceVersion == stale.ResourceVersion {
		t.Fatalf("update did not change resourceVersion %s", cm.ResourceVersion)
	}
	stale.Data["v"] = "stale"
	_, err = cms.Update(ctx, stale, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("update with stale rv %s (current %s): %v; want 409 Conflict", stale.ResourceVersion, cm.ResourceVersion, err)
	}
	got, err := cms.Get(ctx, "c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Data["v"] != "2" || got.ResourceVersion != cm.ResourceVersion {
		t.Errorf("after the conflict, stored = v=%s rv %s; want v=2 rv %s", got.Data["v"], got.ResourceVersion, cm.ResourceVersion)
	}
	// A ConfigMap allows unconditional updates: no resourceVersion, no conflict.
	got.ResourceVersion = ""
	got.Data["v"] = "3"
	if _, err := cms.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Errorf("unconditional update (no resourceVersion): %v; want success", err)
	}
}

func clientGoStatusSubresource(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) {
	deps := cs.AppsV1().Deployments(ns)
	d, err := deps.Create(ctx, webDeployment("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("UpdateStatus changes only status", func(t *testing.T) {
		in := d.DeepCopy()
		in.Status.Replicas, in.Status.ObservedGeneration = 3, 1
		in.Spec.Replicas = new(int32(5))
		in.Labels["sneaky"] = "yes"
		out, err := deps.UpdateStatus(ctx, in, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := deps.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []*appsv1.Deployment{out, got} {
			if o.Status.Replicas != 3 || o.Status.ObservedGeneration != 1 {
				t.Errorf("status = replicas %d observedGeneration %d; want 3 and 1", o.Status.Replicas, o.Status.ObservedGeneration)
			}
			if ptrValue(o.Spec.Replicas) != 1 || o.Labels["sneaky"] != "" || o.Generation != 1 {
				t.Errorf("UpdateStatus changed more than status: spec.replicas %d, label sneaky=%q, generation %d; want 1, unset, 1",
					ptrValue(o.Spec.Replicas), o.Labels["sneaky"], o.Generation)
			}
		}
	})
	t.Run("Update ignores status", func(t *testing.T) {
		cur, err := deps.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		in := cur.DeepCopy()
		in.Status.Replicas, in.Status.ObservedGeneration = 99, 99
		in.Labels["updated"] = "yes"
		out, err := deps.Update(ctx, in, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := deps.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []*appsv1.Deployment{out, got} {
			if o.Status.Replicas != cur.Status.Replicas || o.Status.ObservedGeneration != cur.Status.ObservedGeneration {
				t.Errorf("Update changed status to replicas %d observedGeneration %d; want it kept at %d and %d",
					o.Status.Replicas, o.Status.ObservedGeneration, cur.Status.Replicas, cur.Status.ObservedGeneration)
			}
			if o.Labels["updated"] != "yes" {
				t.Errorf("Update lost the label change: labels %v", o.Labels)
			}
		}
	})
}

func clientGoGeneration(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) {
	deps := cs.AppsV1().Deployments(ns)
	d, err := deps.Create(ctx, webDeployment("gen"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Generation != 1 {
		t.Fatalf("generation after create = %d; want 1", d.Generation)
	}
	steps := []struct {
		name    string
		status  bool
		mutate  func(d *appsv1.Deployment)
		wantGen int64
	}{
		{"label change", false, func(d *appsv1.Deployment) { d.Labels["x"] = "y" }, 1},
		{"annotation change", false, func(d *appsv1.Deployment) { d.Annotations = map[string]string{"note": "n"} }, 1},
		{"no-op update", false, func(*appsv1.Deployment) {}, 1},
		{"spec.replicas", false, func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(3)) }, 2},
		{"status via UpdateStatus", true, func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 2 }, 2},
		{"template image", false, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" }, 3},
		{"finalizer added", false, func(d *appsv1.Deployment) { d.Finalizers = []string{"example.com/hold"} }, 3},
		{"finalizer removed", false, func(d *appsv1.Deployment) { d.Finalizers = nil }, 3},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			in := d.DeepCopy()
			st.mutate(in)
			var out *appsv1.Deployment
			if st.status {
				out, err = deps.UpdateStatus(ctx, in, metav1.UpdateOptions{})
			} else {
				out, err = deps.Update(ctx, in, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.Generation != st.wantGen {
				t.Errorf("generation after %s = %d; want %d", st.name, out.Generation, st.wantGen)
			}
			d = out
		})
	}
}

func clientGoScale(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) {
	deps := cs.AppsV1().Deployments(ns)
	d, err := deps.Create(ctx, webDeployment("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := deps.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "web" || sc.Namespace != ns || sc.Spec.Replicas != 1 || sc.Status.Replicas != 0 || sc.Status.Selector != "app=web" {
		t.Errorf("GetScale = %s/%s spec %d status %d selector %q; want %s/web spec 1 status 0 selector app=web",
			sc.Namespace, sc.Name, sc.Spec.Replicas, sc.Status.Replicas, sc.Status.Selector, ns)
	}
	if sc.ResourceVersion != d.ResourceVersion || sc.UID != d.UID {
		t.Errorf("scale rv %s uid %s; want the deployment's rv %s uid %s", sc.ResourceVersion, sc.UID, d.ResourceVersion, d.UID)
	}
	stale := sc.DeepCopy()
	sc.Spec.Replicas = 4
	out, err := deps.UpdateScale(ctx, "web", sc, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Spec.Replicas != 4 {
		t.Errorf("UpdateScale returned spec.replicas %d; want 4", out.Spec.Replicas)
	}
	got, err := deps.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ptrValue(got.Spec.Replicas) != 4 || got.Generation != 2 || got.ResourceVersion != out.ResourceVersion {
		t.Errorf("deployment after UpdateScale: replicas %d generation %d rv %s; want 4, 2, rv %s",
			ptrValue(got.Spec.Replicas), got.Generation, got.ResourceVersion, out.ResourceVersion)
	}
	stale.Spec.Replicas = 7
	if _, err := deps.UpdateScale(ctx, "web", stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("UpdateScale with stale rv %s: %v; want 409 Conflict", stale.ResourceVersion, err)
	}
	neg := out.DeepCopy()
	neg.Spec.Replicas = -1
	if _, err := deps.UpdateScale(ctx, "web", neg, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("UpdateScale to -1: %v; want 422 Invalid", err)
	}
	if got, err := deps.Get(ctx, "web", metav1.GetOptions{}); err != nil || ptrValue(got.Spec.Replicas) != 4 {
		t.Errorf("after rejected scale updates: replicas %d (err %v); want 4", ptrValue(got.Spec.Replicas), err)
	}
}

func clientGoBinding(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) {
	pods := cs.CoreV1().Pods(ns)
	if _, err := pods.Create(ctx, busyboxPod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind := func(node string) error {
		return pods.Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: "p"},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}, metav1.CreateOptions{})
	}
	if err := bind("node-a"); err != nil {
		t.Fatalf("bind to node-a: %v", err)
	}
	got, err := pods.Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != "node-a" {
		t.Errorf("spec.nodeName after Bind = %q; want node-a", got.Spec.NodeName)
	}
	if c := podCondition(got, corev1.PodScheduled); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("PodScheduled condition after Bind = %+v; want True", c)
	}
	if err := bind("node-b"); !apierrors.IsConflict(err) {
		t.Errorf("second Bind to node-b: %v; want 409 Conflict", err)
	}
	if got, err := pods.Get(ctx, "p", metav1.GetOptions{}); err != nil || got.Spec.NodeName != "node-a" {
		t.Errorf("after the rejected second Bind, nodeName = %q (err %v); want node-a", got.Spec.NodeName, err)
	}
}

func clientGoDeletePreconditions(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) {
	cms := cs.CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pre"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	staleRV := cm.ResourceVersion
	cm.Data = map[string]string{"k": "v"}
	if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wrongUID := types.UID("00000000-0000-0000-0000-000000000000")
	tests := []struct {
		name         string
		pre          metav1.Preconditions
		wantConflict bool
	}{
		{"wrong uid", metav1.Preconditions{UID: &wrongUID}, true},
		{"stale resourceVersion", metav1.Preconditions{ResourceVersion: &staleRV}, true},
		{"right uid, stale resourceVersion", metav1.Preconditions{UID: &cm.UID, ResourceVersion: &staleRV}, true},
		{"right uid and resourceVersion", metav1.Preconditions{UID: &cm.UID, ResourceVersion: &cm.ResourceVersion}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := cms.Delete(ctx, "pre", metav1.DeleteOptions{Preconditions: &tc.pre})
			_, getErr := cms.Get(ctx, "pre", metav1.GetOptions{})
			if tc.wantConflict {
				if !apierrors.IsConflict(err) {
					t.Errorf("delete: %v; want 409 Conflict", err)
				}
				if getErr != nil {
					t.Errorf("object gone after a failed precondition: %v", getErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("delete: %v", err)
			}
			if !apierrors.IsNotFound(getErr) {
				t.Errorf("get after delete: %v; want 404", getErr)
			}
		})
	}
}

func clientGoGracefulDelete(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) {
	pods := cs.CoreV1().Pods(ns)
	bound := busyboxPod("bound")
	bound.Spec.NodeName = "node-1"
	if _, err := pods.Create(ctx, bound, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, busyboxPod("unbound"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("bound pod gets a deletionTimestamp and stays", func(t *testing.T) {
		before := time.Now()
		code, obj, err := deleteRaw(ctx, cs, ns, "pods", "bound", metav1.DeleteOptions{})
		if err != nil {
			t.Fatalf("delete: %v", err)
		}
		// Upstream answers 200 with the pod for a graceful delete (202 only
		// when orphanDependents=false was asked for).
		if code != http.StatusOK {
			t.Errorf("graceful delete answered %d; want 200", code)
		}
		if p, ok := obj.(*corev1.Pod); !ok || p.DeletionTimestamp == nil {
			t.Errorf("graceful delete returned %T without a deletionTimestamp; want the pod being deleted", obj)
		}
		got, err := pods.Get(ctx, "bound", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("bound pod gone right after a graceful delete: %v", err)
		}
		if got.DeletionTimestamp == nil || ptrValue(got.DeletionGracePeriodSeconds) != 30 {
			t.Fatalf("deletionTimestamp %v gracePeriod %v; want set and 30", got.DeletionTimestamp, got.DeletionGracePeriodSeconds)
		}
		lo, hi := before.Add(25*time.Second), time.Now().Add(35*time.Second)
		if ts := got.DeletionTimestamp.Time; ts.Before(lo) || ts.After(hi) {
			t.Errorf("deletionTimestamp %v; want about now+30s", ts)
		}
	})
	t.Run("grace period 0 removes it", func(t *testing.T) {
		if err := pods.Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 10*time.Second, func() error {
			if _, err := pods.Get(ctx, "bound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("pod still there after a grace-0 delete (err %v)", err)
			}
			return nil
		})
	})
	t.Run("unbound pod is removed at once", func(t *testing.T) {
		if err := pods.Delete(ctx, "unbound", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := pods.Get(ctx, "unbound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get after deleting an unscheduled pod: %v; want 404", err)
		}
	})
}

func clientGoFinalizers(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) {
	cms := cs.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/keep"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, _, err := deleteRaw(ctx, cs, ns, "configmaps", "held", metav1.DeleteOptions{})
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	if code != http.StatusOK {
		t.Errorf("delete of an object held by a finalizer answered %d; want 200 (upstream)", code)
	}
	got, err := cms.Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("object with a finalizer gone after delete: %v", err)
	}
	if got.DeletionTimestamp == nil || !slices.Equal(got.Finalizers, []string{"example.com/keep"}) {
		t.Fatalf("after delete: deletionTimestamp %v finalizers %v; want set and [example.com/keep]", got.DeletionTimestamp, got.Finalizers)
	}
	t.Run("no new finalizer while deleting", func(t *testing.T) {
		in := got.DeepCopy()
		in.Finalizers = append(in.Finalizers, "example.com/another")
		_, err := cms.Update(ctx, in, metav1.UpdateOptions{})
		// Upstream: ValidateObjectMetaUpdate reports a Forbidden field error
		// on metadata.finalizers, i.e. 422 Invalid.
		if !apierrors.IsInvalid(err) {
			t.Errorf("adding a finalizer to an object being deleted: %v (code %d); want 422 Invalid", err, apiStatusCode(err))
		}
	})
	t.Run("other updates still work", func(t *testing.T) {
		cur, err := cms.Get(ctx, "held", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Data = map[string]string{"k": "v"}
		if _, err := cms.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update of an object being deleted: %v", err)
		}
	})
	t.Run("removing the last finalizer deletes it", func(t *testing.T) {
		cur, err := cms.Get(ctx, "held", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Finalizers = nil
		if _, err := cms.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 10*time.Second, func() error {
			if _, err := cms.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("object still there after its last finalizer was removed (err %v)", err)
			}
			return nil
		})
	})
}

func clientGoDeleteCollection(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) {
	cms := cs.CoreV1().ConfigMaps(ns)
	for i := 0; i < 6; i++ {
		labels := map[string]string{"del": "no"}
		if i%2 == 0 {
			labels["del"] = "yes"
		}
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dc-%d", i), Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		opts metav1.ListOptions
		want []string
	}{
		{"label selector", metav1.ListOptions{LabelSelector: "del=yes"}, []string{"dc-1", "dc-3", "dc-5"}},
		{"field selector", metav1.ListOptions{FieldSelector: "metadata.name=dc-3"}, []string{"dc-1", "dc-5"}},
		{"selector matching nothing", metav1.ListOptions{LabelSelector: "del=maybe"}, []string{"dc-1", "dc-5"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, tc.opts); err != nil {
				t.Fatal(err)
			}
			list, err := cms.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := configMapNames(list.Items); !slices.Equal(got, tc.want) {
				t.Errorf("left after DeleteCollection = %v; want %v", got, tc.want)
			}
		})
	}
}

func clientGoWatchResume(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) {
	cms := cs.CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rvs := []string{cm.ResourceVersion}
	for i := 1; i <= 10; i++ {
		cm.Data["n"] = strconv.Itoa(i)
		if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		rvs = append(rvs, cm.ResourceVersion)
	}

	t.Run("from the middle: exactly the later events, in order", func(t *testing.T) {
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: rvs[4]})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		for i, want := range rvs[5:] {
			ev := nextWatchEvent(t, w, 20*time.Second)
			if ev.Type != watch.Modified || eventRV(t, ev) != want {
				t.Fatalf("event %d from rv %s = %s rv %s; want MODIFIED rv %s (all: %v)", i, rvs[4], ev.Type, eventRV(t, ev), want, rvs[5:])
			}
			if n := ev.Object.(*corev1.ConfigMap).Data["n"]; n != strconv.Itoa(5+i) {
				t.Errorf("event %d carries n=%s; want %d", i, n, 5+i)
			}
		}
	})

	t.Run("stop and resume while changes happen: no gap, no repeat", func(t *testing.T) {
		w1, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: rvs[0]})
		if err != nil {
			t.Fatal(err)
		}
		var seen []string
		for range 3 {
			ev := nextWatchEvent(t, w1, 20*time.Second)
			seen = append(seen, eventRV(t, ev))
		}
		w1.Stop()
		last := seen[len(seen)-1]

		const more = 15
		written := make(chan string, more)
		errc := make(chan error, 1)
		go func() {
			defer close(written)
			cur := cm.DeepCopy()
			for i := 0; i < more; i++ {
				cur.Data["n"] = fmt.Sprintf("more-%d", i)
				upd, err := cms.Update(ctx, cur, metav1.UpdateOptions{})
				if err != nil {
					errc <- err
					return
				}
				cur = upd
				written <- upd.ResourceVersion
			}
			if err := cms.Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
				errc <- err
			}
		}()
		// Let some changes land while no watch is open, then resume.
		var wrote []string
		for range 3 {
			select {
			case rv, ok := <-written:
				if !ok {
					t.Fatalf("writer stopped early: %v", <-errc)
				}
				wrote = append(wrote, rv)
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			}
		}
		w2, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: last})
		if err != nil {
			t.Fatal(err)
		}
		defer w2.Stop()
		for rv := range written {
			wrote = append(wrote, rv)
		}
		select {
		case err := <-errc:
			t.Fatalf("writer: %v", err)
		default:
		}
		if len(wrote) != more {
			t.Fatalf("writer made %d updates; want %d", len(wrote), more)
		}
		var deleted bool
		for !deleted {
			ev := nextWatchEvent(t, w2, 20*time.Second)
			switch ev.Type {
			case watch.Modified:
				seen = append(seen, eventRV(t, ev))
			case watch.Deleted:
				deleted = true
				if prev := seen[len(seen)-1]; rvInt(t, eventRV(t, ev)) <= rvInt(t, prev) {
					t.Errorf("DELETED rv %s not after the last MODIFIED rv %s", eventRV(t, ev), prev)
				}
			default:
				t.Fatalf("unexpected %s event (rv %s) after resuming from %s", ev.Type, eventRV(t, ev), last)
			}
		}
		want := append(slices.Clone(rvs[1:]), wrote...)
		if !slices.Equal(seen, want) {
			t.Errorf("rvs seen across the stopped and the resumed watch:\n got %v\nwant %v", seen, want)
		}
		for i := 1; i < len(seen); i++ {
			if rvInt(t, seen[i]) <= rvInt(t, seen[i-1]) {
				t.Errorf("rv %s after %s: out of order or repeated", seen[i], seen[i-1])
			}
		}
	})
}

func clientGoWatchSelector(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) {
	cms := cs.CoreV1().ConfigMaps(ns)
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{LabelSelector: "app=watched", ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{"app": "other"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "target", Labels: map[string]string{"app": "watched"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name       string
		change     func(cm *corev1.ConfigMap)
		want       watch.EventType
		wantLabel  string // app label the event's object must carry
		deleteCall bool
	}{
		{"created matching", nil, watch.Added, "watched", false},
		{"changed, still matching", func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"k": "v"} }, watch.Modified, "watched", false},
		// Upstream sends the last state that matched, at the new resourceVersion.
		{"relabelled out of the selector", func(cm *corev1.ConfigMap) { cm.Labels["app"] = "other" }, watch.Deleted, "watched", false},
		{"changed while not matching", func(cm *corev1.ConfigMap) { cm.Data["k"] = "v2" }, "", "", false},
		{"relabelled back into the selector", func(cm *corev1.ConfigMap) { cm.Labels["app"] = "watched" }, watch.Added, "watched", false},
		{"deleted", nil, watch.Deleted, "watched", true},
	}
	for i, st := range steps {
		wantRV := cm.ResourceVersion
		switch {
		case st.deleteCall:
			if err := cms.Delete(ctx, "target", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			wantRV = ""
		case st.change != nil:
			st.change(cm)
			if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			wantRV = cm.ResourceVersion
		}
		if st.want == "" {
			continue
		}
		ev := nextWatchEvent(t, w, 20*time.Second)
		if ev.Type != st.want || eventName(t, ev) != "target" {
			t.Fatalf("step %d (%s): event %s %s; want %s target", i, st.name, ev.Type, eventName(t, ev), st.want)
		}
		if wantRV != "" && eventRV(t, ev) != wantRV {
			t.Errorf("step %d (%s): event rv %s; want %s", i, st.name, eventRV(t, ev), wantRV)
		}
		if got := ev.Object.(*corev1.ConfigMap).Labels["app"]; got != st.wantLabel {
			t.Errorf("step %d (%s): %s event object has app=%s; want app=%s", i, st.name, ev.Type, got, st.wantLabel)
		}
	}
}

func clientGoWatchBookmarks(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) {
	cms := cs.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Upstream sends bookmarks about once a minute; kubebus every 10s. The
	// cluster stays idle: a bookmark must not need some other write.
	ev := nextWatchEvent(t, w, 75*time.Second)
	if ev.Type != watch.Bookmark {
		t.Fatalf("first event on an idle watch = %s; want BOOKMARK", ev.Type)
	}
	obj, ok := ev.Object.(*corev1.ConfigMap)
	if !ok {
		t.Fatalf("BOOKMARK carries %T; want *v1.ConfigMap", ev.Object)
	}
	if obj.ResourceVersion == "" || rvInt(t, obj.ResourceVersion) < rvInt(t, list.ResourceVersion) {
		t.Errorf("BOOKMARK rv %q; want at least the list rv %s", obj.ResourceVersion, list.ResourceVersion)
	}
	// A watch resumed from the bookmark sees the next change and nothing older.
	w2, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: obj.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-bookmark"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextWatchEvent(t, w2, 20*time.Second); ev.Type != watch.Added || eventRV(t, ev) != cm.ResourceVersion {
		t.Errorf("watch from the bookmark rv: first event %s rv %s; want ADDED rv %s", ev.Type, eventRV(t, ev), cm.ResourceVersion)
	}
}

func clientGoWatchList(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) {
	cms := cs.CoreV1().ConfigMaps(ns)
	want := []string{"wl-0", "wl-1", "wl-2"}
	for _, name := range want {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{
		SendInitialEvents: new(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []string
	for {
		ev := nextWatchEvent(t, w, 20*time.Second)
		if ev.Type == watch.Added {
			got = append(got, eventName(t, ev))
			continue
		}
		if ev.Type != watch.Bookmark {
			t.Fatalf("event %s during the initial events; want ADDED or BOOKMARK", ev.Type)
		}
		m, _ := meta.Accessor(ev.Object)
		if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
			break
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("initial events = %v; want %v", got, want)
	}
}

// checkServerFields checks what the server fills on create.
func checkServerFields(t *testing.T, m *metav1.ObjectMeta) {
	t.Helper()
	if m.UID == "" {
		t.Errorf("%s: no uid", m.Name)
	}
	if m.CreationTimestamp.IsZero() || time.Since(m.CreationTimestamp.Time) > time.Minute || time.Until(m.CreationTimestamp.Time) > time.Minute {
		t.Errorf("%s: creationTimestamp %v; want about now", m.Name, m.CreationTimestamp)
	}
	if n, err := strconv.ParseInt(m.ResourceVersion, 10, 64); err != nil || n <= 0 {
		t.Errorf("%s: resourceVersion %q; want set", m.Name, m.ResourceVersion)
	}
}

func webDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}},
			},
		},
	}
}

func busyboxPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}},
	}
}

func rollingUpdateField(d *appsv1.Deployment, surge bool) string {
	ru := d.Spec.Strategy.RollingUpdate
	if ru == nil {
		return "<nil rollingUpdate>"
	}
	v := ru.MaxUnavailable
	if surge {
		v = ru.MaxSurge
	}
	if v == nil {
		return "<nil>"
	}
	return v.String()
}

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// configMapNames returns the names in list order.
func configMapNames(items []corev1.ConfigMap) []string {
	var out []string
	for _, cm := range items {
		out = append(out, cm.Name)
	}
	return out
}

// rawDelete deletes through the REST client to see the status code and body.
func deleteRaw(ctx context.Context, cs *kubernetes.Clientset, ns, resource, name string, opts metav1.DeleteOptions) (int, runtime.Object, error) {
	var code int
	res := cs.CoreV1().RESTClient().Delete().Namespace(ns).Resource(resource).Name(name).Body(&opts).Do(ctx)
	res.StatusCode(&code)
	obj, err := res.Get()
	return code, obj, err
}

// statusCode returns the HTTP code of an API error (0 for nil or other errors).
func apiStatusCode(err error) int32 {
	if s, ok := err.(apierrors.APIStatus); ok {
		return s.Status().Code
	}
	return 0
}

type wantEvent struct {
	typ watch.EventType
	rv  string
}

// nextEvent waits for the next watch event until the timeout.
func nextWatchEvent(t *testing.T, w watch.Interface, timeout time.Duration) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch closed while waiting for an event")
		}
		return ev
	case <-time.After(timeout):
		t.Fatalf("no watch event within %v", timeout)
	}
	return watch.Event{}
}

func eventRV(t *testing.T, ev watch.Event) string {
	t.Helper()
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return fmt.Sprintf("<%s %T>", ev.Type, ev.Object)
	}
	return m.GetResourceVersion()
}

func eventName(t *testing.T, ev watch.Event) string {
	t.Helper()
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return fmt.Sprintf("<%s %T>", ev.Type, ev.Object)
	}
	return m.GetName()
}

func rvInt(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q is not an integer: %v", rv, err)
	}
	return n
}
