package tap_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/busauth"
	"github.com/kubebus/kubebus/bus/natsserver/natstest"
	"github.com/kubebus/kubebus/cmd/kubebus/app"
	"github.com/kubebus/kubebus/internal/storedobj"
)

// busFixture is an embedded NATS with the kubebus streams, served with
// mutual TLS from a temporary cluster CA, and a stand-in for the publisher
// that writes events exactly as bus/publish does, as the publisher
// identity. The tap runs as the admin (system:masters), a reader.
type busFixture struct {
	url     string
	js      jetstream.JetStream // the publisher's
	reader  bus.Credentials     // the admin's: what a user runs the tap with
	lastSeq uint64
	lastRev int64
	chains  map[string]int64
}

func startBus(t *testing.T) *busFixture {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts an embedded NATS server")
	}
	ns := natstest.Start(t)
	_, js := ns.Connect(t, busauth.PublisherUser)
	if err := bus.EnsureStreams(context.Background(), js, bus.StreamLimits{MaxBytes: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	return &busFixture{url: ns.URL(), js: js, chains: map[string]int64{},
		reader: bus.Credentials{CAFile: ns.CA.CAFile, CertFile: ns.CA.AdminCertFile, KeyFile: ns.CA.AdminKeyFile}}
}

// tapArgs is `tap` with the bus's URL and the admin's bus credentials,
// as a user runs it, followed by args.
func (b *busFixture) tapArgs(args ...string) []string {
	return append([]string{"tap", "--nats-url", b.url,
		"--nats-ca-file", b.reader.CAFile, "--nats-cert-file", b.reader.CertFile, "--nats-key-file", b.reader.KeyFile}, args...)
}

// publish appends ev to KUBE_HISTORY as the publisher would: subject,
// headers, message ID r<rev> (r<rev>/gap for a gap) and the expected last
// sequence.
func (b *busFixture) publish(t *testing.T, ev bus.Event) {
	t.Helper()
	ev.PrevRevision = b.lastRev
	data, err := json.Marshal(&ev)
	if err != nil {
		t.Fatal(err)
	}
	subject, id, chain := bus.GapSubject, "r"+strconv.FormatInt(ev.Revision, 10)+"/gap", int64(0)
	if ev.Type != bus.Gap {
		if _, err := bus.Decode(data); err != nil {
			t.Fatalf("test event is malformed: %v", err)
		}
		filter := bus.ResourceFilter(ev.Group, ev.Resource, "")
		subject, id, chain = bus.HistorySubject(ev.Key()), "r"+strconv.FormatInt(ev.Revision, 10), b.chains[filter]
		b.chains[filter] = ev.Revision
	}
	m := nats.NewMsg(subject)
	m.Data = data
	m.Header.Set(bus.HeaderRevision, strconv.FormatInt(ev.Revision, 10))
	m.Header.Set(bus.HeaderType, string(ev.Type))
	if ev.Resource != "" {
		m.Header.Set(bus.HeaderResource, ev.Key().GroupResource())
	}
	m.Header.Set(bus.HeaderChainPrev, strconv.FormatInt(chain, 10))
	ack, err := b.js.PublishMsg(context.Background(), m, jetstream.WithMsgID(id), jetstream.WithExpectLastSequence(b.lastSeq))
	if err != nil {
		t.Fatalf("publishing revision %d: %v", ev.Revision, err)
	}
	b.lastSeq, b.lastRev = ack.Sequence, ev.Revision
}

func object(name, namespace string, labels map[string]string, manager string, spec map[string]any) json.RawMessage {
	md := map[string]any{"name": name, "uid": "uid-" + name}
	if namespace != "" {
		md["namespace"] = namespace
	}
	if labels != nil {
		md["labels"] = labels
	}
	if manager != "" {
		md["managedFields"] = []any{map[string]any{"manager": manager, "operation": "Update", "time": "2026-03-01T12:00:00Z"}}
	}
	b, _ := json.Marshal(map[string]any{"metadata": md, "spec": spec})
	return b
}

// history publishes a small cluster history and returns it.
func (b *busFixture) history(t *testing.T) []bus.Event {
	t.Helper()
	web := object("web-1", "default", map[string]string{"app": "web"}, "kubectl", map[string]any{"nodeName": "node-1"})
	db := object("db-1", "default", map[string]string{"app": "db"}, "kubectl", map[string]any{})
	dbBound := object("db-1", "default", map[string]string{"app": "db"}, "kube-scheduler", map[string]any{"nodeName": "node-1"})
	dep3 := object("web", "default", map[string]string{"app": "web"}, "kubectl", map[string]any{"replicas": 3})
	dep5 := object("web", "default", map[string]string{"app": "web", "tier": "front"}, "kubectl", map[string]any{"replicas": 5})
	evs := []bus.Event{
		{Type: bus.Added, Revision: 2, Resource: "pods", Namespace: "default", Name: "web-1", Object: web},
		{Type: bus.Added, Revision: 3, Group: "apps", Resource: "deployments", Namespace: "default", Name: "web", Object: dep3},
		{Type: bus.Modified, Revision: 4, Group: "apps", Resource: "deployments", Namespace: "default", Name: "web", Object: dep5, Previous: dep3, PreviousRevision: 3},
		{Type: bus.Added, Revision: 5, Resource: "pods", Namespace: "default", Name: "db-1", Object: db},
		{Type: bus.Deleted, Revision: 6, Resource: "pods", Namespace: "default", Name: "web-1", Object: web, PreviousRevision: 2},
		{Type: bus.Added, Revision: 7, Resource: "nodes", Name: "node-1", Object: object("node-1", "", map[string]string{"zone": "a"}, "kubelet", nil)},
		{Type: bus.Gap, Revision: 12, From: 8, To: 12},
		{Type: bus.Modified, Revision: 13, Resource: "pods", Namespace: "default", Name: "db-1", Object: dbBound, Previous: db, PreviousRevision: 5},
	}
	for _, ev := range evs {
		b.publish(t, ev)
	}
	return evs
}

// tap runs `kubebus tap --nats-url <url> --nats-{ca,cert,key}-file <the
// admin's> args...` and returns its stdout.
func (b *busFixture) tap(t *testing.T, args ...string) string {
	t.Helper()
	out, _ := b.tapStderr(t, args...)
	return out
}

// tapStderr is tap that also returns stderr.
func (b *busFixture) tapStderr(t *testing.T, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	if err := app.Run(ctx, b.tapArgs(args...), &out, &errOut); err != nil {
		t.Fatalf("kubebus tap %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("kubebus tap %s did not exit by itself", strings.Join(args, " "))
	}
	return out.String(), errOut.String()
}

// jsonRevisions parses -o json output line by line.
func jsonRevisions(t *testing.T, out string) []int64 {
	t.Helper()
	var revs []int64
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var rec struct {
			Seq      uint64    `json:"seq"`
			Time     time.Time `json:"time"`
			Type     string    `json:"type"`
			Revision int64     `json:"revision"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i, err, line)
		}
		if rec.Seq == 0 || rec.Time.IsZero() || rec.Type == "" {
			t.Fatalf("line %d lacks seq, time or type: %s", i, line)
		}
		revs = append(revs, rec.Revision)
	}
	return revs
}

func revisionsOf(evs []bus.Event, keep func(bus.Event) bool) []int64 {
	var revs []int64
	for _, ev := range evs {
		if keep == nil || keep(ev) {
			revs = append(revs, ev.Revision)
		}
	}
	return revs
}

func equalRevs(t *testing.T, what string, got, want []int64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: revisions %v, want %v", what, got, want)
	}
}

func TestIntegrationTapHistory(t *testing.T) {
	b := startBus(t)
	evs := b.history(t)
	all := revisionsOf(evs, nil)

	t.Run("table prints every event in revision order", func(t *testing.T) {
		out := b.tap(t, "--follow=false", "--since=1")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if !strings.HasPrefix(lines[0], "REVISION") || !strings.Contains(lines[0], "NAMESPACE/NAME") || !strings.HasSuffix(lines[0], "WHO") {
			t.Fatalf("no header:\n%s", out)
		}
		var revs []int64
		var diff []string
		for _, l := range lines[1:] {
			switch {
			case strings.HasPrefix(l, "GAP: "):
				if l != "GAP: revisions 8..12 were not published (etcd compacted them); state was reseeded" {
					t.Fatalf("gap line %q", l)
				}
				revs = append(revs, 12)
			case strings.HasPrefix(l, "  "):
				diff = append(diff, strings.TrimSpace(l))
			default:
				n, err := strconv.ParseInt(strings.Fields(l)[0], 10, 64)
				if err != nil {
					t.Fatalf("unexpected line %q in\n%s", l, out)
				}
				revs = append(revs, n)
			}
		}
		equalRevs(t, "table", revs, all)
		wantDiff := []string{"metadata.labels.tier: <none> -> front", "spec.replicas: 3 -> 5", "metadata.managedFields", "spec.nodeName: <none> -> node-1"}
		if len(diff) != 3 || diff[0] != wantDiff[0] || diff[1] != wantDiff[1] || diff[2] != wantDiff[3] {
			t.Fatalf("diff lines %q, want %q", diff, []string{wantDiff[0], wantDiff[1], wantDiff[3]})
		}
		if !strings.Contains(out, "deployments.apps") || !strings.Contains(out, "default/web") || !strings.Contains(out, "kube-scheduler") {
			t.Fatalf("missing columns:\n%s", out)
		}
		if strings.Contains(out, "\x1b[") {
			t.Fatal("colour on a buffer")
		}
	})

	t.Run("json parses line by line", func(t *testing.T) {
		out := b.tap(t, "--follow=false", "--since=1", "-o", "json")
		equalRevs(t, "json", jsonRevisions(t, out), all)
		var mod struct {
			Changes []struct {
				Path string          `json:"path"`
				Old  json.RawMessage `json:"old"`
				New  json.RawMessage `json:"new"`
			} `json:"changes"`
			Who string `json:"who"`
		}
		line := strings.Split(out, "\n")[2] // revision 4
		if err := json.Unmarshal([]byte(line), &mod); err != nil {
			t.Fatal(err)
		}
		if len(mod.Changes) != 2 || mod.Changes[1].Path != "spec.replicas" || string(mod.Changes[1].Old) != "3" || string(mod.Changes[1].New) != "5" || mod.Who != "kubectl" {
			t.Fatalf("MODIFIED record %s", line)
		}
	})

	t.Run("yaml documents", func(t *testing.T) {
		out := b.tap(t, "--follow=false", "-o", "yaml")
		if n := strings.Count(out, "---\n"); n != len(evs) {
			t.Fatalf("%d yaml documents, want %d:\n%s", n, len(evs), out)
		}
	})

	t.Run("no since without follow prints the whole history", func(t *testing.T) {
		equalRevs(t, "all", jsonRevisions(t, b.tap(t, "--follow=false", "-o", "json")), all)
	})

	sinceTests := []struct {
		since string
		want  []int64
	}{
		{since: "5", want: []int64{5, 6, 7, 12, 13}},
		{since: "8", want: []int64{12, 13}}, // inside the gap: the gap itself is shown
		{since: "13", want: []int64{13}},    // the last one
		{since: "14", want: nil},            // after the end
		{since: "1h", want: all},            // a duration
	}
	for _, tt := range sinceTests {
		t.Run("since "+tt.since, func(t *testing.T) {
			equalRevs(t, "--since="+tt.since, jsonRevisions(t, b.tap(t, "--follow=false", "--since="+tt.since, "-o", "json")), tt.want)
		})
	}

	filterTests := []struct {
		name string
		args []string
		want []int64
	}{
		{name: "resource", args: []string{"--resource", "pods"}, want: []int64{2, 5, 6, 12, 13}},
		{name: "group resource", args: []string{"--resource", "apps/deployments"}, want: []int64{3, 4, 12}},
		{name: "cluster scoped", args: []string{"--resource", "no"}, want: []int64{7, 12}},
		{name: "namespace", args: []string{"-n", "default", "--type", "ADDED"}, want: []int64{2, 3, 5, 12}},
		{name: "name", args: []string{"--name", "db-1"}, want: []int64{5, 12, 13}},
		{name: "label selector", args: []string{"-l", "app=web", "--type", "DELETED,MODIFIED"}, want: []int64{4, 6, 12}},
		{name: "nothing matches", args: []string{"-n", "kube-system"}, want: []int64{12}},
	}
	for _, tt := range filterTests {
		t.Run("filter "+tt.name, func(t *testing.T) {
			args := append([]string{"--follow=false", "-o", "json"}, tt.args...)
			equalRevs(t, strings.Join(tt.args, " "), jsonRevisions(t, b.tap(t, args...)), tt.want)
		})
	}

	t.Run("read-only", func(t *testing.T) {
		ctx := context.Background()
		st, err := b.js.Stream(ctx, bus.HistoryStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.LastSeq != b.lastSeq {
			t.Fatalf("the tap wrote to %s: last sequence %d, want %d", bus.HistoryStream, info.State.LastSeq, b.lastSeq)
		}
		lister := st.ListConsumers(ctx)
		for ci := range lister.Info() {
			t.Errorf("the tap left a consumer behind: %q (durable %q)", ci.Name, ci.Config.Durable)
		}
		if err := lister.Err(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestIntegrationTapEmptyStream(t *testing.T) {
	b := startBus(t)
	if out := b.tap(t, "--follow=false"); out != "" {
		t.Fatalf("output on an empty stream: %q", out)
	}
	if out := b.tap(t, "--follow=false", "--since=3"); out != "" {
		t.Fatalf("output on an empty stream: %q", out)
	}
}

func TestIntegrationTapRemovedMessages(t *testing.T) {
	b := startBus(t)
	b.history(t) // sequences 1..8 hold revisions 2, 3, 4, 5, 6, 7, 12, 13
	ctx := context.Background()
	st, err := b.js.Stream(ctx, bus.HistoryStream)
	if err != nil {
		t.Fatal(err)
	}
	// Age out the head (revisions 2 and 3) and punch a hole (revision 6).
	for _, seq := range []uint64{1, 2, 5} {
		if err := st.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr := b.tapStderr(t, "--follow=false", "--since=1", "-o", "json")
	equalRevs(t, "since 1", jsonRevisions(t, out), []int64{4, 5, 7, 12, 13})
	if !strings.Contains(stderr, "no longer holds the start") {
		t.Fatalf("no warning about the lost head; stderr: %s", stderr)
	}
	out, stderr = b.tapStderr(t, "--follow=false", "--since=6", "-o", "json")
	equalRevs(t, "since 6", jsonRevisions(t, out), []int64{7, 12, 13})
	if stderr != "" {
		t.Fatalf("unexpected stderr: %s", stderr)
	}
}

// The publisher sends an update with the revision of the previous state,
// not the state: the tap diffs against the last state it read of the
// object, or asks the stream for the object's message before the update
// when it started after it, and says so when that message is gone.
func TestIntegrationTapFindsPreviousState(t *testing.T) {
	b := startBus(t)
	dep := func(replicas int, labels map[string]string) json.RawMessage {
		return object("web", "default", labels, "kubectl", map[string]any{"replicas": replicas})
	}
	db := object("db-1", "default", map[string]string{"app": "db"}, "kubectl", map[string]any{})
	dbBound := object("db-1", "default", map[string]string{"app": "db"}, "kube-scheduler", map[string]any{"nodeName": "node-1"})
	front := map[string]string{"app": "web", "tier": "front"}
	for _, ev := range []bus.Event{
		{Type: bus.Added, Revision: 2, Group: "apps", Resource: "deployments", Namespace: "default", Name: "web", Object: dep(3, front)},
		{Type: bus.Added, Revision: 3, Resource: "pods", Namespace: "default", Name: "db-1", Object: db},
		{Type: bus.Modified, Revision: 4, Group: "apps", Resource: "deployments", Namespace: "default", Name: "web", Object: dep(5, front), PreviousRevision: 2},
		{Type: bus.Modified, Revision: 5, Resource: "pods", Namespace: "default", Name: "db-1", Object: dbBound, PreviousRevision: 3},
		{Type: bus.Modified, Revision: 6, Group: "apps", Resource: "deployments", Namespace: "default", Name: "web", Object: dep(7, map[string]string{"app": "web"}), PreviousRevision: 4},
	} {
		b.publish(t, ev)
	}
	changes := changesByRevision
	want := map[int64]string{
		2: "", 3: "",
		4: "spec.replicas 3->5",
		5: `spec.nodeName ->"node-1"`,
		6: `metadata.labels.tier "front"->, spec.replicas 5->7`,
	}
	check := func(t *testing.T, got map[int64]string, revs ...int64) {
		t.Helper()
		if len(got) != len(revs) {
			t.Fatalf("records %v, want revisions %v", got, revs)
		}
		for _, r := range revs {
			if got[r] != want[r] {
				t.Errorf("revision %d: changes %q, want %q", r, got[r], want[r])
			}
		}
	}
	t.Run("from the states it read", func(t *testing.T) {
		check(t, changes(t, b.tap(t, "--follow=false", "--since=1", "-o", "json")), 2, 3, 4, 5, 6)
	})
	t.Run("from the stream when it starts after them", func(t *testing.T) {
		check(t, changes(t, b.tap(t, "--follow=false", "--since=5", "-o", "json")), 5, 6)
	})
	t.Run("an update that left the selection", func(t *testing.T) {
		// Revision 6 drops the label: only its previous state matches.
		check(t, changes(t, b.tap(t, "--follow=false", "--since=3", "-l", "tier=front", "-o", "json")), 4, 6)
	})
	t.Run("the previous message is gone", func(t *testing.T) {
		ctx := context.Background()
		st, err := b.js.Stream(ctx, bus.HistoryStream)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.DeleteMsg(ctx, 3); err != nil { // revision 4
			t.Fatal(err)
		}
		out := b.tap(t, "--follow=false", "--since=6")
		if !strings.Contains(out, "(the previous state is not on the bus)") || strings.Contains(out, "spec.replicas") {
			t.Fatalf("table for an update whose previous message is gone:\n%s", out)
		}
		// The object's last message before it (revision 2) is not the
		// previous state: no changes rather than the wrong ones.
		if got := changes(t, b.tap(t, "--follow=false", "--since=6", "-o", "json")); len(got) != 1 || got[6] != "" {
			t.Fatalf("records %v, want revision 6 without changes", got)
		}
	})
}

// syncBuffer is a bytes.Buffer safe to read while the tap writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestIntegrationTapFollow(t *testing.T) {
	b := startBus(t)
	b.history(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- app.Run(ctx, b.tapArgs("--since=13", "-o", "json"), &out, &bytes.Buffer{})
	}()
	waitFor(t, "the replayed revision 13", func() bool { return strings.Contains(out.String(), `"revision":13`) })
	b.publish(t, bus.Event{Type: bus.Added, Revision: 14, Resource: "configmaps", Namespace: "default", Name: "cfg",
		Object: object("cfg", "default", nil, "kubectl", nil)})
	waitFor(t, "the live revision 14", func() bool { return strings.Contains(out.String(), `"revision":14`) })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("tap ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tap did not stop when its context ended")
	}
	equalRevs(t, "follow", jsonRevisions(t, out.String()), []int64{13, 14})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestIntegrationTapLag(t *testing.T) {
	b := startBus(t)
	b.history(t) // pods at revisions 2, 5, 6, 13
	ctx := context.Background()
	st, err := b.js.Stream(ctx, bus.HistoryStream)
	if err != nil {
		t.Fatal(err)
	}
	// "scheduler" has taken three pod events and acknowledged only the first.
	behind, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "scheduler", FilterSubject: bus.ResourceFilter("", "pods", ""),
		AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := behind.Fetch(3, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got []jetstream.Msg
	for m := range batch.Messages() {
		got = append(got, m)
	}
	if len(got) != 3 {
		t.Fatalf("fetched %d messages, want 3", len(got))
	}
	if err := got[0].DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	// "caught-up" has acknowledged everything.
	caught, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "caught-up", AckPolicy: jetstream.AckAllPolicy})
	if err != nil {
		t.Fatal(err)
	}
	all, err := caught.FetchNoWait(100)
	if err != nil {
		t.Fatal(err)
	}
	var lastMsg jetstream.Msg
	for m := range all.Messages() {
		lastMsg = m
	}
	if err := lastMsg.DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	// An ordered (ephemeral) consumer is not reported.
	if _, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{}); err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{{"lag"}, {"--lag"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out := b.tap(t, args...)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != 3 {
				t.Fatalf("want a header and two consumers:\n%s", out)
			}
			if f := strings.Fields(lines[0]); strings.Join(f, " ") != "CONSUMER STREAM FILTER PENDING OLDEST LAST-ACK-REVISION" {
				t.Fatalf("header %q", lines[0])
			}
			// Pending: 2 unacknowledged + 1 undelivered pod event; the oldest
			// unacknowledged is revision 5's message. Acknowledging revision
			// 2 moved the ack floor up to just before the next pending pod
			// event (the deployment event at revision 4): everything the
			// consumer selects up to revision 4 is done.
			s := strings.Fields(lines[1])
			if s[0] != "scheduler" || s[1] != bus.HistoryStream || s[2] != "kube.core.pods.>" || s[3] != "3" || s[4] == "-" || s[5] != "4" {
				t.Fatalf("scheduler row %q", lines[1])
			}
			c := strings.Fields(lines[2])
			if c[0] != "caught-up" || c[2] != ">" || c[3] != "0" || c[4] != "-" || c[5] != "13" {
				t.Fatalf("caught-up row %q", lines[2])
			}
		})
	}
}

// TestIntegrationTapCannotPublish: the tap's bus identity (the admin, a
// reader) can read the history but neither publish onto it nor change the
// stream, whatever the tap's code would try.
func TestIntegrationTapCannotPublish(t *testing.T) {
	b := startBus(t)
	b.history(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The connection the tap makes: bus.ConnectOnce with the admin's
	// credentials.
	nc, js, err := bus.ConnectOnce(b.url, "kubebus-tap", b.reader, false)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var mu sync.Mutex
	var violations []string
	nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			mu.Lock()
			violations = append(violations, err.Error())
			mu.Unlock()
		}
	})
	refused := func(what, subject string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s succeeded", what)
		}
		waitFor(t, "a permissions violation for "+subject+" ("+what+")", func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, v := range violations {
				if strings.Contains(v, `"`+subject+`"`) {
					return true
				}
			}
			return false
		})
	}
	st, err := js.Stream(ctx, bus.HistoryStream)
	if err != nil {
		t.Fatalf("the reader cannot open %s: %v", bus.HistoryStream, err)
	}

	ev := bus.Event{Type: bus.Added, Revision: 14, Resource: "pods", Namespace: "default", Name: "forged",
		Object: object("forged", "default", nil, "", nil), PrevRevision: b.lastRev}
	data, err := json.Marshal(&ev)
	if err != nil {
		t.Fatal(err)
	}
	// The server drops what the identity may not publish and says so; the
	// requests themselves get no answer, so each gets a short deadline.
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, time.Second) }
	for _, subject := range []string{bus.HistorySubject(ev.Key()), bus.GapSubject} {
		pctx, pcancel := short()
		_, err := js.Publish(pctx, subject, data)
		pcancel()
		refused("publishing "+subject, subject, err)
	}
	dctx, dcancel := short()
	err = st.DeleteMsg(dctx, 1)
	dcancel()
	refused("deleting a message", "$JS.API.STREAM.MSG.DELETE."+bus.HistoryStream, err)
	pctx, pcancel := short()
	err = st.Purge(pctx)
	pcancel()
	refused("purging the stream", "$JS.API.STREAM.PURGE."+bus.HistoryStream, err)

	// The reader still reads, and the stream is as the publisher left it.
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatalf("the reader cannot read %s: %v", bus.HistoryStream, err)
	}
	if info.State.LastSeq != b.lastSeq || info.State.Msgs != b.lastSeq {
		t.Fatalf("%s changed: last sequence %d and %d messages, want %d and %d", bus.HistoryStream, info.State.LastSeq, info.State.Msgs, b.lastSeq, b.lastSeq)
	}
}

// Pods stored in protobuf are shown as JSON: their changes are computed
// from the previous state, whether the tap read that state itself or
// fetched it from the stream, and label selection reads their labels.
func TestIntegrationTapShowsProtobufPods(t *testing.T) {
	b := startBus(t)
	pod := func(node, tier string) []byte {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-1", Namespace: "default", Labels: map[string]string{"app": "db", "tier": tier}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		data, err := storedobj.EncodeProtobuf(p, corev1.SchemeGroupVersion.WithKind("Pod"))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for _, ev := range []bus.Event{
		{Type: bus.Added, Revision: 2, Resource: "pods", Namespace: "default", Name: "db-1", ObjectProto: pod("", "back")},
		{Type: bus.Modified, Revision: 3, Resource: "pods", Namespace: "default", Name: "db-1", ObjectProto: pod("node-1", "back"), PreviousRevision: 2},
		{Type: bus.Modified, Revision: 4, Resource: "pods", Namespace: "default", Name: "db-1", ObjectProto: pod("node-1", "front"), PreviousRevision: 3},
	} {
		b.publish(t, ev)
	}
	want := map[int64]string{2: "", 3: `spec.nodeName ->"node-1"`, 4: `metadata.labels.tier "back"->"front"`}
	for _, c := range []struct {
		args []string
		revs []int64
	}{
		{[]string{"--since=1"}, []int64{2, 3, 4}},
		{[]string{"--since=3"}, []int64{3, 4}},
		{[]string{"--since=1", "-l", "tier=back"}, []int64{2, 3, 4}},
		{[]string{"--since=1", "-l", "tier=front"}, []int64{4}},
	} {
		got := changesByRevision(t, b.tap(t, append([]string{"--follow=false", "-o", "json"}, c.args...)...))
		if len(got) != len(c.revs) {
			t.Errorf("tap %v: records %v, want revisions %v", c.args, got, c.revs)
			continue
		}
		for _, r := range c.revs {
			if got[r] != want[r] {
				t.Errorf("tap %v: revision %d changes %q, want %q", c.args, r, got[r], want[r])
			}
		}
	}
}

// changesByRevision reads tap -o json output into each record's changes
// ("path old->new", joined), by revision, leaving out managedFields.
func changesByRevision(t *testing.T, out string) map[int64]string {
	t.Helper()
	got := map[int64]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec struct {
			Revision int64 `json:"revision"`
			Changes  []struct {
				Path string          `json:"path"`
				Old  json.RawMessage `json:"old"`
				New  json.RawMessage `json:"new"`
			} `json:"changes"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		var c []string
		for _, ch := range rec.Changes {
			if ch.Path != "metadata.managedFields" {
				c = append(c, fmt.Sprintf("%s %s->%s", ch.Path, ch.Old, ch.New))
			}
		}
		got[rec.Revision] = strings.Join(c, ", ")
	}
	return got
}
