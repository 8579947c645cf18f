//go:build compose

package compose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/tap"
	"github.com/kubebus/kubebus/test/harness"
)

// The chaos sequence's bounds.
const (
	createsPerSecond = 50
	stepTimeout      = 120 * time.Second
	downFor          = 5 * time.Second // how long a killed member stays down
	pauseFor         = 20 * time.Second
	partitionFor     = 10 * time.Second
	chaosNamespace   = "chaos"
)

var etcdIPs = map[string]string{"etcd-0": "172.28.0.11", "etcd-1": "172.28.0.12", "etcd-2": "172.28.0.13"}

// chaosRun is the state of the chaos sequence: the load, the watchers of
// the invariants and the failover times measured.
type chaosRun struct {
	s       *Stack
	cs      *kubernetes.Clientset
	etcd    *clientv3.Client
	js      jetstream.JetStream
	checked int64 // the history is verified up to this revision

	mu        sync.Mutex
	created   []string      // ConfigMaps whose create returned 201
	lastOK    time.Time     // when the last create returned 201
	maxGap    time.Duration // the longest time without a 201 in this step
	failed    int           // creates that returned an error
	failures  []string      // the first of those errors
	dropped   int           // ticks with every writer busy
	failovers []string
	violation []string // invariant breaks seen by the watchers

	pauseScaler atomic.Bool
}

func (c *chaosRun) violate(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.violation) < 50 {
		c.violation = append(c.violation, fmt.Sprintf(format, args...))
	}
}

func (c *chaosRun) failover(t *testing.T, what string, d time.Duration) {
	t.Logf("FAILOVER %s: %s", what, d.Round(time.Millisecond))
	c.mu.Lock()
	c.failovers = append(c.failovers, fmt.Sprintf("%s: %s", what, d.Round(time.Millisecond)))
	c.mu.Unlock()
}

func chaos(t *testing.T, s *Stack) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &chaosRun{s: s, cs: s.Clientset(t)}
	c.etcd = etcdClient(t, s)
	c.js = busClient(t, s)

	s.MustKubectl(t, "", "create", "namespace", chaosNamespace)
	s.MustKubectl(t, churnManifest, "apply", "-f", "-")
	c.converge(t)
	c.checked = c.etcdRevision(t)

	loadStart := time.Now()
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); c.load(ctx) }()
	go func() { defer wg.Done(); c.scale(ctx) }()
	go func() { defer wg.Done(); c.watch(ctx, t) }()
	defer func() { cancel(); wg.Wait() }()

	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"KillEtcdLeader", c.killEtcdLeader},
		{"KillNATSStreamLeader", c.killNATSLeader},
		{"KillAPIServer", c.killAPIServer},
		{"KillLeadingControllerManager", func(t *testing.T) { c.killLeaseHolder(t, "kube-controller-manager", "controller-manager") }},
		{"KillLeadingScheduler", func(t *testing.T) { c.killLeaseHolder(t, "kube-scheduler", "scheduler") }},
		{"KillNode", c.killNode},
		{"PauseNode", c.pauseNode},
		{"PartitionEtcdMember", c.partitionEtcd},
	}
	for _, st := range steps {
		ok := t.Run(st.name, func(t *testing.T) {
			start := time.Now()
			c.mu.Lock()
			c.maxGap = 0
			c.mu.Unlock()
			st.run(t)
			c.check(t)
			c.mu.Lock()
			t.Logf("step %s took %s; load so far: %d creates returned 201, %d failed, %d ticks dropped; longest time without a 201 in the step: %s",
				st.name, time.Since(start).Round(time.Second), len(c.created), c.failed, c.dropped, c.maxGap.Round(time.Millisecond))
			c.failovers = append(c.failovers, fmt.Sprintf("  longest write stall (no create returned 201) during %s: %s", st.name, c.maxGap.Round(time.Millisecond)))
			c.mu.Unlock()
		})
		if !ok {
			break
		}
	}
	cancel()
	wg.Wait()
	c.mu.Lock()
	secs := time.Since(loadStart).Seconds()
	t.Logf("load: %d ConfigMap creates returned 201 in %.0fs (%.1f/s), %d failed, %d ticks dropped (256 creates in flight)",
		len(c.created), secs, float64(len(c.created))/secs, c.failed, c.dropped)
	if len(c.failures) > 0 {
		t.Logf("the first failed creates (not acknowledged, so not checked):\n  %s", strings.Join(c.failures, "\n  "))
	}
	t.Logf("failover times:\n  %s", strings.Join(c.failovers, "\n  "))
	c.mu.Unlock()
}

const churnManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: churn
  namespace: chaos
spec:
  replicas: 4
  selector:
    matchLabels: {app: churn}
  template:
    metadata:
      labels: {app: churn}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: busybox:latest
        imagePullPolicy: IfNotPresent
        command: ["sleep", "3600"]
`

// load creates ConfigMaps at createsPerSecond through the load balancer,
// open-loop: every tick starts a create of its own (at most maxInFlight at
// once, a tick beyond that is dropped and counted), so a request stuck in
// a failover does not hold back the ones after it. Every create that
// returned 201 is recorded.
func (c *chaosRun) load(ctx context.Context) {
	const maxInFlight = 256
	sem := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(time.Second / createsPerSecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		select {
		case sem <- struct{}{}:
		default:
			c.mu.Lock()
			c.dropped++
			c.mu.Unlock()
			continue
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			name := fmt.Sprintf("load-%06d", i)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": strconv.Itoa(i)}}
			rctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			_, err := c.cs.CoreV1().ConfigMaps(chaosNamespace).Create(rctx, cm, metav1.CreateOptions{})
			cancel()
			c.mu.Lock()
			defer c.mu.Unlock()
			if err != nil {
				c.failed++
				if len(c.failures) < 5 {
					c.failures = append(c.failures, fmt.Sprintf("%s at %s: %v", name, time.Now().UTC().Format("15:04:05.000"), err))
				}
				return
			}
			c.created = append(c.created, name)
			now := time.Now()
			if !c.lastOK.IsZero() && now.Sub(c.lastOK) > c.maxGap {
				c.maxGap = now.Sub(c.lastOK)
			}
			c.lastOK = now
		}(i)
	}
}

// scale moves the churn Deployment between 2 and 6 replicas every 6s,
// except while a step checks convergence.
func (c *chaosRun) scale(ctx context.Context) {
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(6 * time.Second):
		}
		if c.pauseScaler.Load() {
			continue
		}
		replicas := []int32{6, 2}[n%2]
		_ = c.setChurn(ctx, replicas)
	}
}

func (c *chaosRun) setChurn(ctx context.Context, replicas int32) error {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sc, err := c.cs.AppsV1().Deployments(chaosNamespace).GetScale(rctx, "churn", metav1.GetOptions{})
	if err != nil {
		return err
	}
	sc.Spec.Replicas = replicas
	_, err = c.cs.AppsV1().Deployments(chaosNamespace).UpdateScale(rctx, "churn", sc, metav1.UpdateOptions{})
	return err
}

// watch keeps informers on Pods and ReplicaSets and records a pod whose
// node changed once bound, and a ReplicaSet with more live pods than the
// most it ever asked for.
func (c *chaosRun) watch(ctx context.Context, t *testing.T) {
	f := informers.NewSharedInformerFactory(c.cs, 0)
	pods := f.Core().V1().Pods().Informer()
	rss := f.Apps().V1().ReplicaSets().Informer()
	var mu sync.Mutex
	maxWanted := map[types.UID]int32{}
	_, _ = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(o, n any) {
			op, np := o.(*corev1.Pod), n.(*corev1.Pod)
			if op.Spec.NodeName != "" && np.Spec.NodeName != op.Spec.NodeName {
				c.violate("pod %s/%s bound twice: %s then %s", np.Namespace, np.Name, op.Spec.NodeName, np.Spec.NodeName)
			}
		},
	})
	noteRS := func(o any) {
		rs, ok := o.(*appsv1.ReplicaSet)
		if !ok || rs.Spec.Replicas == nil {
			return
		}
		mu.Lock()
		if *rs.Spec.Replicas > maxWanted[rs.UID] {
			maxWanted[rs.UID] = *rs.Spec.Replicas
		}
		mu.Unlock()
	}
	_, _ = rss.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: noteRS, UpdateFunc: func(_, n any) { noteRS(n) }})
	f.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, rss.HasSynced)
	for {
		select {
		case <-ctx.Done():
			f.Shutdown()
			return
		case <-time.After(time.Second):
		}
		live := map[types.UID]int32{}
		names := map[types.UID]string{}
		for _, o := range pods.GetStore().List() {
			p := o.(*corev1.Pod)
			if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
				continue
			}
			if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "ReplicaSet" {
				live[ref.UID]++
				names[ref.UID] = p.Namespace + "/" + ref.Name
			}
		}
		mu.Lock()
		for uid, n := range live {
			if w, ok := maxWanted[uid]; ok && n > w {
				c.violate("ReplicaSet %s had %d live pods, more than the %d it ever asked for", names[uid], n, w)
			}
		}
		mu.Unlock()
	}
}

// check runs the checks after a step: every 201 is stored, the history
// stream holds etcd's revisions once and in order, every consumer caught
// up, the watchers saw no violation, and both Deployments converge.
func (c *chaosRun) check(t *testing.T) {
	t.Helper()
	c.converge(t)
	c.checkCreates(t)
	c.checkHistory(t)
	c.checkLag(t)
	c.mu.Lock()
	v := append([]string(nil), c.violation...)
	c.mu.Unlock()
	if len(v) > 0 {
		t.Fatalf("invariants broken:\n  %s", strings.Join(v, "\n  "))
	}
}

// converge holds the scaler, sets churn to 4 replicas and waits until both
// Deployments have exactly their replicas, updated and available.
func (c *chaosRun) converge(t *testing.T) {
	t.Helper()
	c.pauseScaler.Store(true)
	defer c.pauseScaler.Store(false)
	ctx := context.Background()
	eventually(t, stepTimeout, "scaling churn to 4", func() error { return c.setChurn(ctx, 4) })
	for _, d := range []struct{ ns, name string }{{chaosNamespace, "churn"}, {"seed", "web"}} {
		took := eventually(t, stepTimeout, "deployment "+d.ns+"/"+d.name+" converging", func() error {
			dep, err := c.cs.AppsV1().Deployments(d.ns).Get(ctx, d.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			st := dep.Status
			want := *dep.Spec.Replicas
			if st.ObservedGeneration < dep.Generation || st.Replicas != want || st.UpdatedReplicas != want || st.AvailableReplicas != want || st.ReadyReplicas != want {
				return fmt.Errorf("status %+v, want %d", st, want)
			}
			pods, err := c.cs.CoreV1().Pods(d.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + d.name})
			if err != nil {
				return err
			}
			n := int32(0)
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil {
					n++
				}
			}
			if n != want {
				return fmt.Errorf("%d live pods, want %d", n, want)
			}
			return nil
		})
		t.Logf("deployment %s/%s converged in %s", d.ns, d.name, took.Round(time.Millisecond))
	}
}

// checkCreates lists the chaos namespace's ConfigMaps through the API
// (etcd's client port is not published; the API server reads etcd with a
// quorum read) and fails on any create that returned 201 and is missing.
func (c *chaosRun) checkCreates(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	want := append([]string(nil), c.created...)
	c.mu.Unlock()
	have := map[string]bool{}
	eventually(t, 60*time.Second, "listing the ConfigMaps", func() error {
		clear(have)
		opts := metav1.ListOptions{Limit: 2000}
		for {
			l, err := c.cs.CoreV1().ConfigMaps(chaosNamespace).List(context.Background(), opts)
			if err != nil {
				return err
			}
			for _, cm := range l.Items {
				have[cm.Name] = true
			}
			if l.Continue == "" {
				return nil
			}
			opts.Continue = l.Continue
		}
	})
	var missing []string
	for _, n := range want {
		if !have[n] {
			missing = append(missing, n)
		}
	}
	// Straight from etcd too: the host reaches the members' client port on
	// the compose network.
	resp, err := c.etcd.Get(context.Background(), "/registry/core/configmaps/"+chaosNamespace+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatalf("reading etcd: %v", err)
	}
	inEtcd := map[string]bool{}
	for _, kv := range resp.Kvs {
		inEtcd[filepath.Base(string(kv.Key))] = true
	}
	var missingEtcd []string
	for _, n := range want {
		if !inEtcd[n] {
			missingEtcd = append(missingEtcd, n)
		}
	}
	t.Logf("%d acknowledged creates: all listed through the API: %v; all in etcd: %v", len(want), len(missing) == 0, len(missingEtcd) == 0)
	if len(missing) > 0 || len(missingEtcd) > 0 {
		t.Fatalf("acknowledged creates lost: %d missing from the API's list (%v), %d missing from etcd (%v)",
			len(missing), head(missing), len(missingEtcd), head(missingEtcd))
	}
}

func head(s []string) []string {
	if len(s) > 10 {
		return s[:10]
	}
	return s
}

// tapRecord is a line of `kubebus tap -o json`.
type tapRecord struct {
	Seq          uint64 `json:"seq"`
	Type         string `json:"type"`
	Revision     int64  `json:"revision"`
	PrevRevision int64  `json:"prevRevision"`
	Group        string `json:"group"`
	Resource     string `json:"resource"`
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
}

// checkHistory reads the history stream from the last checked revision
// with `kubebus tap --kubeconfig ... --follow=false -o json` and compares it
// with etcd's own history (a watch from the same revision over
// /registry/): the same revisions, each event once, in order, every event
// naming the one before it (prevRevision), no GAP.
func (c *chaosRun) checkHistory(t *testing.T) {
	t.Helper()
	target := c.etcdRevision(t)
	var recs []tapRecord
	eventually(t, 90*time.Second, "the history stream reaching etcd's revision", func() error {
		out, err := exec.Command(harness.Binary(t), "tap", "--kubeconfig", c.s.Kubeconfig, "--since", strconv.FormatInt(c.checked, 10),
			"--follow=false", "-o", "json").Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return fmt.Errorf("kubebus tap: %v: %s", err, ee.Stderr)
			}
			return err
		}
		recs, err = decodeLines[tapRecord](string(out))
		if err != nil {
			return fmt.Errorf("decoding tap: %w", err)
		}
		if len(recs) == 0 || recs[len(recs)-1].Revision < target {
			last := int64(0)
			if len(recs) > 0 {
				last = recs[len(recs)-1].Revision
			}
			return fmt.Errorf("stream at revision %d, etcd at %d", last, target)
		}
		return nil
	})
	upper := recs[len(recs)-1].Revision
	type key struct {
		rev  int64
		name string
	}
	seen := map[key]bool{}
	busRevs := map[int64]bool{}
	progress := map[int64]int64{} // a progress event's revision: the event naming it
	for i, r := range recs {
		if r.Type == "GAP" {
			t.Fatalf("the history stream has a GAP: %+v", r)
		}
		k := key{r.Revision, r.Group + "/" + r.Resource + "/" + r.Namespace + "/" + r.Name}
		if seen[k] {
			t.Fatalf("the history stream holds revision %d of %s twice", r.Revision, k.name)
		}
		seen[k] = true
		busRevs[r.Revision] = true
		if i == 0 {
			continue
		}
		p := recs[i-1]
		if r.Revision < p.Revision {
			t.Fatalf("the history stream goes back: revision %d (seq %d) after %d (seq %d)", r.Revision, r.Seq, p.Revision, p.Seq)
		}
		switch {
		case r.Revision == p.Revision || r.PrevRevision == p.Revision:
		case r.PrevRevision > p.Revision && r.PrevRevision < r.Revision:
			// A progress event between them (kbus.progress, which tap does
			// not show): a publisher records one when it passes revisions
			// that are not objects, such as a new leader's election key.
			// That revision must not be an object's (checked below).
			progress[r.PrevRevision] = r.Revision
		default:
			t.Fatalf("revision %d names %d as the one before it, but the stream's previous event is %d", r.Revision, r.PrevRevision, p.Revision)
		}
	}
	// etcd's own history over the same range.
	etcdRevs := map[int64]bool{}
	wctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wch := c.etcd.Watch(wctx, "/registry/", clientv3.WithPrefix(), clientv3.WithRev(c.checked))
	for done := false; !done; {
		select {
		case <-wctx.Done():
			t.Fatalf("watching etcd's history from %d to %d: %v", c.checked, upper, wctx.Err())
		case wr, ok := <-wch:
			if !ok || wr.Err() != nil {
				t.Fatalf("watching etcd's history from %d: %v", c.checked, wr.Err())
			}
			for _, ev := range wr.Events {
				if ev.Kv.ModRevision > upper {
					done = true
					break
				}
				etcdRevs[ev.Kv.ModRevision] = true
			}
			if wr.Header.Revision <= upper && len(wr.Events) == 0 {
				continue
			}
			if len(wr.Events) > 0 && wr.Events[len(wr.Events)-1].Kv.ModRevision >= upper {
				done = true
			}
		}
	}
	for prev, r := range progress {
		if etcdRevs[prev] {
			t.Fatalf("revision %d names %d as the one before it, an object revision the stream does not hold there", r, prev)
		}
	}
	if len(progress) > 0 {
		t.Logf("the chain passes %d progress events", len(progress))
	}
	var lost, extra []int64
	for r := range etcdRevs {
		if !busRevs[r] {
			lost = append(lost, r)
		}
	}
	for r := range busRevs {
		if !etcdRevs[r] && r >= c.checked {
			extra = append(extra, r)
		}
	}
	sort.Slice(lost, func(i, j int) bool { return lost[i] < lost[j] })
	sort.Slice(extra, func(i, j int) bool { return extra[i] < extra[j] })
	t.Logf("history %d..%d: %d events on the bus, %d revisions in etcd, none lost: %v", c.checked, upper, len(recs), len(etcdRevs), len(lost) == 0)
	if len(lost) > 0 || len(extra) > 0 {
		t.Fatalf("the history stream differs from etcd's history in %d..%d: revisions missing from the stream %v, revisions etcd does not have %v",
			c.checked, upper, headInt(lost), headInt(extra))
	}
	c.checked = upper + 1
}

func headInt(s []int64) []int64 {
	if len(s) > 10 {
		return s[:10]
	}
	return s
}

// checkLag reads the consumers' lag through the load balancer (what
// `kubebus tap lag --kubeconfig` prints) until every durable consumer has
// been seen with nothing pending or with its ack floor at the revision etcd
// had when the check began.
func (c *chaosRun) checkLag(t *testing.T) {
	t.Helper()
	hc, err := rest.HTTPClientFor(c.s.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	host := c.s.RESTConfig(t).Host
	// Under the steady load a busy consumer is rarely seen with nothing
	// pending: it has caught up once its ack floor reaches the revision
	// etcd had when the check began.
	target := c.etcdRevision(t)
	caught := map[string]bool{}
	var behind []string
	took := eventually(t, stepTimeout, "every consumer catching up", func() error {
		resp, err := hc.Get(host + tap.LagEndpointPath)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("lag endpoint: %s", resp.Status)
		}
		var rep tap.LagReport
		if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
			return err
		}
		behind = behind[:0]
		for _, r := range rep.Consumers {
			if r.Pending == 0 || r.LastAckRevision >= target {
				caught[r.Consumer] = true
			}
			if !caught[r.Consumer] {
				behind = append(behind, fmt.Sprintf("%s pending %d, ack floor at revision %d < %d", r.Consumer, r.Pending, r.LastAckRevision, target))
			}
		}
		if len(behind) > 0 {
			return fmt.Errorf("behind: %v", behind)
		}
		return nil
	})
	t.Logf("every consumer caught up within %s", took.Round(time.Millisecond))
}

// etcdClient connects to the three members from the host with the API
// server's etcd client certificate.
func etcdClient(t *testing.T, s *Stack) *clientv3.Client {
	t.Helper()
	pki := filepath.Join(s.Dir, ".state", "pki", "cluster")
	tlsInfo := transport.TLSInfo{
		CertFile:      filepath.Join(pki, "apiserver-etcd-client.crt"),
		KeyFile:       filepath.Join(pki, "apiserver-etcd-client.key"),
		TrustedCAFile: filepath.Join(pki, "etcd", "ca.crt"),
	}
	tc, err := tlsInfo.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	var eps []string
	for _, ip := range etcdIPs {
		eps = append(eps, "https://"+ip+":2379")
	}
	sort.Strings(eps)
	cl, err := clientv3.New(clientv3.Config{Endpoints: eps, TLS: tc, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

func (c *chaosRun) etcdRevision(t *testing.T) int64 {
	t.Helper()
	var rev int64
	eventually(t, 60*time.Second, "etcd's revision", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := c.etcd.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return err
		}
		rev = r.Header.Revision
		return nil
	})
	return rev
}

// etcdLeader is the name of the member the reachable members call leader.
func (c *chaosRun) etcdLeader(skip string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ml, err := c.etcd.MemberList(ctx)
	if err != nil {
		return "", err
	}
	names := map[uint64]string{}
	for _, m := range ml.Members {
		names[m.ID] = m.Name
	}
	for name, ip := range etcdIPs {
		if name == skip {
			continue
		}
		st, err := c.etcd.Status(ctx, "https://"+ip+":2379")
		if err != nil || st.Leader == 0 {
			continue
		}
		if n := names[st.Leader]; n != "" && n != skip {
			return n, nil
		}
	}
	return "", errors.New("no member names a leader")
}

func (c *chaosRun) waitEtcdHealthy(t *testing.T, name string) {
	t.Helper()
	eventually(t, stepTimeout, name+" healthy again", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, err := c.etcd.Status(ctx, "https://"+etcdIPs[name]+":2379")
		if err != nil {
			return err
		}
		if st.Leader == 0 || len(st.Errors) > 0 {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
}

func (c *chaosRun) killEtcdLeader(t *testing.T) {
	var leader string
	eventually(t, 30*time.Second, "etcd's leader", func() (err error) { leader, err = c.etcdLeader(""); return err })
	t.Logf("etcd leader: %s", leader)
	c.s.Kill(t, leader)
	killed := time.Now()
	eventually(t, 30*time.Second, "a new etcd leader", func() error {
		n, err := c.etcdLeader(leader)
		if err != nil {
			return err
		}
		t.Logf("new etcd leader: %s", n)
		return nil
	})
	c.failover(t, "etcd leader (SIGKILL of "+leader+")", time.Since(killed))
	time.Sleep(time.Until(killed.Add(downFor)))
	c.s.Start(t, leader)
	c.waitEtcdHealthy(t, leader)
}

func (c *chaosRun) partitionEtcd(t *testing.T) {
	var leader string
	eventually(t, 30*time.Second, "etcd's leader", func() (err error) { leader, err = c.etcdLeader(""); return err })
	t.Logf("disconnecting the etcd leader %s from the network", leader)
	c.s.Disconnect(t, leader)
	cut := time.Now()
	eventually(t, 30*time.Second, "a new etcd leader", func() error {
		_, err := c.etcdLeader(leader)
		return err
	})
	c.failover(t, "etcd leader (network disconnect of "+leader+")", time.Since(cut))
	time.Sleep(time.Until(cut.Add(partitionFor)))
	c.s.Connect(t, leader, etcdIPs[leader])
	c.waitEtcdHealthy(t, leader)
}

// busClient is an admin's connection to the NATS cluster from the host.
func busClient(t *testing.T, s *Stack) jetstream.JetStream {
	t.Helper()
	rc := s.RESTConfig(t)
	creds := bus.Credentials{CAData: rc.CAData, CertData: rc.CertData, KeyData: rc.KeyData}
	if len(creds.CAData) == 0 {
		creds.CAFile = filepath.Join(s.Dir, ".state", "pki", "cluster", "ca.crt")
	}
	nc, js, err := bus.Connect("nats://172.28.0.21:4222,nats://172.28.0.22:4222,nats://172.28.0.23:4222", "compose-test", creds)
	if err != nil {
		t.Fatalf("connecting to the bus: %v", err)
	}
	t.Cleanup(nc.Close)
	return js
}

func (c *chaosRun) streamInfo() (*jetstream.StreamInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st, err := c.js.Stream(ctx, "KUBE_HISTORY")
	if err != nil {
		return nil, err
	}
	return st.Info(ctx)
}

func (c *chaosRun) killNATSLeader(t *testing.T) {
	var leader string
	eventually(t, 30*time.Second, "the history stream's leader", func() error {
		si, err := c.streamInfo()
		if err != nil {
			return err
		}
		if si.Cluster == nil || si.Cluster.Leader == "" {
			return errors.New("no leader")
		}
		leader = si.Cluster.Leader
		return nil
	})
	t.Logf("KUBE_HISTORY leader: %s", leader)
	c.s.Kill(t, leader)
	killed := time.Now()
	eventually(t, 60*time.Second, "a new history stream leader", func() error {
		si, err := c.streamInfo()
		if err != nil {
			return err
		}
		if si.Cluster == nil || si.Cluster.Leader == "" || si.Cluster.Leader == leader {
			return fmt.Errorf("leader %v", si.Cluster)
		}
		return nil
	})
	c.failover(t, "NATS KUBE_HISTORY leader (SIGKILL of "+leader+")", time.Since(killed))
	time.Sleep(time.Until(killed.Add(downFor)))
	c.s.Start(t, leader)
	eventually(t, stepTimeout, leader+" current again", func() error {
		si, err := c.streamInfo()
		if err != nil {
			return err
		}
		if si.Cluster == nil {
			return errors.New("no cluster info")
		}
		if len(si.Cluster.Replicas) != 2 {
			return fmt.Errorf("replicas %+v", si.Cluster.Replicas)
		}
		for _, r := range si.Cluster.Replicas {
			if !r.Current || r.Offline {
				return fmt.Errorf("replica %s not current (lag %d)", r.Name, r.Lag)
			}
		}
		return nil
	})
}

// killAPIServer kills apiserver-0 and measures how long fresh requests
// through the load balancer fail: probes every 100ms for 15s on new
// connections; the failover time is from the kill to the last failed probe.
func (c *chaosRun) killAPIServer(t *testing.T) {
	rc := c.s.RESTConfig(t)
	tc, err := rest.TLSConfigFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	probe := func() error {
		tr := &http.Transport{TLSClientConfig: tc.Clone(), DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		hc := &http.Client{Transport: tr, Timeout: 2 * time.Second}
		resp, err := hc.Get(rc.Host + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	}
	c.s.Kill(t, "apiserver-0")
	killed := time.Now()
	var lastFail time.Duration
	fails := 0
	for time.Since(killed) < 15*time.Second {
		if err := probe(); err != nil {
			lastFail = time.Since(killed)
			fails++
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.failover(t, fmt.Sprintf("API through the load balancer (SIGKILL of apiserver-0; %d failed probes)", fails), lastFail)
	c.s.Start(t, "apiserver-0")
	eventually(t, stepTimeout, "apiserver-0 ready", func() error {
		tr := &http.Transport{TLSClientConfig: tc.Clone(), DisableKeepAlives: true}
		tr.TLSClientConfig.ServerName = "apiserver-0"
		hc := &http.Client{Transport: tr, Timeout: 2 * time.Second}
		resp, err := hc.Get("https://172.28.0.31:6443/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	})
}

func (c *chaosRun) leaseHolder(name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	l, err := c.cs.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return "", errors.New("no holder")
	}
	return *l.Spec.HolderIdentity, nil
}

// killLeaseHolder kills the replica of prefix (controller-manager or
// scheduler) that holds the Lease and measures the takeover.
func (c *chaosRun) killLeaseHolder(t *testing.T, lease, prefix string) {
	var holder, service string
	eventually(t, 30*time.Second, "the holder of "+lease, func() (err error) {
		holder, err = c.leaseHolder(lease)
		if err != nil {
			return err
		}
		for _, i := range []string{"0", "1"} {
			if strings.HasPrefix(holder, prefix+"-"+i) {
				service = prefix + "-" + i
				return nil
			}
		}
		return fmt.Errorf("holder %q is no replica of %s", holder, prefix)
	})
	t.Logf("%s held by %s", lease, holder)
	c.s.Kill(t, service)
	killed := time.Now()
	eventually(t, 90*time.Second, "another holder of "+lease, func() error {
		h, err := c.leaseHolder(lease)
		if err != nil {
			return err
		}
		if h == holder {
			return fmt.Errorf("still held by %s", h)
		}
		return nil
	})
	c.failover(t, "Lease "+lease+" takeover (SIGKILL of "+service+")", time.Since(killed))
	c.s.Start(t, service)
}

func (c *chaosRun) nodeReady(name string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	n, err := c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, cd := range n.Status.Conditions {
		if cd.Type == corev1.NodeReady {
			return cd.Status == corev1.ConditionTrue, nil
		}
	}
	return false, nil
}

// waitNodeBack waits until the node renewed its Lease after since and is
// Ready, then until the Service reaches backends on both nodes again.
func (c *chaosRun) waitNodeBack(t *testing.T, name string, since time.Time) time.Duration {
	t.Helper()
	took := eventually(t, stepTimeout, name+" renewing its Lease and Ready", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		l, err := c.cs.CoordinationV1().Leases("kube-node-lease").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l.Spec.RenewTime == nil || l.Spec.RenewTime.Time.Before(since) {
			return fmt.Errorf("lease last renewed %v", l.Spec.RenewTime)
		}
		ok, err := c.nodeReady(name)
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("not Ready")
		}
		return nil
	})
	serviceReachesBothNodes(t, c.s)
	return took
}

func (c *chaosRun) killNode(t *testing.T) {
	c.s.Kill(t, "node-1")
	time.Sleep(downFor)
	c.s.Start(t, "node-1")
	started := time.Now()
	d := c.waitNodeBack(t, "node-1", started)
	c.failover(t, "node-1 back (Lease renewed, Ready) after its restart", d)
	logNodeStart(t, c.s, "node-1", started)
}

// logNodeStart logs the kubelet's lines since its restart that say where
// its start spent its time (the node agent, the runtime, the pods' sync).
func logNodeStart(t *testing.T, s *Stack, node string, since time.Time) {
	t.Helper()
	out := s.Docker(t, "logs", "--since", since.UTC().Format(time.RFC3339Nano), s.Container(node))
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "component=kubelet") && (strings.Contains(l, "level=INFO") || strings.Contains(l, "level=WARN")) {
			lines = append(lines, l)
		}
		if len(lines) == 20 {
			break
		}
	}
	booted := s.Docker(t, "exec", s.Container(node), "sh", "-c",
		"grep 'successfully booted' /var/lib/kubebus/kubelet/containerd/containerd.log | tail -1 || true")
	t.Logf("%s restarted at %s; its containerd: %s; its kubelet's first lines:\n  %s",
		node, since.UTC().Format("15:04:05.000"), booted, strings.Join(lines, "\n  "))
}

func (c *chaosRun) pauseNode(t *testing.T) {
	// runc freezes the container's cgroup and gives up when a process
	// does not stop in time ("unable to freeze"), which a node busy
	// starting containers can cause under CI load; the pause is tried
	// again, and the test fails if it never takes.
	id := c.s.Container("node-0")
	eventually(t, 10*time.Second, "docker pause "+id, func() error {
		out, err := exec.Command("docker", "pause", id).CombinedOutput()
		if err == nil {
			return nil
		}
		if !strings.Contains(string(out), "unable to freeze") {
			t.Fatalf("docker pause %s: %v\n%s", id, err, out)
		}
		t.Logf("docker pause %s: %s; trying again", id, strings.TrimSpace(string(out)))
		return fmt.Errorf("docker pause: %v: %s", err, strings.TrimSpace(string(out)))
	})
	time.Sleep(pauseFor)
	c.s.Docker(t, "unpause", c.s.Container("node-0"))
	resumed := time.Now()
	d := c.waitNodeBack(t, "node-0", resumed)
	c.failover(t, fmt.Sprintf("node-0 back (Lease renewed, Ready) after a %s pause", pauseFor), d)
}
