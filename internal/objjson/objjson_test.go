package objjson_test

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/internal/objjson"
)

// eachRandomObject calls check with perKind random objects of every
// built-in kind; check reports whether the object could be compared (a
// random raw extension may be no JSON). Each kind needs half its objects
// compared.
func eachRandomObject(t *testing.T, seed int64, check func(t *testing.T, res *resource.Resource, obj runtime.Object) bool) {
	const perKind = 60
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), scheme.Codecs).NilChance(.2).NumElements(1, 3)
	for _, res := range resource.Builtin() {
		if res.New == nil {
			continue
		}
		t.Run(res.Plural, func(t *testing.T) {
			compared := 0
			for range perKind {
				obj := res.New()
				f.Fill(obj)
				if check(t, res, obj) {
					compared++
				}
			}
			if compared < perKind/2 {
				t.Errorf("only %d of %d random objects could be compared", compared, perKind)
			}
		})
	}
}

// Objects of every built-in kind, filled at random and encoded by
// encoding/json (as the API server stores them and the publisher sends
// them), decode to the same Go values as encoding/json gives.
func TestSameAsEncodingJSON(t *testing.T) {
	eachRandomObject(t, 1, func(t *testing.T, res *resource.Resource, obj runtime.Object) bool {
		data, err := json.Marshal(obj)
		if err != nil {
			return false
		}
		want, got := res.New(), res.New()
		if err := json.Unmarshal(data, want); err != nil {
			return false // a value encoding/json cannot read back either
		}
		if err := objjson.Unmarshal(data, got); err != nil {
			t.Fatalf("decoding %s: %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded differently from encoding/json (-want +got):\n%s\nfrom %s", cmp.Diff(want, got), data)
		}
		return true
	})
}

// An unstructured object (a custom resource) decodes the same, numbers
// included.
func TestUnstructuredSameAsEncodingJSON(t *testing.T) {
	data := []byte(`{"apiVersion":"x.io/v1","kind":"Thing","metadata":{"name":"a","labels":{"k":"v"}},"spec":{"n":3,"f":1.5,"big":9007199254740993,"list":[1,"two",null,true],"nested":{"e":{}}}}`)
	want, got := &unstructured.Unstructured{}, &unstructured.Unstructured{}
	if err := json.Unmarshal(data, want); err != nil {
		t.Fatal(err)
	}
	if err := objjson.Unmarshal(data, got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded differently (-want +got):\n%s", cmp.Diff(want, got))
	}
}

// Malformed input is an error, as with encoding/json.
func TestMalformed(t *testing.T) {
	for _, in := range []string{``, `{`, `{"metadata":`, `{"metadata":{"name":5}}`, `[1,2]`, `{"spec":{"containers":{}}}`} {
		var want, got struct {
			Metadata struct{ Name string } `json:"metadata"`
			Spec     struct {
				Containers []struct{} `json:"containers"`
			} `json:"spec"`
		}
		stdErr := json.Unmarshal([]byte(in), &want)
		err := objjson.Unmarshal([]byte(in), &got)
		if (stdErr == nil) != (err == nil) {
			t.Errorf("%q: error %v, encoding/json's %v", in, err, stdErr)
		}
	}
}
