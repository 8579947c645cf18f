package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/kubebus/kubebus/test/harness"
	"github.com/kubebus/kubebus/test/prereq"
)

// crontabsGVR is the resource the CronTab CRD serves in its storage version.
var crontabsGVR = schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}

const (
	crontabsCRD = "crontabs.stable.example.com"
	// conflictCRD asks for the plural "ct", which crontabs has taken as
	// its short name.
	conflictCRD = "ct.stable.example.com"
	// refusedCRD says x-kubernetes-preserve-unknown-fields: false, which
	// upstream refuses ("must be true or undefined").
	refusedCRD = "gadgets.stable.example.com"
)

// crontabSchema is the openAPIV3Schema of both CronTab versions. Unknown
// fields are pruned by default; status says nothing more (an explicit
// x-kubernetes-preserve-unknown-fields: false is refused upstream, see
// crdRefusesPreserveFalse). nested gets default {} so that its own
// default, mode: fast, applies when a CronTab leaves it out.
const crontabSchema = `openAPIV3Schema:
  type: object
  properties:
    spec:
      type: object
      description: The desired state of the CronTab.
      x-kubernetes-validations:
      - rule: "self.replicas <= 10"
        message: replicas must be at most 10
      properties:
        cronSpec:
          type: string
          description: When the job runs, in cron format.
          pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'
        image:
          type: string
          description: The image the job runs.
        replicas:
          type: integer
          description: How many copies of the job run.
          minimum: 0
          default: 1
        nested:
          type: object
          default: {}
          properties:
            mode:
              type: string
              default: fast
    status:
      type: object
      properties:
        replicas:
          type: integer
`

// crontabVersion is one entry of the CRD's versions with the shared
// schema, subresources and printer columns.
func crontabVersion(name string, storage bool) string {
	return fmt.Sprintf(`  - name: %s
    served: true
    storage: %t
    schema:
%s    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    additionalPrinterColumns:
    - name: Spec
      type: string
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
`, name, storage, indent(crontabSchema, "      "))
}

// crontabCRDYAML is the CronTab CRD of the CRD walkthrough in the
// Kubernetes documentation, grown to cover defaults, CEL, two versions,
// both subresources and printer columns.
func crontabCRDYAML() string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ` + crontabsCRD + `
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    listKind: CronTabList
    shortNames: [ct]
    categories: [all]
  versions:
` + crontabVersion("v1", true) + crontabVersion("v1beta1", false)
}

// smallCRDYAML is a CRD in stable.example.com with one version whose
// schema is schemaProps (indented under openAPIV3Schema).
func smallCRDYAML(plural, singular, kind, schemaProps string) string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ` + plural + `.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: ` + plural + `
    singular: ` + singular + `
    kind: ` + kind + `
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
` + indent(schemaProps, "        ")
}

// cronTabYAML is a CronTab whose spec is the given lines (without indent).
func cronTabYAML(name string, spec ...string) string {
	y := "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: " + name + "\nspec:\n"
	for _, l := range spec {
		y += "  " + l + "\n"
	}
	return y
}

func indent(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}

// crdCase is one kubectl minor's walk through the CronTab story, in its
// own namespace, against the shared server.
type crdCase struct {
	k   kubectl
	dyn dynamic.Interface
	hc  *http.Client
}

// crontabs is the dynamic client of CronTabs in the case's namespace.
func (c crdCase) crontabs() dynamic.ResourceInterface {
	return c.dyn.Resource(crontabsGVR).Namespace(c.k.ns)
}

// listPath is the REST path of the case's CronTabs (or of another plural).
func (c crdCase) listPath(plural string) string {
	return c.k.s.URL + "/apis/stable.example.com/v1/namespaces/" + c.k.ns + "/" + plural
}

// TestIntegrationCustomResources drives CustomResourceDefinitions with the
// stock kubectl 1.32 and 1.33, one after the other on one server (each in
// its own namespace; the CRDs are cluster-wide, so each minor's story
// deletes them when it ends): a CRD with a structural schema (pattern,
// minimum, defaults, a CEL rule), two versions, the status and scale
// subresources, printer columns, a short name and the "all" category is
// established and served without a restart; unknown fields are pruned
// or refused, invalid objects are refused with the field paths and the
// CEL message; get, explain, patch, scale and server-side apply work on
// CronTabs; a client-go dynamic informer and `kubebus tap` see their
// changes; discovery lists them; a conflicting CRD is not served; and a
// deleted CRD takes its objects with it.
func TestIntegrationCustomResources(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", apiOnly...)
	dyn, err := dynamic.NewForConfig(s.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	hc := s.HTTPClient(t)
	for _, minor := range []string{"1.32", "1.33"} {
		t.Run("kubectl "+minor, func(t *testing.T) {
			bin := harness.PinnedKubectl(t, minor)
			if bin == "" {
				prereq.Missing(t, "kubectl.%s not found on PATH or beside the stock kubectl", minor)
			}
			c := crdCase{k: kubectl{s: s, bin: bin, ns: "crd-" + strings.ReplaceAll(minor, ".", "-")}, dyn: dyn, hc: hc}
			c.k.must(t, "create", "namespace", c.k.ns)
			t.Cleanup(func() { c.deleteCRDs(t) })
			for _, step := range crdSteps {
				if !t.Run(step.name, func(t *testing.T) { step.run(t, c) }) && step.essential {
					t.Fatalf("step %q failed; the later steps need it", step.name)
				}
			}
		})
	}
}

// crdSteps run in order; later ones use the objects earlier ones made.
// When an essential step fails, the rest are not run.
var crdSteps = []struct {
	name      string
	run       func(*testing.T, crdCase)
	essential bool
}{
	{"CRD established", crdEstablished, true},
	{"discovery", crdDiscovery, false},
	{"unknown fields", crdUnknownFields, true},
	{"invalid object", crdInvalidObject, false},
	{"get printer columns", crdGetColumns, false},
	{"explain", crdExplain, false},
	{"second version", crdSecondVersion, false},
	{"status subresource", crdStatusSubresource, false},
	{"scale subresource", crdScaleSubresource, false},
	{"server-side apply", crdServerSideApply, false},
	{"dynamic informer", crdDynamicInformer, false},
	{"tap", crdTap, false},
	{"names conflict", crdNamesConflict, false},
	{"preserve-unknown-fields false refused", crdRefusesPreserveFalse, false},
	{"delete removes objects", crdDeleteRemovesObjects, false},
}

// deleteCRDs removes every CRD the story makes and waits until they are gone.
func (c crdCase) deleteCRDs(t *testing.T) {
	t.Helper()
	if _, err := c.k.run(t, "", "delete", "crd", crontabsCRD, conflictCRD, refusedCRD, "--ignore-not-found", "--timeout=60s"); err != nil {
		t.Errorf("deleting the CRDs: %v", err)
	}
}

// waitEstablished waits until `kubectl wait --for condition=established`
// succeeds for the CRD.
func (c crdCase) waitEstablished(t *testing.T, crd string) {
	t.Helper()
	harness.Eventually(t, 60*time.Second, func() error {
		out, err := c.k.run(t, "", "wait", "--for", "condition=established", "--timeout=10s", "crd/"+crd)
		if err != nil {
			return err
		}
		if !strings.Contains(out, "condition met") {
			return fmt.Errorf("kubectl wait printed %q, want \"condition met\"", out)
		}
		return nil
	})
}

// condition is the status of the CRD's condition typ ("" when absent).
func (c crdCase) condition(t *testing.T, crd, typ string) string {
	t.Helper()
	return c.k.jsonpath(t, "crd", crd, `{.status.conditions[?(@.type=="`+typ+`")].status}`)
}

// applyCRD applies the CronTab CRD and waits until it is established.
func (c crdCase) applyCRD(t *testing.T) {
	t.Helper()
	out := c.k.mustIn(t, crontabCRDYAML(), "apply", "-f", "-")
	line := "customresourcedefinition.apiextensions.k8s.io/" + crontabsCRD
	if got := lines(out); !slices.Contains(got, line+" created") && !slices.Contains(got, line+" configured") {
		t.Fatalf("kubectl apply of the CRD printed %q, want %q created (or configured)", out, line)
	}
	c.waitEstablished(t, crontabsCRD)
}

func crdEstablished(t *testing.T, c crdCase) {
	c.applyCRD(t)
	if got := c.condition(t, crontabsCRD, "NamesAccepted"); got != "True" {
		t.Errorf("NamesAccepted = %q, want True\n%s", got, c.k.must(t, "get", "crd", crontabsCRD, "-o", "yaml"))
	}
	wantJSONPath(t, c.k, []jsonPathCheck{
		{"crd", crontabsCRD, "{.status.acceptedNames.kind}", "CronTab"},
		{"crd", crontabsCRD, "{.status.acceptedNames.plural}", "crontabs"},
		{"crd", crontabsCRD, "{.status.acceptedNames.shortNames[*]}", "ct"},
		{"crd", crontabsCRD, "{.status.storedVersions[*]}", "v1"},
	})
	// Established means served: no restart, no further wait.
	if code := statusOf(t, c.hc, http.MethodGet, c.listPath("crontabs")); code != http.StatusOK {
		t.Fatalf("GET %s after Established: %d, want 200", c.listPath("crontabs"), code)
	}
}

func crdDiscovery(t *testing.T, c crdCase) {
	var out string
	harness.Eventually(t, 10*time.Second, func() error {
		out = c.k.must(t, "api-resources", "--api-group=stable.example.com")
		if !strings.Contains(out, "crontabs") {
			return fmt.Errorf("kubectl api-resources --api-group=stable.example.com does not list crontabs:\n%s", out)
		}
		return nil
	})
	header, rows := table(out)
	if want := []string{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"}; !slices.Equal(header, want) {
		t.Errorf("kubectl api-resources header = %q, want %q", header, want)
	}
	if !hasRow(rows, "crontabs", "ct", "stable.example.com/v1", "true", "CronTab") {
		t.Errorf("kubectl api-resources --api-group=stable.example.com: no row \"crontabs ct stable.example.com/v1 true CronTab\":\n%s", out)
	}
	raw := c.k.must(t, "get", "--raw", "/apis/stable.example.com")
	var group metav1.APIGroup
	if err := json.Unmarshal([]byte(raw), &group); err != nil {
		t.Fatalf("GET /apis/stable.example.com: %v\n%s", err, raw)
	}
	var versions []string
	for _, v := range group.Versions {
		versions = append(versions, v.GroupVersion)
	}
	if !slices.Contains(versions, "stable.example.com/v1") || !slices.Contains(versions, "stable.example.com/v1beta1") || group.PreferredVersion.GroupVersion != "stable.example.com/v1" {
		t.Errorf("GET /apis/stable.example.com: versions %q preferred %q, want v1 and v1beta1, v1 preferred", versions, group.PreferredVersion.GroupVersion)
	}
	raw = c.k.must(t, "get", "--raw", "/apis/stable.example.com/v1")
	var list metav1.APIResourceList
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		t.Fatalf("GET /apis/stable.example.com/v1: %v\n%s", err, raw)
	}
	got := map[string]metav1.APIResource{}
	for _, r := range list.APIResources {
		got[r.Name] = r
	}
	r, ok := got["crontabs"]
	if !ok || r.Kind != "CronTab" || !r.Namespaced || !slices.Equal(r.ShortNames, []string{"ct"}) || !slices.Equal(r.Categories, []string{"all"}) || r.SingularName != "crontab" {
		t.Errorf("GET /apis/stable.example.com/v1: crontabs = %+v, want kind CronTab, namespaced, shortNames [ct], categories [all], singular crontab\n%s", r, raw)
	}
	for _, sub := range []string{"crontabs/status", "crontabs/scale"} {
		if _, ok := got[sub]; !ok {
			t.Errorf("GET /apis/stable.example.com/v1 does not list %s:\n%s", sub, raw)
		}
	}
}

func crdUnknownFields(t *testing.T, c crdCase) {
	manifest := cronTabYAML("my-cron", `cronSpec: "* * * * */5"`, "image: my-image", "extra: surprise")
	// kubectl's default, --validate=strict, asks the server to refuse it.
	_, err := c.k.run(t, manifest, "apply", "-f", "-")
	if err == nil || !strings.Contains(stderr(err), `unknown field "spec.extra"`) {
		t.Fatalf("strict apply with spec.extra: want a refusal naming unknown field \"spec.extra\", got %v", err)
	}
	wantNotFound(t, c.k, "crontab", "my-cron")
	// --validate=false: the server prunes the field instead.
	wantLines(t, c.k.mustIn(t, manifest, "apply", "--validate=false", "-f", "-"), "crontab.stable.example.com/my-cron created")
	out := c.k.must(t, "get", "crontab", "my-cron", "-o", "json")
	var obj struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Spec       map[string]any `json:"spec"`
	}
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("kubectl get crontab my-cron -o json: %v\n%s", err, out)
	}
	if obj.APIVersion != "stable.example.com/v1" || obj.Kind != "CronTab" {
		t.Errorf("my-cron is %s %s, want stable.example.com/v1 CronTab", obj.APIVersion, obj.Kind)
	}
	if _, ok := obj.Spec["extra"]; ok {
		t.Errorf("spec.extra was stored, want it pruned:\n%s", out)
	}
	nested, _ := obj.Spec["nested"].(map[string]any)
	for _, c := range []struct {
		field string
		got   any
		want  any
	}{
		{"spec.cronSpec", obj.Spec["cronSpec"], "* * * * */5"},
		{"spec.image", obj.Spec["image"], "my-image"},
		{"spec.replicas (default)", obj.Spec["replicas"], float64(1)},
		{"spec.nested.mode (default)", nested["mode"], "fast"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#v, want %#v\n%s", c.field, c.got, c.want, out)
		}
	}
}

func crdInvalidObject(t *testing.T, c crdCase) {
	_, err := c.k.run(t, cronTabYAML("bad-cron", "cronSpec: bogus", "image: my-image", "replicas: 20"), "apply", "-f", "-")
	if err == nil {
		t.Fatalf("kubectl apply of an invalid CronTab succeeded")
	}
	for _, want := range []string{"spec.cronSpec", "replicas must be at most 10"} {
		if !strings.Contains(stderr(err), want) {
			t.Errorf("kubectl apply of an invalid CronTab: the error does not name %q: %v", want, err)
		}
	}
	wantNotFound(t, c.k, "crontab", "bad-cron")

	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "stable.example.com/v1", "kind": "CronTab",
		"metadata": map[string]any{"name": "bad-cron"},
		"spec":     map[string]any{"cronSpec": "bogus", "image": "my-image", "replicas": int64(20)},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.crontabs().Create(ctx, bad, metav1.CreateOptions{})
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("POST of an invalid CronTab: %v, want a *StatusError", err)
	}
	st := se.ErrStatus
	if st.Code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid {
		t.Errorf("POST of an invalid CronTab: %d %s, want 422 Invalid: %s", st.Code, st.Reason, st.Message)
	}
	var causes []metav1.StatusCause
	if st.Details != nil {
		causes = st.Details.Causes
	}
	if !slices.ContainsFunc(causes, func(c metav1.StatusCause) bool { return c.Field == "spec.cronSpec" }) {
		t.Errorf("POST of an invalid CronTab: no cause for spec.cronSpec in %+v", causes)
	}
	if !slices.ContainsFunc(causes, func(c metav1.StatusCause) bool {
		return c.Field == "spec" && strings.Contains(c.Message, "replicas must be at most 10")
	}) {
		t.Errorf("POST of an invalid CronTab: no cause on field spec with the CEL message in %+v", causes)
	}
}

// myCronRow matches my-cron's row of the printer columns.
var myCronRow = regexp.MustCompile(`(?m)^(crontab\.stable\.example\.com/)?my-cron\s+\* \* \* \* \*/5\s+1\s+\S+\s*$`)

func crdGetColumns(t *testing.T, c crdCase) {
	for _, res := range []string{"crontabs", "ct", "crontab.stable.example.com"} {
		t.Run(res, func(t *testing.T) {
			out := c.k.must(t, "get", res)
			header, rows := table(out)
			if want := []string{"NAME", "SPEC", "REPLICAS", "AGE"}; !slices.Equal(header, want) {
				t.Errorf("kubectl get %s: header %q, want %q\n%s", res, header, want, out)
			}
			if len(rows) != 1 || !myCronRow.MatchString(out) {
				t.Errorf("kubectl get %s: want the one row of my-cron with spec \"* * * * */5\" and replicas 1:\n%s", res, out)
			}
		})
	}
	t.Run("all", func(t *testing.T) {
		if got := names(c.k.must(t, "get", "all", "-o", "name")); !slices.Contains(got, "crontab.stable.example.com/my-cron") {
			t.Errorf("kubectl get all -o name = %q, want crontab.stable.example.com/my-cron (category all)", got)
		}
		if out := c.k.must(t, "get", "all"); !myCronRow.MatchString(out) {
			t.Errorf("kubectl get all: no row for my-cron with its columns:\n%s", out)
		}
	})
}

func crdExplain(t *testing.T, c crdCase) {
	for _, tc := range []struct {
		field    string
		patterns []string
	}{
		{"crontab.spec", []string{
			`(?m)^GROUP:\s+stable\.example\.com$`,
			`(?m)^KIND:\s+CronTab$`,
			`(?m)^VERSION:\s+v1$`,
			`(?m)^FIELD:\s+spec <Object>$`,
			`The desired state of the CronTab\.`,
			`(?m)^\s+cronSpec\s+<string>$`,
			`When the job runs, in cron format\.`,
			`(?m)^\s+image\s+<string>$`,
			`(?m)^\s+replicas\s+<integer>$`,
			`(?m)^\s+nested\s+<Object>$`,
		}},
		{"crontab.spec.replicas", []string{
			`(?m)^KIND:\s+CronTab$`,
			`(?m)^FIELD:\s+replicas <integer>$`,
			`How many copies of the job run\.`,
		}},
	} {
		t.Run(tc.field, func(t *testing.T) {
			out := c.k.must(t, "explain", tc.field)
			for _, p := range tc.patterns {
				if !regexp.MustCompile(p).MatchString(out) {
					t.Errorf("kubectl explain %s: no match for %s in:\n%s", tc.field, p, out)
				}
			}
		})
	}
}

func crdSecondVersion(t *testing.T, c crdCase) {
	wantJSONPath(t, c.k, []jsonPathCheck{
		{"crontabs.v1beta1.stable.example.com", "my-cron", "{.apiVersion}", "stable.example.com/v1beta1"},
		{"crontabs.v1.stable.example.com", "my-cron", "{.apiVersion}", "stable.example.com/v1"},
	})
	// A write through v1beta1 is read back through v1.
	c.k.must(t, "label", "crontabs.v1beta1.stable.example.com", "my-cron", "via=v1beta1")
	wantJSONPath(t, c.k, []jsonPathCheck{
		{"crontabs.v1.stable.example.com", "my-cron", "{.metadata.labels.via}/{.spec.image}", "v1beta1/my-image"},
	})
}

func crdStatusSubresource(t *testing.T, c crdCase) {
	gen := func() int {
		t.Helper()
		g, err := strconv.Atoi(c.k.jsonpath(t, "crontab", "my-cron", "{.metadata.generation}"))
		if err != nil {
			t.Fatalf("my-cron's metadata.generation: %v", err)
		}
		return g
	}
	before := gen()
	out := c.k.must(t, "patch", "crontab", "my-cron", "--subresource=status", "--type=merge", "-p", `{"status":{"replicas":3}}`)
	if !strings.Contains(out, "crontab.stable.example.com/my-cron patched") {
		t.Errorf("kubectl patch --subresource=status printed %q", out)
	}
	if got := c.k.jsonpath(t, "crontab", "my-cron", "{.status.replicas}"); got != "3" {
		t.Fatalf("status.replicas after the status patch = %q, want 3", got)
	}
	if g := gen(); g != before {
		t.Errorf("a status change moved metadata.generation from %d to %d", before, g)
	}
	// The main resource ignores status, the status subresource ignores spec.
	c.k.must(t, "patch", "crontab", "my-cron", "--type=merge", "-p", `{"status":{"replicas":7}}`)
	c.k.must(t, "patch", "crontab", "my-cron", "--subresource=status", "--type=merge", "-p", `{"spec":{"image":"sneaky"}}`)
	wantJSONPath(t, c.k, []jsonPathCheck{
		{"crontab", "my-cron", "{.status.replicas}/{.spec.image}", "3/my-image"},
	})
	if g := gen(); g != before {
		t.Errorf("patches that changed nothing moved metadata.generation from %d to %d", before, g)
	}
	c.k.must(t, "patch", "crontab", "my-cron", "--type=merge", "-p", `{"spec":{"image":"my-image:2"}}`)
	if g := gen(); g != before+1 {
		t.Errorf("a spec change: metadata.generation %d, want %d", g, before+1)
	}
}

func crdScaleSubresource(t *testing.T, c crdCase) {
	out := c.k.must(t, "scale", "crontab", "my-cron", "--replicas=4")
	wantLines(t, out, "crontab.stable.example.com/my-cron scaled")
	if got := c.k.jsonpath(t, "crontab", "my-cron", "{.spec.replicas}"); got != "4" {
		t.Errorf("spec.replicas after kubectl scale --replicas=4 = %q", got)
	}
	raw := c.k.must(t, "get", "--raw", "/apis/stable.example.com/v1/namespaces/"+c.k.ns+"/crontabs/my-cron/scale")
	var sc struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Replicas int `json:"replicas"`
		} `json:"spec"`
		Status struct {
			Replicas int `json:"replicas"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(raw), &sc); err != nil {
		t.Fatalf("GET .../crontabs/my-cron/scale: %v\n%s", err, raw)
	}
	if sc.APIVersion != "autoscaling/v1" || sc.Kind != "Scale" || sc.Spec.Replicas != 4 || sc.Status.Replicas != 3 {
		t.Errorf("GET .../crontabs/my-cron/scale = %s, want an autoscaling/v1 Scale with spec.replicas 4, status.replicas 3", raw)
	}
	// Through /scale the CEL rule still holds.
	if _, err := c.k.run(t, "", "scale", "crontab", "my-cron", "--replicas=11"); err == nil || !strings.Contains(stderr(err), "replicas must be at most 10") {
		t.Errorf("kubectl scale --replicas=11: want a refusal with the CEL message, got %v", err)
	}
	if got := c.k.jsonpath(t, "crontab", "my-cron", "{.spec.replicas}"); got != "4" {
		t.Errorf("spec.replicas after a refused scale = %q, want 4", got)
	}
}

func crdServerSideApply(t *testing.T, c crdCase) {
	alice := cronTabYAML("ssa-cron", `cronSpec: "0 * * * *"`, "image: alice-image")
	bob := cronTabYAML("ssa-cron", "image: bob-image")
	wantLines(t, c.k.mustIn(t, alice, "apply", "--server-side", "--field-manager=alice", "-f", "-"),
		"crontab.stable.example.com/ssa-cron serverside-applied")
	_, err := c.k.run(t, bob, "apply", "--server-side", "--field-manager=bob", "-f", "-")
	if e := stderr(err); err == nil || !strings.Contains(e, `conflict with "alice"`) || !strings.Contains(e, ".spec.image") {
		t.Fatalf("bob's apply of spec.image: want a conflict with \"alice\" on .spec.image, got %v", err)
	}
	wantLines(t, c.k.mustIn(t, bob, "apply", "--server-side", "--field-manager=bob", "--force-conflicts", "-f", "-"),
		"crontab.stable.example.com/ssa-cron serverside-applied")
	wantJSONPath(t, c.k, []jsonPathCheck{
		{"crontab", "ssa-cron", "{.spec.image}|{.spec.cronSpec}|{.spec.replicas}", "bob-image|0 * * * *|1"},
	})
	out := c.k.must(t, "get", "crontab", "ssa-cron", "-o", "json", "--show-managed-fields")
	var obj struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("kubectl get crontab ssa-cron -o json: %v\n%s", err, out)
	}
	owns := map[string]string{}
	for _, e := range obj.Metadata.ManagedFields {
		if e.Operation == metav1.ManagedFieldsOperationApply && e.FieldsV1 != nil {
			owns[e.Manager] = string(e.FieldsV1.Raw)
		}
	}
	if _, ok := owns["alice"]; !ok {
		t.Fatalf("managedFields lack alice's apply: %+v", obj.Metadata.ManagedFields)
	}
	if _, ok := owns["bob"]; !ok {
		t.Fatalf("managedFields lack bob's apply: %+v", obj.Metadata.ManagedFields)
	}
	if !strings.Contains(owns["alice"], `"f:cronSpec"`) || strings.Contains(owns["alice"], `"f:image"`) {
		t.Errorf("after the forced apply alice should own spec.cronSpec and not spec.image: %s", owns["alice"])
	}
	if !strings.Contains(owns["bob"], `"f:image"`) {
		t.Errorf("after the forced apply bob should own spec.image: %s", owns["bob"])
	}
}

func crdDynamicInformer(t *testing.T, c crdCase) {
	const name = "informed-cron"
	events := make(chan string, 64)
	note := func(kind string, obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if u, ok := obj.(*unstructured.Unstructured); ok && u.GetName() == name {
			image, _, _ := unstructured.NestedString(u.Object, "spec", "image")
			select {
			case events <- kind + " " + image:
			default:
			}
		}
	}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dyn, 0, c.k.ns, nil)
	inf := f.ForResource(crontabsGVR).Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { note("add", obj) },
		UpdateFunc: func(_, obj any) { note("update", obj) },
		DeleteFunc: func(obj any) { note("delete", obj) },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	f.Start(ctx.Done())
	defer func() {
		cancel()
		f.Shutdown() // waits for the informer, which stops with ctx
	}()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the dynamic informer of crontabs did not sync")
	}
	if got := len(inf.GetStore().List()); got < 2 {
		t.Errorf("the synced informer holds %d CronTabs, want my-cron and ssa-cron at least", got)
	}
	wait := func(want string) {
		t.Helper()
		select {
		case got := <-events:
			if got != want {
				t.Fatalf("informer event %q, want %q", got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the informer saw no %q within 30s", want)
		}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "stable.example.com/v1", "kind": "CronTab",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"cronSpec": "*/5 * * * *", "image": "v1"},
	}}
	created, err := c.crontabs().Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	wait("add v1")
	if err := unstructured.SetNestedField(created.Object, "v2", "spec", "image"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.crontabs().Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating %s: %v", name, err)
	}
	wait("update v2")
	if err := c.crontabs().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting %s: %v", name, err)
	}
	wait("delete v2")
}

func crdTap(t *testing.T, c crdCase) {
	url := c.k.s.BusURL(t)
	t.Setenv("KUBECONFIG", c.k.s.Kubeconfig) // the tap's bus credentials: the admin's
	var recs []map[string]any
	seen := map[string]bool{}
	harness.Eventually(t, 30*time.Second, func() error {
		recs = tapJSON(t, url, "--resource", "crontabs.stable.example.com", "-n", c.k.ns)
		seen = map[string]bool{}
		for _, r := range recs {
			seen[fmt.Sprint(r["type"], " ", r["name"])] = true
		}
		for _, want := range []string{"ADDED my-cron", "MODIFIED my-cron", "ADDED ssa-cron", "ADDED informed-cron", "MODIFIED informed-cron", "DELETED informed-cron"} {
			if !seen[want] {
				return fmt.Errorf("kubebus tap --resource crontabs.stable.example.com -n %s printed no %s event among %d: %v", c.k.ns, want, len(recs), seen)
			}
		}
		return nil
	})
	for _, r := range recs {
		if r["group"] != "stable.example.com" || r["resource"] != "crontabs" || r["namespace"] != c.k.ns {
			t.Errorf("tap record %v %v: group %v resource %v namespace %v, want stable.example.com crontabs %s", r["type"], r["name"], r["group"], r["resource"], r["namespace"], c.k.ns)
		}
	}
}

func crdNamesConflict(t *testing.T, c crdCase) {
	manifest := smallCRDYAML("ct", "ctthing", "CtThing", "type: object\nproperties:\n  spec:\n    type: object\n    properties:\n      size:\n        type: string\n")
	wantLines(t, c.k.mustIn(t, manifest, "apply", "-f", "-"), "customresourcedefinition.apiextensions.k8s.io/"+conflictCRD+" created")
	harness.Eventually(t, 30*time.Second, func() error {
		if got := c.condition(t, conflictCRD, "NamesAccepted"); got != "False" {
			return fmt.Errorf("%s: NamesAccepted = %q, want False (its plural is crontabs' short name)", conflictCRD, got)
		}
		return nil
	})
	wantJSONPath(t, c.k, []jsonPathCheck{
		{"crd", conflictCRD, `{.status.conditions[?(@.type=="NamesAccepted")].reason}`, "PluralConflict"},
	})
	if got := c.condition(t, conflictCRD, "Established"); got == "True" {
		t.Errorf("%s with a name conflict is Established", conflictCRD)
	}
	if code := statusOf(t, c.hc, http.MethodGet, c.listPath("ct")); code != http.StatusNotFound {
		t.Errorf("GET %s of a CRD whose names were not accepted: %d, want 404", c.listPath("ct"), code)
	}
	if _, rows := table(c.k.must(t, "api-resources", "--api-group=stable.example.com")); hasRow(rows, "ct") {
		t.Errorf("kubectl api-resources lists ct, whose names were not accepted: %q", rows)
	}
	// crontabs keeps its names and stays served.
	if got := c.condition(t, crontabsCRD, "NamesAccepted"); got != "True" {
		t.Errorf("%s: NamesAccepted = %q after the conflicting CRD, want True", crontabsCRD, got)
	}
	if out := c.k.must(t, "get", "ct"); !regexp.MustCompile(`(?m)^my-cron\s`).MatchString(out) {
		t.Errorf("kubectl get ct after the conflicting CRD: no my-cron row:\n%s", out)
	}
	c.k.must(t, "delete", "crd", conflictCRD, "--timeout=60s")
}

// crdRefusesPreserveFalse: upstream refuses an explicit
// x-kubernetes-preserve-unknown-fields: false ("must be true or
// undefined"); pruning is what a structural schema does without it.
func crdRefusesPreserveFalse(t *testing.T, c crdCase) {
	manifest := smallCRDYAML("gadgets", "gadget", "Gadget", "type: object\nproperties:\n  status:\n    type: object\n    x-kubernetes-preserve-unknown-fields: false\n    properties:\n      replicas:\n        type: integer\n")
	_, err := c.k.run(t, manifest, "apply", "-f", "-")
	if err == nil || !strings.Contains(stderr(err), "must be true or undefined") {
		t.Fatalf("a CRD with x-kubernetes-preserve-unknown-fields: false: want it refused with \"must be true or undefined\", got %v", err)
	}
	wantNotFound(t, c.k, "crd", refusedCRD)
}

func crdDeleteRemovesObjects(t *testing.T, c crdCase) {
	out := c.k.must(t, "delete", "crd", crontabsCRD, "--timeout=60s")
	if want := `customresourcedefinition.apiextensions.k8s.io "` + crontabsCRD + `" deleted`; !strings.Contains(out, want) {
		t.Errorf("kubectl delete crd printed %q, want %q", out, want)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		if code := statusOf(t, c.hc, http.MethodGet, c.listPath("crontabs")); code != http.StatusNotFound {
			return fmt.Errorf("GET %s after the CRD was deleted: %d, want 404", c.listPath("crontabs"), code)
		}
		return nil
	})
	wantNotFound(t, c.k, "crd", crontabsCRD)
	// The same CRD again: none of the old CronTabs come back.
	c.applyCRD(t)
	if out := c.k.must(t, "get", "crontabs", "-A"); strings.TrimSpace(out) != "" {
		t.Errorf("kubectl get crontabs -A after the CRD was deleted and made again:\n%s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := c.dyn.Resource(crontabsGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing crontabs in all namespaces: %v", err)
	}
	if len(list.Items) != 0 {
		var names []string
		for _, it := range list.Items {
			names = append(names, it.GetNamespace()+"/"+it.GetName())
		}
		t.Errorf("after the CRD was deleted and made again, crontabs are %q, want none", names)
	}
}
