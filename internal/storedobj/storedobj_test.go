package storedobj

import (
	"bytes"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

var podGVK = corev1.SchemeGroupVersion.WithKind("Pod")

func testPod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", UID: "u-1",
			Labels: map[string]string{"app": "web", "tier": "front"}, CreationTimestamp: metav1.Unix(1700000000, 0)},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7"},
	}
}

func TestProtobufRoundTrip(t *testing.T) {
	in := testPod()
	data, err := EncodeProtobuf(in, podGVK)
	if err != nil {
		t.Fatal(err)
	}
	if !IsProtobuf(data) || !Valid(data) {
		t.Fatalf("encoded pod does not read as a protobuf value: %q", data[:8])
	}
	out := &corev1.Pod{}
	if err := Decode(data, out); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(in, out) {
		t.Errorf("round trip changed the pod:\n in: %+v\nout: %+v", in, out)
	}
	if gvk, err := Kind(data); err != nil || gvk != podGVK {
		t.Errorf("Kind = %v, %v; want %v", gvk, err, podGVK)
	}
	again, _ := EncodeProtobuf(out, podGVK)
	if !bytes.Equal(again, data) {
		t.Error("encoding the same pod twice gave different bytes (the API server compares them to skip no-op writes)")
	}
}

// Values written by upstream's protobuf serializer (what kube-apiserver
// keeps in etcd) and by ours read the same either way.
func TestSameEnvelopeAsUpstream(t *testing.T) {
	pb := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	var buf bytes.Buffer
	if err := pb.Encode(testPod(), &buf); err != nil {
		t.Fatal(err)
	}
	ours, err := EncodeProtobuf(testPod(), podGVK)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), ours) {
		t.Errorf("our envelope differs from upstream's:\nours:     %x\nupstream: %x", ours, buf.Bytes())
	}
	obj, _, err := pb.Decode(ours, nil, nil)
	if err != nil {
		t.Fatalf("upstream cannot decode our value: %v", err)
	}
	if p, ok := obj.(*corev1.Pod); !ok || p.Spec.NodeName != "node-a" {
		t.Errorf("upstream decoded %T %+v", obj, obj)
	}
}

func TestDecodeReadsJSONToo(t *testing.T) {
	data, _ := json.Marshal(testPod())
	out := &corev1.Pod{}
	if err := Decode(data, out); err != nil {
		t.Fatal(err)
	}
	if out.Name != "web-1" || out.Spec.NodeName != "node-a" || out.Kind != "Pod" {
		t.Errorf("decoded %+v", out)
	}
	if back, err := ToJSON(data); err != nil || !bytes.Equal(back, data) {
		t.Errorf("ToJSON of JSON changed it: %s, %v", back, err)
	}
}

func TestToJSONIsTheJSONOfTheObject(t *testing.T) {
	data, _ := EncodeProtobuf(testPod(), podGVK)
	got, err := ToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(testPod())
	if !bytes.Equal(got, want) {
		t.Errorf("ToJSON:\n got %s\nwant %s", got, want)
	}
}

func TestPodNodeName(t *testing.T) {
	p := testPod()
	data, _ := EncodeProtobuf(p, podGVK)
	if n, ok := PodNodeName(data); !ok || n != "node-a" {
		t.Errorf("PodNodeName = %q, %v; want node-a", n, ok)
	}
	p.Spec.NodeName = ""
	data, _ = EncodeProtobuf(p, podGVK)
	if n, ok := PodNodeName(data); !ok || n != "" {
		t.Errorf("unbound pod: PodNodeName = %q, %v", n, ok)
	}
	if _, ok := PodNodeName(append(append([]byte{}, Magic...), 0x12, 0x7f, 1)); ok {
		t.Error("a truncated envelope parsed")
	}
}

func TestMalformedValuesAreErrors(t *testing.T) {
	good, _ := EncodeProtobuf(testPod(), podGVK)
	noKind, _ := (&runtime.Unknown{Raw: []byte{0x0a, 0x00}}).Marshal()
	for name, data := range map[string][]byte{
		"truncated":   good[:len(good)-5],
		"bad tag":     append(append([]byte{}, Magic...), 0xff, 0xff, 0xff),
		"no kind":     append(append([]byte{}, Magic...), noKind...),
		"only prefix": Magic,
	} {
		if err := Decode(data, &corev1.Pod{}); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
		if Valid(data) && name != "truncated" {
			t.Errorf("%s: Valid", name)
		}
		if _, err := ToJSON(data); err == nil {
			t.Errorf("%s: ToJSON without an error", name)
		}
	}
}

// Informers that keep only metadata (the garbage collector's) decode a
// stored pod into PartialObjectMetadata: protobuf field 1 is the metadata
// in both, and the rest is skipped.
func TestPartialMetadataReadsAProtobufPod(t *testing.T) {
	data, _ := EncodeProtobuf(testPod(), podGVK)
	m := &metav1.PartialObjectMetadata{}
	if err := Decode(data, m); err != nil {
		t.Fatal(err)
	}
	if m.Name != "web-1" || m.Namespace != "shop" || m.UID != "u-1" || m.Labels["app"] != "web" || m.Kind != "Pod" || m.APIVersion != "v1" {
		t.Errorf("decoded %+v", m)
	}
}
