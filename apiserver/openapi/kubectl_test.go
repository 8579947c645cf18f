package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/kubebus/kubebus/test/prereq"
)

const kubectlBinary = "/usr/lib/google-cloud-sdk/bin/kubectl.1.32"

// fakeAPIServer serves the OpenAPI documents, hand-written discovery for
// testResources and an in-memory deployments store good enough for
// kubectl apply. It records every request.
type fakeAPIServer struct {
	mu          sync.Mutex
	requests    []string // "METHOD path?query content-type"
	deployments map[string][]byte
}

func (f *fakeAPIServer) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, fmt.Sprintf("%s %s %s", r.Method, r.URL.RequestURI(), r.Header.Get("Content-Type")))
		f.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// takeRequests returns the requests recorded since the last call.
func (f *fakeAPIServer) takeRequests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.requests
	f.requests = nil
	return out
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func notFound(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusNotFound, metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound,
		Message: r.URL.Path + " not found",
	})
}

func (f *fakeAPIServer) routes(t *testing.T) http.Handler {
	r := chi.NewRouter()
	r.Use(f.record)
	mustBuild(t).Register(r)
	r.NotFound(notFound)

	lists := map[string]*metav1.APIResourceList{}
	for _, res := range testResources() {
		gv := res.GVK.GroupVersion().String()
		if lists[gv] == nil {
			lists[gv] = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
		}
		l := lists[gv]
		l.APIResources = append(l.APIResources, metav1.APIResource{
			Name: res.Plural, Namespaced: res.Namespaced, Kind: res.GVK.Kind,
			Verbs: metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
		})
		for _, sub := range res.Subresources {
			l.APIResources = append(l.APIResources, metav1.APIResource{
				Name: res.Plural + "/" + sub, Namespaced: res.Namespaced, Kind: res.GVK.Kind, Verbs: metav1.Verbs{"get"},
			})
		}
	}
	r.Get("/version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]string{"major": "1", "minor": "32", "gitVersion": "v1.32.0", "platform": "linux/amd64"})
	})
	r.Get("/api", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
	})
	r.Get("/apis", func(w http.ResponseWriter, _ *http.Request) {
		apps := metav1.GroupVersionForDiscovery{GroupVersion: "apps/v1", Version: "v1"}
		writeJSON(w, 200, metav1.APIGroupList{
			TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups:   []metav1.APIGroup{{Name: "apps", Versions: []metav1.GroupVersionForDiscovery{apps}, PreferredVersion: apps}},
		})
	})
	r.Get("/api/v1", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, lists["v1"]) })
	r.Get("/apis/apps/v1", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, lists["apps/v1"]) })

	const item = "/apis/apps/v1/namespaces/{ns}/deployments/{name}"
	key := func(r *http.Request) string { return chi.URLParam(r, "ns") + "/" + chi.URLParam(r, "name") }
	r.Get(item, func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		obj, ok := f.deployments[key(r)]
		f.mu.Unlock()
		if !ok {
			notFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(obj)
	})
	r.Post("/apis/apps/v1/namespaces/{ns}/deployments", func(w http.ResponseWriter, r *http.Request) {
		var d appsv1.Deployment
		if err := json.NewDecoder(r.Body).Decode(&d); err != nil {
			writeJSON(w, http.StatusBadRequest, metav1.Status{Status: metav1.StatusFailure, Message: err.Error(), Code: 400})
			return
		}
		d.Namespace, d.ResourceVersion, d.Generation = chi.URLParam(r, "ns"), "1", 1
		d.UID = "0b5fd3a2-0000-4000-8000-000000000001"
		data, _ := json.Marshal(&d)
		f.mu.Lock()
		f.deployments[d.Namespace+"/"+d.Name] = data
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(data)
	})
	r.Patch(item, func(w http.ResponseWriter, r *http.Request) {
		if ct := r.Header.Get("Content-Type"); ct != "application/strategic-merge-patch+json" {
			writeJSON(w, http.StatusUnsupportedMediaType, metav1.Status{Status: metav1.StatusFailure, Message: ct, Code: 415})
			return
		}
		patch, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		defer f.mu.Unlock()
		cur, ok := f.deployments[key(r)]
		if !ok {
			notFound(w, r)
			return
		}
		merged, err := strategicpatch.StrategicMergePatch(cur, patch, appsv1.Deployment{})
		if err != nil {
			writeJSON(w, http.StatusUnprocessableEntity, metav1.Status{Status: metav1.StatusFailure, Message: err.Error(), Code: 422})
			return
		}
		f.deployments[key(r)] = merged
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(merged)
	})
	return r
}

// kubectl runs the stock kubectl against the fake server.
func kubectl(t *testing.T, kubeconfig string, stdin string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlBinary, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	home := filepath.Dir(kubeconfig)
	cmd.Env = []string{"HOME=" + home, "KUBECACHEDIR=" + filepath.Join(home, "cache"), "PATH=/usr/bin:/bin"}
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

func TestIntegrationKubectl(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test skipped under -short")
	}
	if _, err := os.Stat(kubectlBinary); err != nil {
		prereq.Missing(t, "kubectl 1.32 binary %s not available: %v", kubectlBinary, err)
	}
	fake := &fakeAPIServer{deployments: map[string][]byte{}}
	srv := httptest.NewServer(fake.routes(t))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	config := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {server: %q}
users:
- name: nobody
  user: {}
contexts:
- name: fake
  context: {cluster: fake, user: nobody, namespace: default}
current-context: fake
`, srv.URL)
	if err := os.WriteFile(kubeconfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("explain", func(t *testing.T) {
		tests := []struct {
			args []string
			want []string
		}{
			{[]string{"explain", "deployment.spec"}, []string{
				"GROUP:      apps", "KIND:       Deployment", "FIELD: spec <DeploymentSpec>",
				"replicas\t<integer>", "Number of desired pods",
				"selector\t<LabelSelector>", "template\t<PodTemplateSpec> -required-",
				"strategy\t<DeploymentStrategy>",
			}},
			{[]string{"explain", "pods.spec.containers"}, []string{
				"KIND:       Pod", "FIELD: containers <[]Container>",
				"List of containers belonging to the pod",
				"name\t<string> -required-", "image\t<string>", "ports\t<[]ContainerPort>",
				"resources\t<ResourceRequirements>",
			}},
			{[]string{"explain", "pods.spec.containers.resources.limits"}, []string{"FIELD: limits <map[string]Quantity>"}},
			{[]string{"explain", "deployment.spec.strategy.rollingUpdate.maxSurge"}, []string{"FIELD: maxSurge <IntOrString>"}},
			{[]string{"explain", "deployment.metadata.creationTimestamp"}, []string{"FIELD: creationTimestamp <string>"}},
			{[]string{"explain", "configmaps", "--recursive"}, []string{"binaryData\t<map[string]string>", "immutable\t<boolean>"}},
			{[]string{"explain", "deployment.spec", "--output=plaintext-openapiv2"}, []string{
				"KIND:     Deployment", "RESOURCE: spec <Object>", "replicas\t<integer>", "Number of desired pods",
				"template\t<Object> -required-",
			}},
			{[]string{"explain", "pods.spec.containers", "--output=plaintext-openapiv2"}, []string{
				"RESOURCE: containers <[]Object>", "image\t<string>", "name\t<string> -required-",
			}},
		}
		for _, tt := range tests {
			t.Run(strings.Join(tt.args[1:], " "), func(t *testing.T) {
				out, _ := kubectl(t, kubeconfig, "", tt.args...)
				for _, want := range tt.want {
					if !strings.Contains(out, want) {
						t.Errorf("output lacks %q:\n%s", want, out)
					}
				}
			})
		}
	})

	t.Run("apply", func(t *testing.T) {
		manifest := func(image string, replicas int) string {
			return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: %d
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: %s
        ports:
        - containerPort: 80
      - name: sidecar
        image: busybox
`, replicas, image)
		}
		fake.takeRequests()
		steps := []struct {
			name     string
			manifest string
			stdout   string
			write    string // the request that must carry fieldValidation=Strict
		}{
			{"create", manifest("nginx:1.27", 1), "deployment.apps/web created", "POST /apis/apps/v1/namespaces/default/deployments?"},
			{"update", manifest("nginx:1.28", 2), "deployment.apps/web configured", "PATCH /apis/apps/v1/namespaces/default/deployments/web?"},
		}
		for _, step := range steps {
			out, errOut := kubectl(t, kubeconfig, step.manifest, "apply", "-f", "-")
			reqs := fake.takeRequests()
			if !strings.Contains(out, step.stdout) {
				t.Errorf("%s: stdout %q lacks %q", step.name, out, step.stdout)
			}
			if strings.Contains(errOut, "warning") {
				t.Errorf("%s: kubectl warned:\n%s", step.name, errOut)
			}
			found := false
			for _, req := range reqs {
				if strings.HasPrefix(req, "GET /openapi/v2") {
					t.Errorf("%s: kubectl fell back to OpenAPI v2 (client-side validation or patch): %s", step.name, req)
				}
				if strings.HasPrefix(req, step.write) {
					found = true
					if !strings.Contains(req, "fieldValidation=Strict") {
						t.Errorf("%s: %s does not ask the server to validate", step.name, req)
					}
					if step.name == "update" && !strings.HasSuffix(req, " application/strategic-merge-patch+json") {
						t.Errorf("%s: %s is not a strategic merge patch", step.name, req)
					}
				}
			}
			if !found {
				t.Errorf("%s: no %s... request among %q", step.name, step.write, reqs)
			}
		}
		var d appsv1.Deployment
		fake.mu.Lock()
		err := json.Unmarshal(fake.deployments["default/web"], &d)
		fake.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		c := d.Spec.Template.Spec.Containers
		if *d.Spec.Replicas != 2 || len(c) != 2 || c[0].Image != "nginx:1.28" || c[1].Image != "busybox" {
			t.Errorf("stored deployment after apply: replicas %d, containers %+v", *d.Spec.Replicas, c)
		}
	})
}
