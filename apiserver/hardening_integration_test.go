package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/apiserver/storage"
	"github.com/kubebus/kubebus/test/harness"
)

// headerAuthn authenticates a request as the user its X-Test-User header
// names, in the groups of its X-Test-Group headers.
type headerAuthn struct{}

func (headerAuthn) Authenticate(r *http.Request) (auth.User, bool, error) {
	name := r.Header.Get("X-Test-User")
	if name == "" {
		return auth.User{}, false, nil
	}
	return auth.User{Name: name, Groups: r.Header.Values("X-Test-Group")}, true, nil
}

// hardeningServer is an API server on a real etcd, behind httptest.
type hardeningServer struct {
	t   *testing.T
	url string
	hc  *http.Client
}

// do sends one request as user (in groups) and returns the response; the
// caller closes its body.
func (h *hardeningServer) do(ctx context.Context, method, path, contentType string, body []byte, user string, groups ...string) *http.Response {
	h.t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, h.url+path, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("X-Test-User", user)
	for _, g := range groups {
		req.Header.Add("X-Test-Group", g)
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// status reads a response that must be a Status of the given code.
func readStatus(t *testing.T, resp *http.Response, code int, reason metav1.StatusReason) metav1.Status {
	t.Helper()
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var st metav1.Status
	if err := json.Unmarshal(data, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("answer %d is not a Status (%v): %.300s", resp.StatusCode, err, data)
	}
	if resp.StatusCode != code || int(st.Code) != code || st.Reason != reason {
		t.Fatalf("answer %d, Status code %d reason %q, want %d %q: %s", resp.StatusCode, st.Code, st.Reason, code, reason, st.Message)
	}
	return st
}

// TestIntegrationRESTHardening serves a real etcd with small bounds: one
// mutating request at a time and no waiting for a slot (so a slot still
// held is a 429), a 500ms body deadline and two watches per user.
func TestIntegrationRESTHardening(t *testing.T) {
	harness.SkipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	etcd := harness.StartEtcd(t)
	store, err := storage.New(storage.Config{Endpoints: []string{etcd.Endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	const bodyTimeout = 500 * time.Millisecond
	srv, err := New(Config{
		Store: store, Resources: resource.Builtin(), Logger: slog.New(slog.DiscardHandler),
		Authenticator:               headerAuthn{},
		MaxMutatingRequestsInFlight: 1,
		InFlightWait:                -1,
		RequestBodyTimeout:          bodyTimeout,
		MaxWatchesPerUser:           2,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	h := &hardeningServer{t: t, url: ts.URL, hc: ts.Client()}

	const cms = "/api/v1/namespaces/hard/configmaps"
	mustCreate := func(path, body string) {
		t.Helper()
		resp := h.do(ctx, "POST", path, "application/json", []byte(body), "alice")
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			data, _ := io.ReadAll(resp.Body)
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, data)
		}
	}
	mustCreate("/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"hard"}}`)
	mustCreate(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"k":"v"}}`)

	// A watch that outlives the body deadline: it has no body, so the
	// deadline never applies to it.
	longWatch := h.do(ctx, "GET", cms+"?watch=true&resourceVersion=0", "", nil, "carol")
	defer longWatch.Body.Close()
	if longWatch.StatusCode != http.StatusOK {
		t.Fatalf("watch: %d", longWatch.StatusCode)
	}
	longEvents := json.NewDecoder(longWatch.Body)

	t.Run("patch limits", func(t *testing.T) {
		test := `{"op":"test","path":"/metadata/name","value":"cm"}`
		st := readStatus(t, h.do(ctx, "PATCH", cms+"/cm", "application/json-patch+json", jsonPatchOf(10001, test), "alice"),
			http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge)
		if want := "The allowed maximum operations in a JSON patch is 10000, got 10001"; !strings.Contains(st.Message, want) {
			t.Errorf("message %q, want it to say %q", st.Message, want)
		}
		resp := h.do(ctx, "PATCH", cms+"/cm", "application/json-patch+json", jsonPatchOf(10000, test), "alice")
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("a patch of 10000 operations: %d, want 200", resp.StatusCode)
		}

		seed := fmt.Sprintf(`{"op":"add","path":"/x","value":[%q]}`, strings.Repeat("a", 4<<10))
		bomb := jsonPatchOf(30, `{"op":"copy","from":"/x","path":"/x/-"}`, seed)
		st = readStatus(t, h.do(ctx, "PATCH", cms+"/cm", "application/json-patch+json", bomb, "alice"),
			http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
		if !strings.Contains(st.Message, "exceeding the limit") {
			t.Errorf("copy bomb: %q, want the copy limit", st.Message)
		}

		// Merge and strategic merge patches are read within the body cap.
		big := []byte(`{"data":{"k":"` + strings.Repeat("b", maxBodyBytes) + `"}}`)
		for _, ct := range []string{"application/merge-patch+json", "application/strategic-merge-patch+json"} {
			readStatus(t, h.do(ctx, "PATCH", cms+"/cm", ct, big, "alice"),
				http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge)
		}
	})

	t.Run("slow body", func(t *testing.T) {
		// Headers and the start of a body, then nothing more.
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"slow"}}`
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: kubebus\r\nX-Test-User: alice\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			cms, len(body)+100, body)
		// Without a deadline the server would wait for the rest for ever.
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer to a body that stopped arriving: %v", err)
		}
		st := readStatus(t, resp, http.StatusRequestTimeout, metav1.StatusReasonTimeout)
		if !strings.Contains(st.Message, "did not arrive within "+bodyTimeout.String()) {
			t.Errorf("message %q", st.Message)
		}
		// The slot is free again: with one slot and no waiting, a write
		// would get 429 if the slow request still held it.
		resp = h.do(ctx, "POST", cms, "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"next"}}`), "alice")
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("the write after a timed-out body: %d %s", resp.StatusCode, data)
		}
	})

	t.Run("slow body over HTTP/2", func(t *testing.T) {
		ts2 := httptest.NewUnstartedServer(srv.Handler())
		ts2.EnableHTTP2 = true
		ts2.StartTLS()
		defer ts2.Close()
		pr, pw := io.Pipe()
		defer pw.Close()
		go func() {
			_, _ = pw.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap",`)) // and nothing more
		}()
		reqCtx, cancelReq := context.WithTimeout(ctx, 30*time.Second)
		defer cancelReq()
		req, err := http.NewRequestWithContext(reqCtx, "POST", ts2.URL+cms, pr)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Test-User", "alice")
		resp, err := ts2.Client().Do(req)
		if err != nil {
			t.Fatalf("no answer to a body that stopped arriving: %v", err)
		}
		if resp.ProtoMajor != 2 {
			t.Fatalf("served over %s, want HTTP/2", resp.Proto)
		}
		readStatus(t, resp, http.StatusRequestTimeout, metav1.StatusReasonTimeout)
		resp = h.do(ctx, "POST", cms, "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"next2"}}`), "alice")
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("the write after a timed-out body: %d %s", resp.StatusCode, data)
		}
	})

	t.Run("a watch outlives the body deadline", func(t *testing.T) {
		// The slow body took longer than bodyTimeout; the watch opened
		// before it still streams what happens now.
		mustCreate(cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late"}}`)
		for {
			var ev struct {
				Type   string
				Object struct{ Metadata metav1.ObjectMeta }
			}
			if err := longEvents.Decode(&ev); err != nil {
				t.Fatalf("the watch ended: %v", err)
			}
			if ev.Object.Metadata.Name == "late" {
				break
			}
		}
	})

	t.Run("watches per user", func(t *testing.T) {
		watch := func(user string, groups ...string) *http.Response {
			t.Helper()
			return h.do(ctx, "GET", cms+"?watch=true", "", nil, user, groups...)
		}
		mustWatch := func(user string, groups ...string) *http.Response {
			t.Helper()
			resp := watch(user, groups...)
			if resp.StatusCode != http.StatusOK {
				resp.Body.Close()
				t.Fatalf("watch of %s: %d, want 200", user, resp.StatusCode)
			}
			t.Cleanup(func() { resp.Body.Close() })
			return resp
		}
		first := mustWatch("alice")
		mustWatch("alice")
		resp := watch("alice")
		if got := resp.Header.Get("Retry-After"); got != strconv.Itoa(watchRetryAfter) {
			t.Errorf("Retry-After %q, want %d", got, watchRetryAfter)
		}
		readStatus(t, resp, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests)
		mustWatch("bob")
		for range 3 {
			mustWatch("admin", auth.SystemPrivilegedGroup)
		}

		// Ending a watch gives its slot back.
		first.Body.Close()
		harness.Eventually(t, 30*time.Second, func() error {
			resp := watch("alice")
			if resp.StatusCode != http.StatusOK {
				resp.Body.Close()
				return fmt.Errorf("watch of alice after closing one: %d", resp.StatusCode)
			}
			t.Cleanup(func() { resp.Body.Close() })
			return nil
		})

		// So does a watch timing out: the server ends both, and then
		// dave may watch again.
		for range 2 {
			resp := h.do(ctx, "GET", cms+"?watch=true&timeoutSeconds=1", "", nil, "dave")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("watch of dave: %d", resp.StatusCode)
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				t.Fatalf("a watch with timeoutSeconds=1: %v", err)
			}
		}
		resp = watch("dave")
		if resp.StatusCode != http.StatusOK {
			t.Errorf("watch of dave after two timed out: %d, want 200", resp.StatusCode)
		}
		resp.Body.Close()

		resp = h.do(ctx, "GET", "/metrics", "", nil, "admin", auth.SystemPrivilegedGroup)
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := regexp.MustCompile(`(?m)^kubebus_apiserver_watches_rejected_total (\d+)$`).FindSubmatch(data)
		if m == nil {
			t.Fatalf("no kubebus_apiserver_watches_rejected_total in /metrics")
		}
		if n, _ := strconv.Atoi(string(m[1])); n < 1 {
			t.Errorf("kubebus_apiserver_watches_rejected_total %d, want at least 1", n)
		}
	})
}
