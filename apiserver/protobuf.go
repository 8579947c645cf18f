package apiserver

import (
	"encoding/binary"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubebus/kubebus/internal/storedobj"
)

// Kubernetes' protobuf encoding: the magic prefix, then a runtime.Unknown
// whose Raw is the object's own protobuf bytes. Watch streams carry
// length-prefixed metav1.WatchEvent frames (no prefix) whose object is such
// an envelope. Built-in types marshal themselves (generated code in
// k8s.io/api); only responses are encoded here, requests in codec.go.

// encodeProtobuf returns obj in the protobuf envelope, or an error when the
// type has no protobuf form (the caller then answers in JSON).
func encodeProtobuf(obj runtime.Object) ([]byte, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Version == "" || gvk.Kind == "" {
		// Without apiVersion and kind the envelope cannot be decoded (/api's
		// APIVersions has no apiVersion); the caller answers in JSON.
		return nil, fmt.Errorf("%T has no apiVersion and kind for a protobuf envelope", obj)
	}
	return storedobj.EncodeProtobuf(obj, gvk)
}

// protobufWatchFrame frames one watch event for a protobuf watch stream.
func protobufWatchFrame(typ watch.EventType, envelope []byte) ([]byte, error) {
	ev := metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: envelope}}
	body, err := ev.Marshal()
	if err != nil {
		return nil, err
	}
	frame := make([]byte, 4, 4+len(body))
	binary.BigEndian.PutUint32(frame, uint32(len(body)))
	return append(frame, body...), nil
}
