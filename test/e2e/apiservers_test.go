package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationAPIServers runs two API servers on one etcd: the one inside
// `kubebus server` and a second `kubebus apiserver`. They are stateless, so
// whatever one writes the other reads, watches see writes made through the
// other, and optimistic concurrency holds across them.
func TestIntegrationAPIServers(t *testing.T) {
	harness.SkipShort(t)
	s, etcdURL := startServerWithEtcdPort(t)
	second := startAPIServer(t, etcdURL, natsURLOf(s), filepath.Join(s.Dir, "pki"), s.EtcdFlags()...)
	cs1, cs2 := s.Clientset(t), second.Clientset(t)

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	ns := newTestNamespace(t, ctx, cs1, "two-apiservers-")
	// The namespace was created through #1; #2 must see it before anything else.
	if _, err := cs2.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace %s created through server #1, GET through server #2: %v", ns, err)
	}

	servers := []struct {
		name string
		cs   *kubernetes.Clientset
	}{{"#1 (kubebus server)", cs1}, {"#2 (kubebus apiserver)", cs2}}

	t.Run("write through one, read through the other", func(t *testing.T) {
		for i, writer := range servers {
			reader := servers[1-i]
			t.Run(writer.name+" to "+reader.name, func(t *testing.T) {
				name := fmt.Sprintf("cross-%d", i)
				created, err := writer.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"writer": strconv.Itoa(i)}},
					Data:       map[string]string{"k": "v"},
				}, metav1.CreateOptions{})
				if err != nil {
					t.Fatalf("create through %s: %v", writer.name, err)
				}
				got, err := reader.cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatalf("get through %s: %v", reader.name, err)
				}
				if got.UID != created.UID || got.ResourceVersion != created.ResourceVersion || got.Data["k"] != "v" {
					t.Errorf("read through %s = uid %s rv %s data %v; written through %s: uid %s rv %s",
						reader.name, got.UID, got.ResourceVersion, got.Data, writer.name, created.UID, created.ResourceVersion)
				}
				list, err := reader.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "writer=" + strconv.Itoa(i)})
				if err != nil {
					t.Fatalf("list through %s: %v", reader.name, err)
				}
				if len(list.Items) != 1 || list.Items[0].UID != created.UID {
					t.Errorf("list through %s: %d items, want the one written through %s", reader.name, len(list.Items), writer.name)
				}
				// An update through the reader is seen by the writer.
				got.Data["k"] = "changed"
				upd, err := reader.cs.CoreV1().ConfigMaps(ns).Update(ctx, got, metav1.UpdateOptions{})
				if err != nil {
					t.Fatalf("update through %s: %v", reader.name, err)
				}
				back, err := writer.cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatalf("get through %s: %v", writer.name, err)
				}
				if back.ResourceVersion != upd.ResourceVersion || back.Data["k"] != "changed" {
					t.Errorf("after update through %s, %s reads rv %s data %v; want rv %s data k=changed",
						reader.name, writer.name, back.ResourceVersion, back.Data, upd.ResourceVersion)
				}
			})
		}
	})

	t.Run("watch on #2 sees writes through #1", func(t *testing.T) {
		list, err := cs2.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := cs2.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatalf("watch through #2: %v", err)
		}
		defer w.Stop()
		cms := cs1.CoreV1().ConfigMaps(ns)
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watched"}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := []wantEvent{{watch.Added, cm.ResourceVersion}}
		cm.Data["n"] = "1"
		cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, wantEvent{watch.Modified, cm.ResourceVersion})
		if err := cms.Delete(ctx, "watched", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		for i, wnt := range want {
			ev := nextWatchEvent(t, w, 20*time.Second)
			if ev.Type != wnt.typ || eventRV(t, ev) != wnt.rv || eventName(t, ev) != "watched" {
				t.Fatalf("event %d on #2 = %s %s rv %s; want %s watched rv %s", i, ev.Type, eventName(t, ev), eventRV(t, ev), wnt.typ, wnt.rv)
			}
		}
		ev := nextWatchEvent(t, w, 20*time.Second)
		if ev.Type != watch.Deleted || eventName(t, ev) != "watched" {
			t.Fatalf("event on #2 = %s %s; want DELETED watched", ev.Type, eventName(t, ev))
		}
		if rvInt(t, eventRV(t, ev)) <= rvInt(t, cm.ResourceVersion) {
			t.Errorf("DELETED rv %s is not after the last update's rv %s", eventRV(t, ev), cm.ResourceVersion)
		}
	})

	t.Run("racing updates from both servers: exactly one wins", func(t *testing.T) {
		const rounds = 20
		_, err := cs1.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "raced"}, Data: map[string]string{"winner": "none"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < rounds; round++ {
			base, err := cs1.CoreV1().ConfigMaps(ns).Get(ctx, "raced", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				obj *corev1.ConfigMap
				err error
			}
			results := make([]result, len(servers))
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i, srv := range servers {
				obj := base.DeepCopy()
				obj.Data["winner"] = fmt.Sprintf("%d-%d", round, i)
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					got, err := srv.cs.CoreV1().ConfigMaps(ns).Update(ctx, obj, metav1.UpdateOptions{})
					results[i] = result{got, err}
				}()
			}
			close(start)
			wg.Wait()
			winner := -1
			for i, r := range results {
				switch {
				case r.err == nil && winner >= 0:
					t.Fatalf("round %d: both updates from rv %s succeeded (rv %s and %s); want one 409 Conflict",
						round, base.ResourceVersion, results[winner].obj.ResourceVersion, r.obj.ResourceVersion)
				case r.err == nil:
					winner = i
				case !apierrors.IsConflict(r.err):
					t.Fatalf("round %d: update through %s from rv %s: %v; want success or 409 Conflict", round, servers[i].name, base.ResourceVersion, r.err)
				}
			}
			if winner < 0 {
				t.Fatalf("round %d: both updates from rv %s failed: %v / %v; want exactly one to succeed", round, base.ResourceVersion, results[0].err, results[1].err)
			}
			won := results[winner].obj
			for _, srv := range servers {
				got, err := srv.cs.CoreV1().ConfigMaps(ns).Get(ctx, "raced", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got.ResourceVersion != won.ResourceVersion || got.Data["winner"] != won.Data["winner"] {
					t.Fatalf("round %d: %s reads rv %s winner=%s; want the winning write rv %s winner=%s",
						round, srv.name, got.ResourceVersion, got.Data["winner"], won.ResourceVersion, won.Data["winner"])
				}
			}
		}
	})

	for name, logs := range map[string]string{"#1": s.Logs(), "#2": second.Logs()} {
		if strings.Contains(logs, "panic") {
			t.Errorf("server %s logged a panic:\n%s", name, logs)
		}
	}
}

// startServerWithEtcdPort starts `kubebus server` with its embedded etcd on
// a known port and returns the server and the etcd client URL.
func startServerWithEtcdPort(t testing.TB) (*harness.Server, string) {
	t.Helper()
	port := harness.FreePort(t)
	s := harness.StartServer(t, "", "--disable-controller-manager", "--disable-scheduler", noServiceAccounts, "--etcd-client-port", strconv.Itoa(port))
	return s, fmt.Sprintf("https://127.0.0.1:%d", port)
}

var natsReadyLine = regexp.MustCompile(`embedded nats ready"? url=(nats://\S+)`)

// natsURLOf returns the URL of the server's embedded NATS, or "" when its
// log does not say.
func natsURLOf(s *harness.Server) string {
	if m := natsReadyLine.FindStringSubmatch(s.Logs()); m != nil {
		return m[1]
	}
	return ""
}

// apiServerProc is a running `kubebus apiserver` process.
type apiServerProc struct {
	URL        string
	Kubeconfig string
	cmd        *exec.Cmd
	done       chan struct{}
	mu         sync.Mutex
	logs       strings.Builder
}

func (a *apiServerProc) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.logs.Write(p)
}

// Logs returns what the process wrote so far.
func (a *apiServerProc) Logs() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.logs.String()
}

// Clientset returns a client for this API server (admin, TLS verified).
func (a *apiServerProc) Clientset(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
	if err != nil {
		t.Fatalf("loading %s: %v", a.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

var apiServerServingLine = regexp.MustCompile(`api server serving"? address=(https://\S+)`)

// startAPIServer starts `kubebus apiserver` on a free loopback port against
// etcdURL, sharing pkiDir (so one CA signs both servers), and waits until it
// serves.
func startAPIServer(t testing.TB, etcdURL, natsURL, pkiDir string, extraArgs ...string) *apiServerProc {
	t.Helper()
	a := &apiServerProc{Kubeconfig: filepath.Join(t.TempDir(), "kubeconfig"), done: make(chan struct{})}
	args := []string{"apiserver", "--etcd-servers", etcdURL, "--pki-dir", pkiDir,
		"--bind-address", "127.0.0.1", "--secure-port", "0", "--write-kubeconfig", a.Kubeconfig}
	if natsURL != "" {
		args = append(args, "--nats-url", natsURL)
	}
	args = append(args, extraArgs...)
	a.cmd = exec.Command(harness.Binary(t), args...)
	stderr, err := a.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	a.cmd.Stdout = a
	if err := a.cmd.Start(); err != nil {
		t.Fatalf("starting kubebus apiserver: %v", err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			_, _ = a.Write([]byte(line + "\n"))
			if m := apiServerServingLine.FindStringSubmatch(line); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			}
		}
	}()
	go func() { _ = a.cmd.Wait(); close(a.done) }()
	t.Cleanup(func() {
		select {
		case <-a.done:
		default:
			_ = a.cmd.Process.Signal(os.Interrupt)
			select {
			case <-a.done:
			case <-time.After(30 * time.Second):
				_ = a.cmd.Process.Kill()
				<-a.done
			}
		}
		if t.Failed() {
			t.Logf("kubebus apiserver logs:\n%s", a.Logs())
		}
	})
	select {
	case a.URL = <-ready:
	case <-a.done:
		t.Fatalf("kubebus apiserver exited before serving:\n%s", a.Logs())
	case <-time.After(60 * time.Second):
		t.Fatalf("kubebus apiserver not serving after 60s:\n%s", a.Logs())
	}
	return a
}

// newTestNamespace creates a namespace with a generated name and returns it.
// No namespace controller runs, so it is left behind with the server.
func newTestNamespace(t testing.TB, ctx context.Context, cs kubernetes.Interface, prefix string) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	return ns.Name
}
