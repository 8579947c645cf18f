package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// fuzzResources are the built-in resources the fuzz targets decode into.
var fuzzResources = resource.Builtin()

// fuzzClientError fails t unless err is a Kubernetes Status of a 4xx code: bad
// input must never be a server error.
func fuzzClientError(t *testing.T, what string, err error) {
	t.Helper()
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		t.Fatalf("%s: %T %v is not a Status", what, err, err)
	}
	if c := se.Status().Code; c < 400 || c > 499 {
		t.Fatalf("%s: code %d for bad input: %v", what, c, err)
	}
}

const fuzzPodJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default","labels":{"app":"web"}},` +
	`"spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80}],"resources":{"limits":{"cpu":"500m"}}}]}}`

// FuzzDecodeRequest: a write's body, of any content type, decodes or is a
// 4xx Status. A body accepted with warnings is refused by Strict; one
// accepted without is accepted by Strict too; and the decoded object's
// JSON decodes strictly to an object of the same JSON.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(uint8(0), "application/json", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}`))
	f.Add(uint8(0), "application/yaml", []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  labels: {x: y}\n"))
	f.Add(uint8(3), "application/json; charset=utf-8", []byte(fuzzPodJSON))
	f.Add(uint8(3), "", []byte(`{"metadata":{"name":"a","name":"b"},"bogus":1}`))
	f.Add(uint8(5), "text/yaml", []byte("a: &x [*x]\n"))
	f.Add(uint8(7), "application/vnd.kubernetes.protobuf", []byte("k8s\x00\x0a\x04\x0a\x02v1"))
	f.Add(uint8(9), "application/xml", []byte(`<x/>`))
	f.Add(uint8(11), "application/json", []byte(`  `))
	f.Fuzz(func(t *testing.T, which uint8, contentType string, body []byte) {
		res := fuzzResources[int(which)%len(fuzzResources)]
		r := httptest.NewRequest("POST", "/", nil)
		r.Header.Set("Content-Type", contentType)
		obj := res.New()
		warnings, err := decodeRequest(r, body, obj, metav1.FieldValidationWarn)
		if err != nil {
			fuzzClientError(t, "decodeRequest", err)
			return
		}
		_, strictErr := decodeRequest(r, body, res.New(), metav1.FieldValidationStrict)
		switch {
		case len(warnings) > 0 && strictErr == nil:
			t.Fatalf("Warn warned %q but Strict accepted the body", warnings)
		case len(warnings) == 0 && strictErr != nil:
			t.Fatalf("Warn accepted the body silently but Strict refused it: %v", strictErr)
		case strictErr != nil:
			fuzzClientError(t, "decodeRequest Strict", strictErr)
		}
		once, err := json.Marshal(obj)
		if err != nil {
			t.Fatalf("encoding a decoded %s: %v", res.GVK.Kind, err)
		}
		again := res.New()
		if _, err := decodeJSON(once, again, metav1.FieldValidationStrict); err != nil {
			t.Fatalf("the JSON of a decoded %s does not decode strictly: %v\n%s", res.GVK.Kind, err, once)
		}
		twice, err := json.Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once, twice) {
			// One round may normalise a string that was not UTF-8 (a
			// protobuf body can carry one: encoding/json writes U+FFFD
			// escaped, then as itself); the next must change nothing.
			third := res.New()
			if _, err := decodeJSON(twice, third, metav1.FieldValidationStrict); err != nil {
				t.Fatalf("the JSON of a re-decoded %s does not decode strictly: %v\n%s", res.GVK.Kind, err, twice)
			}
			thrice, err := json.Marshal(third)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(twice, thrice) {
				t.Fatalf("%s does not round-trip:\n%s\n%s\n%s", res.GVK.Kind, once, twice, thrice)
			}
		}
	})
}

var fuzzPatchTypes = []types.PatchType{types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType}

// FuzzApplyPatch: a patch of each type applies to an object's JSON or is a
// 4xx Status; what it gives is valid JSON; a merge patch applied twice
// gives what it gave once.
func FuzzApplyPatch(f *testing.F) {
	f.Add(uint8(3), uint8(0), []byte(fuzzPodJSON), []byte(`[{"op":"replace","path":"/spec/containers/0/image","value":"nginx:2"},{"op":"add","path":"/metadata/labels/x","value":"y"}]`))
	f.Add(uint8(3), uint8(0), []byte(fuzzPodJSON), []byte(`[{"op":"copy","from":"/spec","path":"/spec/x"},{"op":"test","path":"/metadata/name","value":"web"},{"op":"remove","path":"/metadata/labels"}]`))
	f.Add(uint8(3), uint8(1), []byte(fuzzPodJSON), []byte(`{"metadata":{"labels":{"app":null,"b":"c"}},"spec":{"containers":[]}}`))
	f.Add(uint8(3), uint8(2), []byte(fuzzPodJSON), []byte(`{"spec":{"containers":[{"name":"c","image":"nginx:3"},{"name":"d","image":"busybox"}]}}`))
	f.Add(uint8(3), uint8(2), []byte(fuzzPodJSON), []byte(`{"spec":{"$setElementOrder/containers":[{"name":"c"}],"containers":[{"$patch":"delete","name":"c"}]}}`))
	f.Add(uint8(3), uint8(2), []byte(fuzzPodJSON), []byte(`{"metadata":{"labels":{"$patch":"replace","z":"1"}},"$retainKeys":["spec"]}`))
	f.Add(uint8(0), uint8(1), []byte(`{"metadata":{"name":"a"}}`), []byte(`null`))
	f.Add(uint8(0), uint8(0), []byte(`{"metadata":{"name":"a"}}`), []byte(`[{"op":"move","from":"/metadata","path":"/metadata/x"}]`))
	f.Fuzz(func(t *testing.T, which, typ uint8, current, patch []byte) {
		var cur map[string]any
		if json.Unmarshal(current, &cur) != nil || cur == nil {
			return // stored objects are JSON objects
		}
		res := fuzzResources[int(which)%len(fuzzResources)]
		pr := patchRequest{typ: fuzzPatchTypes[int(typ)%len(fuzzPatchTypes)], body: patch, directive: metav1.FieldValidationStrict}
		out, err := applyPatch(pr, current, res.New())
		if err != nil {
			fuzzClientError(t, string(pr.typ), err)
			return
		}
		if !json.Valid(out) {
			t.Fatalf("%s gave invalid JSON: %q", pr.typ, out)
		}
		if pr.typ != types.MergePatchType {
			return
		}
		twice, err := applyPatch(pr, out, res.New())
		if err != nil {
			t.Fatalf("a merge patch that applied once fails on its result: %v", err)
		}
		var a, b any
		if err := json.Unmarshal(out, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(twice, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("a merge patch is not idempotent:\nonce  %s\ntwice %s", out, twice)
		}
	})
}
