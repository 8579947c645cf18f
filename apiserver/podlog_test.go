package apiserver

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodLogOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		query    string
		want     string // kubelet query the options give
		wantCode int32
		wantMsg  string
	}{
		{query: "", want: ""},
		{query: "container=app&follow=true&previous=true&timestamps=true", want: "follow=true&previous=true&timestamps=true"},
		{query: "follow=false&previous=0", want: ""},
		{query: "follow=True&previous=t&timestamps=FALSE", want: "follow=true&previous=true"},
		{query: "tailLines=10&limitBytes=100&sinceSeconds=5", want: "limitBytes=100&sinceSeconds=5&tailLines=10"},
		{query: "sinceTime=2026-11-22T10:00:00%2B01:00", want: "sinceTime=2026-11-22T09%3A00%3A00Z"},
		{query: "tailLines=ten", wantCode: 400, wantMsg: `tailLines: "ten" is not an integer`},
		{query: "sinceTime=now", wantCode: 400, wantMsg: `sinceTime: "now" is not an RFC 3339 time`},
		{query: "tailLines=-1", wantCode: 422, wantMsg: `PodLogOptions "p" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0`},
		{query: "limitBytes=0", wantCode: 422, wantMsg: `limitBytes: Invalid value: 0: must be greater than 0`},
		{query: "sinceSeconds=0", wantCode: 422, wantMsg: `sinceSeconds: Invalid value: 0: must be greater than 0`},
		{query: "sinceSeconds=1&sinceTime=2026-11-22T10:00:00Z", wantCode: 422, wantMsg: "at most one of `sinceTime` or `sinceSeconds` may be specified"},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			t.Parallel()
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			opts, err := podLogOptions(q, "p")
			if tc.wantCode != 0 {
				if st, ok := err.(apierrors.APIStatus); !ok || st.Status().Code != tc.wantCode || !strings.Contains(st.Status().Message, tc.wantMsg) {
					t.Fatalf("error = %v, want %d with %q", err, tc.wantCode, tc.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(kubeletLogURL("10.0.0.1:10250", "ns", "p", "c", opts))
			if err != nil {
				t.Fatal(err)
			}
			if u.RawQuery != tc.want {
				t.Errorf("kubelet query = %q, want %q", u.RawQuery, tc.want)
			}
		})
	}
}

func TestKubeletLogURLEscapes(t *testing.T) {
	t.Parallel()
	got := kubeletLogURL("[fd00::1]:10250", "ns", "p", "c", &corev1.PodLogOptions{})
	if got != "https://[fd00::1]:10250/containerLogs/ns/p/c" {
		t.Errorf("url = %s", got)
	}
	// Names are DNS labels, but a stray character must not change the path.
	got = kubeletLogURL("h:1", "ns", "a/b", "c?d", &corev1.PodLogOptions{})
	if got != "https://h:1/containerLogs/ns/a%2Fb/c%3Fd" {
		t.Errorf("url = %s", got)
	}
}

func TestLogContainer(t *testing.T) {
	t.Parallel()
	pod := func(init []string, containers ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
		for _, n := range init {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n})
		}
		for _, n := range containers {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n})
		}
		return p
	}
	cases := []struct {
		name    string
		pod     *corev1.Pod
		ask     string
		want    string
		wantErr string
	}{
		{"only container", pod(nil, "app"), "", "app", ""},
		{"only container with init", pod([]string{"setup"}, "app"), "", "app", ""},
		{"named", pod(nil, "a", "b"), "b", "b", ""},
		{"init container named", pod([]string{"setup"}, "app"), "setup", "setup", ""},
		{"several", pod([]string{"setup"}, "a", "b"), "", "", "a container name must be specified for pod web, choose one of: [setup a b]"},
		{"unknown", pod(nil, "a"), "x", "", "container x is not valid for pod web"},
		{"none", pod(nil), "", "", "a container name must be specified for pod web"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := logContainer(tc.pod, tc.ask)
			if tc.wantErr != "" {
				if !apierrors.IsBadRequest(err) || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want BadRequest %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestKubeletAddress(t *testing.T) {
	t.Parallel()
	node := func(port int32, addrs ...corev1.NodeAddress) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
		n.Status.Addresses = addrs
		n.Status.DaemonEndpoints.KubeletEndpoint.Port = port
		return n
	}
	internal := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}
	host := corev1.NodeAddress{Type: corev1.NodeHostName, Address: "n1"}
	v6 := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00::5"}
	cases := []struct {
		name string
		node *corev1.Node
		want string
	}{
		{"internal IP first", node(10255, host, internal), "10.0.0.5:10255"},
		{"default port", node(0, internal), "10.0.0.5:10250"},
		{"hostname only", node(1, host), "n1:1"},
		{"ipv6", node(10250, v6), "[fd00::5]:10250"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := kubeletAddress(tc.node)
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := kubeletAddress(node(10250)); err == nil || !strings.Contains(err.Error(), `node "n1" reports no address`) {
		t.Errorf("no addresses: error = %v", err)
	}
}

func TestKubeletError(t *testing.T) {
	t.Parallel()
	resp := func(code int, ctype, body string) *http.Response {
		return &http.Response{StatusCode: code, Status: http.StatusText(code), Header: http.Header{"Content-Type": {ctype}}, Body: io.NopCloser(strings.NewReader(body))}
	}
	cases := []struct {
		name       string
		resp       *http.Response
		wantCode   int32
		wantReason metav1.StatusReason
		wantMsg    string
	}{
		{"not found", resp(404, "text/plain", "previous terminated container \"c\" in pod \"p\" not found\n"), 404, metav1.StatusReasonNotFound, `previous terminated container "c" in pod "p" not found`},
		{"bad request", resp(400, "text/plain", "container \"c\" in pod \"p\" is waiting to start: ContainerCreating"), 400, metav1.StatusReasonBadRequest, `container "c" in pod "p" is waiting to start: ContainerCreating`},
		{"status body", resp(404, "application/json", `{"kind":"Status","message":"no such pod"}`), 404, metav1.StatusReasonNotFound, "no such pod"},
		{"empty body", resp(404, "text/plain", ""), 404, metav1.StatusReasonNotFound, `the kubelet on node "n1" answered Not Found`},
		{"internal", resp(500, "text/plain", "runtime down"), 500, metav1.StatusReasonInternalError, "runtime down"},
		{"refused", resp(403, "text/plain", "user x may not read logs"), 500, metav1.StatusReasonInternalError, `the kubelet on node "n1" refused the API server's request`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := kubeletError(tc.resp, "n1", "p")
			st, ok := err.(apierrors.APIStatus)
			if !ok {
				t.Fatalf("error %v is not a Status", err)
			}
			if s := st.Status(); s.Code != tc.wantCode || s.Reason != tc.wantReason || !strings.Contains(s.Message, tc.wantMsg) {
				t.Errorf("got %d %s %q; want %d %s containing %q", s.Code, s.Reason, s.Message, tc.wantCode, tc.wantReason, tc.wantMsg)
			}
		})
	}
}
