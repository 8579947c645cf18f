package publish

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/internal/storedobj"
)

var nodeNameCases = map[string]string{
	"bound":              `{"kind":"Pod","metadata":{"name":"p","annotations":{"spec":"{\"nodeName\":\"fake\"}"}},"spec":{"containers":[{"name":"c","args":["}","{"]}],"nodeName":"node-1"},"status":{}}`,
	"unbound":            `{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}]},"status":{"nodeName":"x"}}`,
	"spaces":             " { \"spec\" : { \"nodeName\" : \"n 2\" } } ",
	"nested decoy":       `{"spec":{"affinity":{"nodeName":"decoy"},"nodeName":"real"}}`,
	"no spec":            `{"metadata":{"name":"p"}}`,
	"empty":              `{}`,
	"escaped value":      `{"spec":{"nodeName":"a\u002db"}}`,
	"escaped key":        `{"sp\u0065c":{"nodeName":"n"}}`,
	"null spec":          `{"spec":null}`,
	"numbers and bools":  `{"a":1.5e3,"b":true,"c":null,"spec":{"x":[1,2,{"y":"]"}],"nodeName":"n3"}}`,
	"string with quotes": `{"metadata":{"name":"a\"b"},"spec":{"nodeName":"q"}}`,
	"malformed":          `{"spec":{"nodeName":"n"`,
	"not an object":      `[1,2]`,
}

func TestPodNodeMatchesDecoding(t *testing.T) {
	t.Parallel()
	for name, in := range nodeNameCases {
		t.Run(name, func(t *testing.T) {
			if got, want := podNode([]byte(in)), decodeNodeName([]byte(in)); got != want {
				t.Errorf("podNode(%s) = %q, decoding says %q", in, got, want)
			}
		})
	}
	if got := podNode([]byte(nodeNameCases["bound"])); got != "node-1" {
		t.Errorf("bound pod: %q, want node-1", got)
	}
}

func FuzzPodNode(f *testing.F) {
	for _, in := range nodeNameCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		if got, want := podNode(data), decodeNodeName(data); got != want {
			t.Errorf("podNode(%q) = %q, decoding says %q", data, got, want)
		}
	})
}

// A pod stored in protobuf is routed by the node its spec names, with
// affinity rules and a status that name other nodes around it.
func TestPodNodeOfProtobufPods(t *testing.T) {
	t.Parallel()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{"spec": "nodeName"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c"}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: "In", Values: []string{"decoy"}}}}}}}}},
		Status: corev1.PodStatus{NominatedNodeName: "other"}}
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	data, err := storedobj.EncodeProtobuf(p, gvk)
	if err != nil {
		t.Fatal(err)
	}
	if got := podNode(data); got != "node-1" {
		t.Errorf("bound pod: podNode = %q, want node-1", got)
	}
	p.Spec.NodeName = ""
	data, _ = storedobj.EncodeProtobuf(p, gvk)
	if got := podNode(data); got != "" {
		t.Errorf("unbound pod: podNode = %q, want none", got)
	}
	if got := podNode(data[:len(data)/2]); got != "" {
		t.Errorf("truncated pod: podNode = %q, want none", got)
	}
}
