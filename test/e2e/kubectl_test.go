package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/yaml"

	"github.com/kubebus/kubebus/test/harness"
	"github.com/kubebus/kubebus/test/prereq"
)

// TestIntegrationKubectl drives one server with the stock kubectl dispatcher
// and with the pinned kubectl.1.32, each in its own namespace, through the
// commands people type every day. The cases run in order: later ones build
// on the objects earlier ones applied.
//
// With KUBEBUS_E2E_KUBECONFIG set they run against that cluster instead of
// a server of their own (the compose test runs them through the HA stack's
// load balancer, where the controller-manager is running).
func TestIntegrationKubectl(t *testing.T) {
	harness.SkipShort(t)
	var s *harness.Server
	if kc := os.Getenv("KUBEBUS_E2E_KUBECONFIG"); kc != "" {
		s = &harness.Server{Kubeconfig: kc, Dir: t.TempDir()}
	} else {
		s = harness.StartServer(t, "", apiOnly...)
	}
	binaries := []struct {
		name string
		ns   string
		find func(testing.TB) string
	}{
		{"dispatcher", "e2e-dispatcher", harness.Kubectl},
		{"kubectl.1.32", "e2e-kubectl-1-32", func(t testing.TB) string { return harness.PinnedKubectl(t, "1.32") }},
	}
	for _, b := range binaries {
		t.Run(b.name, func(t *testing.T) {
			bin := b.find(t)
			if bin == "" {
				prereq.Missing(t, "kubectl.1.32 not found on PATH or beside the stock kubectl")
			}
			k := kubectl{s: s, bin: bin, ns: b.ns}
			wantLines(t, k.must(t, "create", "namespace", k.ns), "namespace/"+k.ns+" created")
			for _, c := range kubectlCases {
				t.Run(c.name, func(t *testing.T) { c.run(t, k) })
			}
		})
	}
}

var kubectlCases = []struct {
	name string
	run  func(*testing.T, kubectl)
}{
	{"version", caseVersion},
	{"api-resources", caseAPIResources},
	{"apply creates", caseApplyCreated},
	{"apply unchanged", caseApplyUnchanged},
	{"apply secret stringData", caseApplyStringData},
	{"apply configured", caseApplyConfigured},
	{"get all namespaces", caseGetAllNamespaces},
	{"get wide", caseGetWide},
	{"service cluster IP", caseServiceClusterIP},
	{"get yaml", caseGetYAML},
	{"get json", caseGetJSON},
	{"get jsonpath", caseGetJSONPath},
	{"get label selector", caseGetLabelSelector},
	{"get field selector", caseGetFieldSelector},
	{"get watch", caseGetWatch},
	{"describe", caseDescribe},
	{"label", caseLabel},
	{"annotate", caseAnnotate},
	{"patch", casePatch},
	{"scale", caseScale},
	{"replace", caseReplace},
	{"diff", caseDiff},
	{"create dry-run server", caseCreateDryRun},
	{"create deployment", caseCreateDeployment},
	{"get all", caseGetAll},
	{"delete", caseDelete},
	{"explain", caseExplain},
}

// appliedObjects are the names kubectl prints for testdata/apply.
var appliedObjects = []string{
	"configmap/settings",
	"deployment.apps/web",
	"replicaset.apps/cache",
	"secret/credentials",
	"service/web",
}

func caseVersion(t *testing.T, k kubectl) {
	out := k.must(t, "version")
	if !regexp.MustCompile(`(?m)^Server Version: v1\.\d+\.\d+`).MatchString(out) {
		t.Errorf("kubectl version: no Server Version line:\n%s", out)
	}
	var v struct {
		ServerVersion *version.Info `json:"serverVersion"`
	}
	out = k.must(t, "version", "-o", "json")
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("kubectl version -o json: %v\n%s", err, out)
	}
	if v.ServerVersion == nil || v.ServerVersion.Major != "1" || !strings.HasPrefix(v.ServerVersion.GitVersion, "v1.") {
		t.Errorf("kubectl version -o json: serverVersion = %+v, want major 1 and gitVersion v1.*", v.ServerVersion)
	}
}

func caseAPIResources(t *testing.T, k kubectl) {
	out := k.must(t, "api-resources")
	header, rows := table(out)
	if want := []string{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"}; !slices.Equal(header, want) {
		t.Fatalf("kubectl api-resources header = %q, want %q", header, want)
	}
	type apiResource struct{ short, apiVersion, namespaced, kind string }
	got := map[string]apiResource{}
	for _, f := range rows {
		var r apiResource
		switch len(f) {
		case 5:
			r = apiResource{f[1], f[2], f[3], f[4]}
		case 4:
			r = apiResource{"", f[1], f[2], f[3]}
		default:
			t.Errorf("kubectl api-resources: odd row %q", f)
			continue
		}
		if _, seen := got[f[0]]; !seen {
			got[f[0]] = r
		}
	}
	for _, w := range []struct {
		name string
		want apiResource
	}{
		{"pods", apiResource{"po", "v1", "true", "Pod"}},
		{"services", apiResource{"svc", "v1", "true", "Service"}},
		{"deployments", apiResource{"deploy", "apps/v1", "true", "Deployment"}},
		{"replicasets", apiResource{"rs", "apps/v1", "true", "ReplicaSet"}},
		{"configmaps", apiResource{"cm", "v1", "true", "ConfigMap"}},
		{"namespaces", apiResource{"ns", "v1", "false", "Namespace"}},
		{"nodes", apiResource{"no", "v1", "false", "Node"}},
		{"serviceaccounts", apiResource{"sa", "v1", "true", "ServiceAccount"}},
		{"endpoints", apiResource{"ep", "v1", "true", "Endpoints"}},
		{"secrets", apiResource{"", "v1", "true", "Secret"}},
	} {
		t.Run(w.name, func(t *testing.T) {
			r, ok := got[w.name]
			if !ok {
				t.Fatalf("kubectl api-resources does not list %s:\n%s", w.name, out)
			}
			if r != w.want {
				t.Errorf("kubectl api-resources %s = %+v, want %+v", w.name, r, w.want)
			}
		})
	}
}

func caseApplyCreated(t *testing.T, k kubectl) {
	out := k.must(t, "apply", "-f", "testdata/apply")
	wantLines(t, out, withSuffix(appliedObjects, " created")...)
	got := names(k.must(t, "get", "-f", "testdata/apply", "-o", "name"))
	if !slices.Equal(got, appliedObjects) {
		t.Errorf("kubectl get -f testdata/apply -o name = %q, want %q", got, appliedObjects)
	}
}

func caseApplyUnchanged(t *testing.T, k kubectl) {
	out := k.must(t, "apply", "-f", "testdata/apply")
	wantLines(t, out, withSuffix(appliedObjects, " unchanged")...)
}

// caseApplyStringData: stringData is write-only; the server folds it into data.
func caseApplyStringData(t *testing.T, k kubectl) {
	wantLines(t, k.must(t, "apply", "-f", "testdata/secret-stringdata.yaml"), "secret/token created")
	wantJSONPath(t, k, []jsonPathCheck{
		{"secret", "token", "{.data.token}", base64.StdEncoding.EncodeToString([]byte("hunter2"))},
		{"secret", "token", "{.stringData}", ""},
	})
}

func caseApplyConfigured(t *testing.T, k kubectl) {
	out := k.must(t, "apply", "-f", "testdata/edited")
	wantLines(t, out, "configmap/settings configured", "deployment.apps/web configured")
	wantJSONPath(t, k, []jsonPathCheck{
		{"configmap", "settings", "{.data.mode}", "green"},
		{"configmap", "settings", "{.data.level}", "debug"},
		{"deployment", "web", "{.spec.replicas}", "3"},
		{"deployment", "web", "{.spec.template.spec.containers[0].image}", "nginx:1.28"},
		{"deployment", "web", "{.metadata.generation}", "2"},
	})
	out = k.must(t, "apply", "-f", "testdata/edited")
	wantLines(t, out, "configmap/settings unchanged", "deployment.apps/web unchanged")
}

func caseGetAllNamespaces(t *testing.T, k kubectl) {
	for _, c := range []struct {
		args   []string
		header []string
		row    []string
	}{
		{[]string{"get", "configmaps", "-A"}, []string{"NAMESPACE", "NAME", "DATA", "AGE"}, []string{k.ns, "settings", "2"}},
		{[]string{"get", "deployments", "--all-namespaces"}, []string{"NAMESPACE", "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"}, []string{k.ns, "web"}},
		{[]string{"get", "namespaces"}, []string{"NAME", "STATUS", "AGE"}, []string{k.ns, "Active"}},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			out := k.must(t, c.args...)
			header, rows := table(out)
			if !slices.Equal(header, c.header) {
				t.Errorf("kubectl %s: header %q, want %q", strings.Join(c.args, " "), header, c.header)
			}
			if !hasRow(rows, c.row...) {
				t.Errorf("kubectl %s: no row starting %q:\n%s", strings.Join(c.args, " "), c.row, out)
			}
		})
	}
}

// caseGetWide checks the -o wide columns against the upstream printers.
func caseGetWide(t *testing.T, k kubectl) {
	for _, c := range []struct {
		resource, name string
		header         []string
		cells          map[string]string
	}{
		{"deployments", "web",
			[]string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"},
			map[string]string{"CONTAINERS": "web", "SELECTOR": "app=web"}},
		{"replicasets", "cache",
			[]string{"NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"},
			map[string]string{"DESIRED": "1", "CONTAINERS": "redis", "IMAGES": "redis:7", "SELECTOR": "app=cache"}},
		{"services", "web",
			[]string{"NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"},
			map[string]string{"TYPE": "ClusterIP", "EXTERNAL-IP": "<none>", "PORT(S)": "80/TCP", "SELECTOR": "app=web"}},
		{"configmaps", "settings",
			[]string{"NAME", "DATA", "AGE"},
			map[string]string{"DATA": "2"}},
		{"secrets", "credentials",
			[]string{"NAME", "TYPE", "DATA", "AGE"},
			map[string]string{"TYPE": "Opaque", "DATA": "2"}},
	} {
		t.Run(c.resource, func(t *testing.T) {
			out := k.must(t, "get", c.resource, c.name, "-o", "wide")
			header, rows := table(out)
			if !slices.Equal(header, c.header) {
				t.Fatalf("kubectl get %s -o wide: header %q, want %q\n%s", c.resource, header, c.header, out)
			}
			if len(rows) != 1 || len(rows[0]) != len(header) || rows[0][0] != c.name {
				t.Fatalf("kubectl get %s %s -o wide: want one row of %d cells for %s:\n%s", c.resource, c.name, len(header), c.name, out)
			}
			for col, want := range c.cells {
				if got := rows[0][slices.Index(header, col)]; got != want {
					t.Errorf("kubectl get %s -o wide: %s = %q, want %q", c.resource, col, got, want)
				}
			}
		})
	}
}

// caseServiceClusterIP: the API server allocates a ClusterIP service its
// address on create, from the default range 10.96.0.0/12.
func caseServiceClusterIP(t *testing.T, k kubectl) {
	ip := k.jsonpath(t, "service", "web", "{.spec.clusterIP}")
	_, serviceRange, _ := net.ParseCIDR("10.96.0.0/12")
	if parsed := net.ParseIP(ip); parsed == nil || !serviceRange.Contains(parsed) {
		t.Errorf("service web: spec.clusterIP = %q, want an allocated IP address in %s", ip, serviceRange)
	}
	if ips := k.jsonpath(t, "service", "web", "{.spec.clusterIPs[*]}"); ips != ip {
		t.Errorf("service web: spec.clusterIPs = %q, want [%s]", ips, ip)
	}
}

func caseGetYAML(t *testing.T, k kubectl) {
	out := k.must(t, "get", "deployment", "web", "-o", "yaml")
	var d appsv1.Deployment
	if err := yaml.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("kubectl get deployment web -o yaml: %v\n%s", err, out)
	}
	var selected string
	if d.Spec.Selector != nil {
		selected = d.Spec.Selector.MatchLabels["app"]
	}
	checks := []struct{ field, got, want string }{
		{"apiVersion", d.APIVersion, "apps/v1"},
		{"kind", d.Kind, "Deployment"},
		{"metadata.name", d.Name, "web"},
		{"metadata.namespace", d.Namespace, k.ns},
		{"metadata.labels.tier", d.Labels["tier"], "frontend"},
		{"spec.selector.matchLabels.app", selected, "web"},
		{"spec.strategy.type", string(d.Spec.Strategy.Type), "RollingUpdate"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("deployment web -o yaml: %s = %q, want %q", c.field, c.got, c.want)
		}
	}
	if d.UID == "" || d.ResourceVersion == "" || d.CreationTimestamp.IsZero() {
		t.Errorf("deployment web -o yaml: uid %q, resourceVersion %q, creationTimestamp %v: want all set", d.UID, d.ResourceVersion, d.CreationTimestamp)
	}
	if d.Spec.RevisionHistoryLimit == nil || *d.Spec.RevisionHistoryLimit != 10 ||
		d.Spec.ProgressDeadlineSeconds == nil || *d.Spec.ProgressDeadlineSeconds != 600 {
		t.Errorf("deployment web -o yaml: defaults not applied (revisionHistoryLimit %v, progressDeadlineSeconds %v)",
			d.Spec.RevisionHistoryLimit, d.Spec.ProgressDeadlineSeconds)
	}
	if cs := d.Spec.Template.Spec.Containers; len(cs) != 1 || cs[0].Name != "web" {
		t.Errorf("deployment web -o yaml: containers = %+v, want one named web", cs)
	}
}

func caseGetJSON(t *testing.T, k kubectl) {
	out := k.must(t, "get", "configmaps", "-o", "json")
	var list struct {
		APIVersion string             `json:"apiVersion"`
		Kind       string             `json:"kind"`
		Items      []corev1.ConfigMap `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("kubectl get configmaps -o json: %v\n%s", err, out)
	}
	if list.Kind != "List" || list.APIVersion != "v1" {
		t.Errorf("kubectl get configmaps -o json: %s %s, want v1 List", list.APIVersion, list.Kind)
	}
	i := slices.IndexFunc(list.Items, func(c corev1.ConfigMap) bool { return c.Name == "settings" })
	if i < 0 {
		t.Fatalf("kubectl get configmaps -o json: no settings item:\n%s", out)
	}
	if cm := list.Items[i]; cm.Kind != "ConfigMap" || cm.APIVersion != "v1" || cm.Data["mode"] == "" {
		t.Errorf("kubectl get configmaps -o json: settings = %s %s data %v, want v1 ConfigMap with data.mode", cm.APIVersion, cm.Kind, cm.Data)
	}

	out = k.must(t, "get", "secret", "credentials", "-o", "json")
	var sec corev1.Secret
	if err := json.Unmarshal([]byte(out), &sec); err != nil {
		t.Fatalf("kubectl get secret credentials -o json: %v\n%s", err, out)
	}
	if sec.Kind != "Secret" || string(sec.Data["username"]) != "admin" || sec.Type != corev1.SecretTypeOpaque {
		t.Errorf("kubectl get secret credentials -o json: kind %q type %q username %q, want Secret Opaque admin", sec.Kind, sec.Type, sec.Data["username"])
	}
}

func caseGetJSONPath(t *testing.T, k kubectl) {
	wantJSONPath(t, k, []jsonPathCheck{
		{"deployment", "web", "{.metadata.labels.tier}", "frontend"},
		{"deployment", "web", "{.spec.template.spec.containers[0].ports[0].containerPort}", "80"},
		{"service", "web", "{.spec.ports[0].port}/{.spec.ports[0].protocol}", "80/TCP"},
		{"secret", "credentials", "{.data.username}", base64.StdEncoding.EncodeToString([]byte("admin"))},
		{"deployment/web", "replicaset/cache", `{range .items[*]}{.kind}/{.metadata.name} {end}`, "Deployment/web ReplicaSet/cache "},
	})
}

// selection is one `kubectl get -o name` with a selector: the names it must
// and must not print; exact means nothing else either.
type selection struct {
	name     string
	resource string
	selector string
	include  []string
	exclude  []string
	exact    bool
}

func checkSelections(t *testing.T, k kubectl, flag string, cases []selection) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := names(k.must(t, "get", c.resource, flag, c.selector, "-o", "name"))
			if c.exact && !slices.Equal(got, c.include) {
				t.Fatalf("kubectl get %s %s %q = %q, want exactly %q", c.resource, flag, c.selector, got, c.include)
			}
			for _, n := range c.include {
				if !slices.Contains(got, n) {
					t.Errorf("kubectl get %s %s %q = %q, want %s in it", c.resource, flag, c.selector, got, n)
				}
			}
			for _, n := range c.exclude {
				if slices.Contains(got, n) {
					t.Errorf("kubectl get %s %s %q = %q, want no %s in it", c.resource, flag, c.selector, got, n)
				}
			}
		})
	}
}

func caseGetLabelSelector(t *testing.T, k kubectl) {
	wantLines(t, k.must(t, "create", "configmap", "plain", "--from-literal=x=y"), "configmap/plain created")
	checkSelections(t, k, "-l", []selection{
		{"equality", "configmaps", "app=web", []string{"configmap/settings"}, nil, true},
		{"inequality", "configmaps", "app!=web", []string{"configmap/plain"}, []string{"configmap/settings"}, false},
		// Not exact: with a controller-manager the Deployment's own
		// ReplicaSet matches too.
		{"set", "deployments,replicasets", "app in (web,cache)", []string{"deployment.apps/web", "replicaset.apps/cache"}, []string{"configmap/plain"}, false},
		{"exists", "deployments", "tier", []string{"deployment.apps/web"}, nil, true},
		{"not exists", "configmaps", "!app", []string{"configmap/plain"}, []string{"configmap/settings"}, false},
		{"no match", "configmaps", "app=nope", nil, nil, true},
	})
}

func caseGetFieldSelector(t *testing.T, k kubectl) {
	checkSelections(t, k, "--field-selector", []selection{
		{"name", "configmaps", "metadata.name=settings", []string{"configmap/settings"}, nil, true},
		{"not name", "configmaps", "metadata.name!=settings", []string{"configmap/plain"}, []string{"configmap/settings"}, false},
		{"namespace", "configmaps", "metadata.namespace=" + k.ns, []string{"configmap/plain", "configmap/settings"}, nil, false},
		{"secret type", "secrets", "type=Opaque", []string{"secret/credentials"}, nil, false},
		{"no match", "configmaps", "metadata.name=nope", nil, nil, true},
	})
}

func caseGetWatch(t *testing.T, k kubectl) {
	t.Run("plain", func(t *testing.T) {
		w := k.start(t, "get", "configmaps", "--watch")
		w.waitFor(t, `(?m)^settings\s`) // the initial list: the watch is open
		k.must(t, "create", "configmap", "watched-plain", "--from-literal=v=1")
		w.waitFor(t, `(?m)^watched-plain\s+1\s`)
	})
	t.Run("events", func(t *testing.T) {
		w := k.start(t, "get", "configmaps", "--watch", "--output-watch-events")
		w.waitFor(t, `(?m)^ADDED\s+settings\s`)
		k.must(t, "create", "configmap", "watched", "--from-literal=v=1")
		w.waitFor(t, `(?m)^ADDED\s+watched\s+1\s`)
		manifest := k.must(t, "create", "configmap", "watched", "--from-literal=v=2", "--from-literal=w=3", "--dry-run=client", "-o", "yaml")
		k.mustIn(t, manifest, "replace", "-f", "-")
		w.waitFor(t, `(?m)^MODIFIED\s+watched\s+2\s`)
		k.must(t, "delete", "configmap", "watched")
		w.waitFor(t, `(?m)^DELETED\s+watched\s`)
	})
}

func caseDescribe(t *testing.T, k kubectl) {
	out := k.must(t, "describe", "deployment", "web")
	replicas := k.jsonpath(t, "deployment", "web", "{.spec.replicas}")
	for _, pattern := range []string{
		`(?m)^Name:\s+web$`,
		`(?m)^Namespace:\s+` + regexp.QuoteMeta(k.ns) + `$`,
		`(?m)^Labels:\s+app=web$`,
		`(?m)^\s+tier=frontend$`,
		`(?m)^Selector:\s+app=web$`,
		`(?m)^Replicas:\s+` + replicas + ` desired \| \d+ updated \| \d+ total \| \d+ available \| \d+ unavailable$`,
		`(?m)^StrategyType:\s+RollingUpdate$`,
		`(?m)^\s+Image:\s+nginx:`,
	} {
		if !regexp.MustCompile(pattern).MatchString(out) {
			t.Errorf("kubectl describe deployment web: no match for %s in:\n%s", pattern, out)
		}
	}
}

func caseLabel(t *testing.T, k kubectl) {
	wantLines(t, k.must(t, "label", "configmap", "settings", "color=red"), "configmap/settings labeled")
	wantJSONPath(t, k, []jsonPathCheck{{"configmap", "settings", "{.metadata.labels.color}", "red"}})

	_, err := k.run(t, "", "label", "configmap", "settings", "color=blue")
	if err == nil || !strings.Contains(stderr(err), "--overwrite is false") {
		t.Errorf("kubectl label without --overwrite on an existing key: err = %v, want refusal", err)
	}
	wantLines(t, k.must(t, "label", "configmap", "settings", "color=blue", "--overwrite"), "configmap/settings labeled")
	wantJSONPath(t, k, []jsonPathCheck{{"configmap", "settings", "{.metadata.labels.color}", "blue"}})

	wantLines(t, k.must(t, "label", "configmap", "settings", "color-"), "configmap/settings unlabeled")
	wantJSONPath(t, k, []jsonPathCheck{
		{"configmap", "settings", "{.metadata.labels.color}", ""},
		{"configmap", "settings", "{.metadata.labels.app}", "web"},
	})
}

func caseAnnotate(t *testing.T, k kubectl) {
	wantLines(t, k.must(t, "annotate", "deployment", "web", "owner=team-a", "example.com/ticket=42"), "deployment.apps/web annotated")
	wantJSONPath(t, k, []jsonPathCheck{
		{"deployment", "web", "{.metadata.annotations.owner}", "team-a"},
		{"deployment", "web", `{.metadata.annotations.example\.com/ticket}`, "42"},
	})
}

func casePatch(t *testing.T, k kubectl) {
	for _, c := range []struct {
		typ, resource, name, patch, printed string
		checks                              []jsonPathCheck
	}{
		{"merge", "configmap", "settings", `{"data":{"patched":"merge"}}`, "configmap/settings patched",
			[]jsonPathCheck{{"configmap", "settings", "{.data.patched}", "merge"}}},
		{"json", "deployment", "web", `[{"op":"replace","path":"/spec/replicas","value":5}]`, "deployment.apps/web patched",
			[]jsonPathCheck{{"deployment", "web", "{.spec.replicas}", "5"}}},
		// A strategic merge patch merges the containers list by name: the
		// container keeps its ports, where a merge patch would replace the list.
		{"strategic", "deployment", "web", `{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"MODE","value":"blue"}]}]}}}}`, "deployment.apps/web patched",
			[]jsonPathCheck{
				{"deployment", "web", "{.spec.template.spec.containers[0].env[0].value}", "blue"},
				{"deployment", "web", "{.spec.template.spec.containers[*].name}", "web"},
				{"deployment", "web", "{.spec.template.spec.containers[0].ports[0].containerPort}", "80"},
			}},
	} {
		t.Run(c.typ, func(t *testing.T) {
			out := k.must(t, "patch", c.resource, c.name, "--type="+c.typ, "-p", c.patch)
			wantLines(t, out, c.printed)
			wantJSONPath(t, k, c.checks)
		})
	}
}

func caseScale(t *testing.T, k kubectl) {
	for _, c := range []struct {
		resource, name, printed string
		replicas                int
	}{
		{"deployment", "web", "deployment.apps/web scaled", 4},
		{"replicaset", "cache", "replicaset.apps/cache scaled", 2},
	} {
		t.Run(c.resource, func(t *testing.T) {
			out := k.must(t, "scale", c.resource, c.name, fmt.Sprintf("--replicas=%d", c.replicas))
			wantLines(t, out, c.printed)
			wantJSONPath(t, k, []jsonPathCheck{{c.resource, c.name, "{.spec.replicas}", fmt.Sprint(c.replicas)}})
		})
	}
}

func caseReplace(t *testing.T, k kubectl) {
	uid := k.jsonpath(t, "configmap", "settings", "{.metadata.uid}")
	wantLines(t, k.must(t, "replace", "-f", "testdata/configmap-replace.yaml"), "configmap/settings replaced")
	wantJSONPath(t, k, []jsonPathCheck{
		{"configmap", "settings", "{.data.mode}", "replaced"},
		{"configmap", "settings", "{.data.level}", ""},
		{"configmap", "settings", "{.metadata.labels.replaced}", "true"},
		{"configmap", "settings", "{.metadata.uid}", uid},
	})
}

func caseDiff(t *testing.T, k kubectl) {
	for _, c := range []struct {
		name, file string
		code       int
		patterns   []string
	}{
		{"same", "testdata/apply/service.yaml", 0, nil},
		{"different", "testdata/service-diff.yaml", 1, []string{`(?m)^-\s+port: 80$`, `(?m)^\+\s+port: 8080$`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := k.run(t, "", "diff", "-f", c.file)
			if got := exitCode(err); got != c.code {
				t.Fatalf("kubectl diff -f %s: exit %d, want %d (%v)", c.file, got, c.code, err)
			}
			if c.code == 0 && strings.TrimSpace(out) != "" {
				t.Errorf("kubectl diff -f %s: exit 0 but printed:\n%s", c.file, out)
			}
			for _, p := range c.patterns {
				if !regexp.MustCompile(p).MatchString(out) {
					t.Errorf("kubectl diff -f %s: no match for %s in:\n%s", c.file, p, out)
				}
			}
		})
	}
	// diff is a dry run: nothing changed.
	wantJSONPath(t, k, []jsonPathCheck{{"service", "web", "{.spec.ports[0].port}", "80"}})
}

func caseCreateDryRun(t *testing.T, k kubectl) {
	out := k.must(t, "create", "configmap", "dry-run", "--from-literal=k=v", "--dry-run=server", "-o", "yaml")
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal([]byte(out), &cm); err != nil {
		t.Fatalf("kubectl create --dry-run=server -o yaml: %v\n%s", err, out)
	}
	if cm.Kind != "ConfigMap" || cm.Name != "dry-run" || cm.Namespace != k.ns || cm.Data["k"] != "v" {
		t.Errorf("kubectl create --dry-run=server -o yaml printed %s %s/%s data %v, want ConfigMap %s/dry-run data k=v",
			cm.Kind, cm.Namespace, cm.Name, cm.Data, k.ns)
	}
	if cm.CreationTimestamp.IsZero() {
		t.Errorf("kubectl create --dry-run=server: creationTimestamp not set; the server did not process the object:\n%s", out)
	}
	wantNotFound(t, k, "configmap", "dry-run")
}

func caseCreateDeployment(t *testing.T, k kubectl) {
	wantLines(t, k.must(t, "create", "deployment", "x", "--image=busybox"), "deployment.apps/x created")
	wantJSONPath(t, k, []jsonPathCheck{
		{"deployment", "x", "{.spec.template.spec.containers[0].image}", "busybox"},
		{"deployment", "x", "{.spec.selector.matchLabels.app}", "x"},
		{"deployment", "x", "{.spec.replicas}", "1"},
	})
}

func caseGetAll(t *testing.T, k kubectl) {
	want := []string{"deployment.apps/web", "deployment.apps/x", "replicaset.apps/cache", "service/web"}
	got := names(k.must(t, "get", "all", "-o", "name"))
	for _, n := range want {
		if !slices.Contains(got, n) {
			t.Errorf("kubectl get all -o name = %q, want %s in it", got, n)
		}
	}
	out := k.must(t, "get", "all")
	for _, n := range want {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(n) + `\s`).MatchString(out) {
			t.Errorf("kubectl get all: no row for %s:\n%s", n, out)
		}
	}
	for _, h := range []string{
		`(?m)^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE$`,
		`(?m)^NAME\s+DESIRED\s+CURRENT\s+READY\s+AGE$`,
		`(?m)^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE$`,
	} {
		if !regexp.MustCompile(h).MatchString(out) {
			t.Errorf("kubectl get all: no header matching %s:\n%s", h, out)
		}
	}
}

func caseDelete(t *testing.T, k kubectl) {
	for _, c := range []struct {
		args             []string
		printed          string
		resource, object string
	}{
		{[]string{"delete", "deployment", "x"}, `deployment.apps "x" deleted`, "deployment", "x"},
		{[]string{"delete", "-f", "testdata/secret-stringdata.yaml"}, `secret "token" deleted`, "secret", "token"},
		{[]string{"delete", "configmap", "plain", "watched-plain"}, `configmap "plain" deleted`, "configmap", "plain"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			out := k.must(t, c.args...)
			if !strings.Contains(out, c.printed) {
				t.Errorf("kubectl %s printed %q, want %q", strings.Join(c.args, " "), out, c.printed)
			}
			wantNotFound(t, k, c.resource, c.object)
		})
	}
}

func caseExplain(t *testing.T, k kubectl) {
	for _, c := range []struct {
		field    string
		patterns []string
	}{
		{"deployment.spec", []string{
			`(?m)^KIND:\s+Deployment$`,
			`(?m)^VERSION:\s+v1$`,
			`(?m)^FIELD:\s+spec <DeploymentSpec>$`,
			`(?m)^\s+replicas\s+<integer>$`,
			`Number of desired pods`,
			`(?m)^\s+strategy\s+<DeploymentStrategy>$`,
			`The deployment strategy to use to replace existing pods with new ones`,
			`(?m)^\s+selector\s+<LabelSelector> -required-$`,
			`(?m)^\s+template\s+<PodTemplateSpec> -required-$`,
		}},
		{"deployment.spec.strategy", []string{
			`(?m)^FIELD:\s+strategy <DeploymentStrategy>$`,
			`(?m)^\s+rollingUpdate\s+<RollingUpdateDeployment>$`,
			`(?m)^\s+type\s+<string>$`,
		}},
		{"svc.spec.ports", []string{
			`(?m)^KIND:\s+Service$`,
			`(?m)^\s+port\s+<integer> -required-$`,
			`(?m)^\s+targetPort\s+<IntOrString>$`,
		}},
	} {
		t.Run(c.field, func(t *testing.T) {
			out := k.must(t, "explain", c.field)
			for _, p := range c.patterns {
				if !regexp.MustCompile(p).MatchString(out) {
					t.Errorf("kubectl explain %s: no match for %s in:\n%s", c.field, p, out)
				}
			}
		})
	}
}

// kubectl is one kubectl binary pointed at a server and a namespace.
type kubectl struct {
	s   *harness.Server
	bin string
	ns  string
}

// run runs kubectl in k.ns and returns stdout; a failure is a *harness.KubectlError.
func (k kubectl) run(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	return k.s.Run(t, k.bin, stdin, append([]string{"--namespace", k.ns}, args...)...)
}

// must runs kubectl and fails the test when it fails.
func (k kubectl) must(t *testing.T, args ...string) string {
	t.Helper()
	return k.mustIn(t, "", args...)
}

// mustIn is must with stdin.
func (k kubectl) mustIn(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := k.run(t, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// jsonpath returns `kubectl get resource name -o jsonpath=expr`.
func (k kubectl) jsonpath(t *testing.T, resource, name, expr string) string {
	t.Helper()
	args := []string{"get", resource}
	if name != "" {
		args = append(args, name)
	}
	return k.must(t, append(args, "-o", "jsonpath="+expr)...)
}

// start runs kubectl in the background until the test ends.
func (k kubectl) start(t *testing.T, args ...string) *background {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	cmd := exec.CommandContext(ctx, k.bin, append([]string{"--kubeconfig", k.s.Kubeconfig, "--namespace", k.ns}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.s.Kubeconfig, "HOME="+k.s.Dir)
	cmd.WaitDelay = 5 * time.Second
	b := &background{args: args}
	cmd.Stdout, cmd.Stderr = &b.stdout, &b.stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting kubectl %s: %v", strings.Join(args, " "), err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	return b
}

// background is the output of a kubectl started with start.
type background struct {
	args           []string
	stdout, stderr lockedBuffer
}

// waitFor polls the output until it matches pattern.
func (b *background) waitFor(t *testing.T, pattern string) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	harness.Eventually(t, 30*time.Second, func() error {
		out := b.stdout.String()
		if re.MatchString(out) {
			return nil
		}
		return fmt.Errorf("kubectl %s: no match for %s yet\nstdout:\n%s\nstderr:\n%s", strings.Join(b.args, " "), pattern, out, b.stderr.String())
	})
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// jsonPathCheck is one `kubectl get -o jsonpath` and the text it must print.
type jsonPathCheck struct {
	resource, name, expr, want string
}

func wantJSONPath(t *testing.T, k kubectl, checks []jsonPathCheck) {
	t.Helper()
	for _, c := range checks {
		if got := k.jsonpath(t, c.resource, c.name, c.expr); got != c.want {
			t.Errorf("kubectl get %s %s -o jsonpath=%s = %q, want %q", c.resource, c.name, c.expr, got, c.want)
		}
	}
}

// wantNotFound checks that `kubectl get` fails with NotFound.
func wantNotFound(t *testing.T, k kubectl, resource, name string) {
	t.Helper()
	out, err := k.run(t, "", "get", resource, name)
	if err == nil {
		t.Errorf("kubectl get %s %s: found, want NotFound:\n%s", resource, name, out)
		return
	}
	if e := stderr(err); !strings.Contains(e, "(NotFound)") || !strings.Contains(e, fmt.Sprintf("%q not found", name)) {
		t.Errorf("kubectl get %s %s: %v, want a NotFound error", resource, name, err)
	}
}

// wantLines checks that every line in want is a whole line of out.
func wantLines(t *testing.T, out string, want ...string) {
	t.Helper()
	got := lines(out)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("output has no line %q:\n%s", w, out)
		}
	}
}

func lines(out string) []string {
	var ls []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}

// names returns the sorted lines of `-o name` output.
func names(out string) []string {
	ls := lines(out)
	slices.Sort(ls)
	return ls
}

func withSuffix(list []string, suffix string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s + suffix
	}
	return out
}

// table splits kubectl's table output into the header and the rows' cells.
func table(out string) (header []string, rows [][]string) {
	for i, l := range lines(out) {
		if i == 0 {
			header = strings.Fields(l)
			continue
		}
		rows = append(rows, strings.Fields(l))
	}
	return header, rows
}

// hasRow reports whether some row starts with prefix.
func hasRow(rows [][]string, prefix ...string) bool {
	for _, r := range rows {
		if len(r) >= len(prefix) && slices.Equal(r[:len(prefix)], prefix) {
			return true
		}
	}
	return false
}

// exitCode is kubectl's exit status: 0 for nil, -1 when it did not exit.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ke *harness.KubectlError
	if errors.As(err, &ke) {
		err = ke.Err
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// stderr is what a failed kubectl printed on stderr.
func stderr(err error) string {
	var ke *harness.KubectlError
	if errors.As(err, &ke) {
		return ke.Stderr
	}
	if err == nil {
		return ""
	}
	return err.Error()
}
