package bus

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	segjson "github.com/segmentio/encoding/json"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/internal/storedobj"
)

// A stored value (compact encoding/json output) is carried byte for
// byte, as compacting it would have carried it; a value that is not JSON
// is refused; one with white space still makes an event Decode reads.
func TestEncode(t *testing.T) {
	obj := []byte(`{"kind":"Pod","metadata":{"name":"web","annotations":{"a":"\u003cb\u003e \u0026 é"}},"spec":{"containers":[{"name":"c","args":["x",""]}]},"n":[1,2.5,-3e-7,null,true]}`)
	ev := &Event{Type: Modified, Revision: 9, PrevRevision: 8, Resource: "pods", Namespace: "default", Name: "web", Object: obj, PreviousRevision: 7}
	got, err := Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	want, err := segjson.Marshal(ev) // validates and compacts the raw value
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Encode:\n%s\ncompacting:\n%s", got, want)
	}
	if !bytes.Contains(got, obj) {
		t.Fatalf("the object is not in the envelope as stored:\n%s", got)
	}

	for _, bad := range []string{`{"a":`, `not json`, `{"a":1}x`, "\x00"} {
		if _, err := Encode(&Event{Type: Added, Revision: 1, Resource: "pods", Name: "x", Object: []byte(bad)}); err == nil {
			t.Errorf("object %q accepted", bad)
		}
		if _, err := Encode(&Event{Type: Modified, Revision: 2, Resource: "pods", Name: "x", Object: []byte(`{}`), Previous: []byte(bad)}); err == nil {
			t.Errorf("previous state %q accepted", bad)
		}
	}

	// A raw <, > or & (encoding/json writes them escaped, so a stored
	// value has none) is carried as it is, by EncodeLean too.
	raw := []byte(`{"a":"<b>&"}`)
	for _, enc := range []func(*Event) ([]byte, error){Encode, EncodeLean} {
		data, err := enc(&Event{Type: Modified, Revision: 4, Resource: "pods", Name: "x", Object: raw, Previous: []byte(`{}`)})
		if err != nil || !bytes.Contains(data, raw) || !json.Valid(data) {
			t.Fatalf("%s, %v", data, err)
		}
		if back, err := Decode(data); err != nil || !bytes.Equal(back.Object, raw) {
			t.Fatalf("Decode: %v, %v", back, err)
		}
	}
	if data, _ := EncodeLean(&Event{Type: Modified, Revision: 4, Resource: "pods", Name: "x", Object: raw, Previous: []byte(`{}`)}); bytes.Contains(data, []byte(`"previous"`)) {
		t.Fatalf("EncodeLean kept the previous state: %s", data)
	}

	spaced := []byte(" {\n \"metadata\" : {\"name\": \"x\"} } ")
	data, err := Encode(&Event{Type: Added, Revision: 3, Resource: "pods", Name: "x", Object: spaced})
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatalf("Decode: %v\n%s", err, data)
	}
	var a, b any
	if err := json.Unmarshal(back.Object, &a); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(spaced, &b)
	if !strings.Contains(string(data), `"name": "x"`) || a.(map[string]any)["metadata"].(map[string]any)["name"] != b.(map[string]any)["metadata"].(map[string]any)["name"] {
		t.Fatalf("the spaced object came back as %s", back.Object)
	}
}

// BenchmarkEncode: an update's event of a 2.3 kB pod, as the publisher
// makes one for every change.
func BenchmarkEncode(b *testing.B) {
	ev := benchEvent()
	b.SetBytes(int64(len(ev.Object)))
	for b.Loop() {
		if _, err := Encode(ev); err != nil {
			b.Fatal(err)
		}
	}
}

func benchEvent() *Event {
	obj := []byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"bench-000001","namespace":"creates-0","uid":"0b7c1f3e-1c7e-4a53-9a77-7f2d1d0f1a22","creationTimestamp":"2026-11-29T18:00:00Z","labels":{"app":"bench","pod-template-hash":"5d8f9c7b6"},"managedFields":[{"manager":"bench.test","operation":"Update","apiVersion":"v1","time":"2026-11-29T18:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}]},"spec":{"volumes":[{"name":"kube-api-access-abcde","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}},{"downwardAPI":{"items":[{"path":"namespace","fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"}}]}}],"defaultMode":420}}],"containers":[{"name":"app","image":"registry.k8s.io/pause:3.10","ports":[{"containerPort":8080,"protocol":"TCP"}],"resources":{"requests":{"cpu":"10m","memory":"16Mi"}},"volumeMounts":[{"name":"kube-api-access-abcde","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","nodeName":"hollow-1","securityContext":{},"schedulerName":"default-scheduler","priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-29T18:00:01Z"}],"podIP":"10.0.0.1","startTime":"2026-11-29T18:00:01Z","qosClass":"Burstable"}}`)
	return &Event{Type: Modified, Revision: 9, PrevRevision: 8, Resource: "pods", Namespace: "creates-0", Name: "bench-000001", Object: obj, PreviousRevision: 7}
}

// An object stored in protobuf travels in objectProto (base64 in the
// JSON envelope) and comes back byte for byte; SetStored picks the field
// by the bytes, and an event may not carry a protobuf object that lacks
// the envelope's prefix, or both forms at once.
func TestProtobufObject(t *testing.T) {
	pb, err := storedobj.EncodeProtobuf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}, corev1.SchemeGroupVersion.WithKind("Pod"))
	if err != nil {
		t.Fatal(err)
	}
	ev := &Event{Type: Added, Revision: 5, Resource: "pods", Namespace: "ns", Name: "p"}
	ev.SetStored(pb)
	if len(ev.Object) != 0 || !bytes.Equal(ev.Stored(), pb) {
		t.Fatalf("SetStored(protobuf): Object %q, ObjectProto %q", ev.Object, ev.ObjectProto)
	}
	data, err := Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.ObjectProto, pb) || len(back.Object) != 0 || !bytes.Equal(back.Stored(), pb) {
		t.Errorf("decoded object %q / %q, want the protobuf bytes", back.Object, back.ObjectProto)
	}
	ev.SetStored([]byte(`{"kind":"Pod"}`))
	if len(ev.ObjectProto) != 0 || string(ev.Stored()) != `{"kind":"Pod"}` {
		t.Errorf("SetStored(JSON): Object %q, ObjectProto %q", ev.Object, ev.ObjectProto)
	}
	for name, bad := range map[string]*Event{
		"no prefix": {Type: Added, Revision: 5, Resource: "pods", Name: "p", ObjectProto: []byte{1, 2, 3}},
		"both":      {Type: Added, Revision: 5, Resource: "pods", Name: "p", ObjectProto: pb, Object: []byte(`{}`)},
	} {
		if _, err := Encode(bad); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
}
