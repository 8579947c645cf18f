// Package storedobj reads and writes the bytes kubebus keeps of an API
// object: the value stored in etcd, which the bus republishes as it is.
// Most kinds are stored as JSON. Kinds whose values are large and written
// often (pods) are stored in Kubernetes' protobuf envelope, as upstream
// stores every built-in kind: the magic prefix "k8s\x00", then a
// runtime.Unknown holding apiVersion, kind and the object's own protobuf
// bytes. A reader tells the two apart by the prefix (JSON starts with
// "{"), so values written before a kind moved to protobuf still decode.
package storedobj

import (
	"bytes"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubebus/kubebus/internal/objjson"
)

// Magic starts every value in the protobuf envelope.
var Magic = []byte("k8s\x00")

// IsProtobuf reports whether data is in the protobuf envelope.
func IsProtobuf(data []byte) bool { return bytes.HasPrefix(data, Magic) }

type protoMarshaler interface {
	Marshal() ([]byte, error)
}

type protoUnmarshaler interface {
	Unmarshal([]byte) error
}

// EncodeProtobuf returns obj, of kind gvk, in the protobuf envelope. It
// fails for a type without generated protobuf code.
func EncodeProtobuf(obj runtime.Object, gvk schema.GroupVersionKind) ([]byte, error) {
	pm, ok := obj.(protoMarshaler)
	if !ok {
		return nil, fmt.Errorf("storedobj: %T has no protobuf encoding", obj)
	}
	raw, err := pm.Marshal()
	if err != nil {
		return nil, fmt.Errorf("storedobj: encoding %s: %w", gvk.Kind, err)
	}
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}, Raw: raw}
	out := make([]byte, len(Magic), len(Magic)+unk.Size())
	copy(out, Magic)
	n, err := unk.MarshalToSizedBuffer(out[len(Magic):cap(out)])
	if err != nil {
		return nil, fmt.Errorf("storedobj: encoding the envelope of %s: %w", gvk.Kind, err)
	}
	return out[:len(Magic)+n], nil
}

// Decode decodes a stored value, JSON or protobuf, into obj. For protobuf
// it sets obj's apiVersion and kind from the envelope, as they are in the
// JSON of a stored value.
func Decode(data []byte, obj runtime.Object) error {
	if !IsProtobuf(data) {
		return objjson.Unmarshal(data, obj)
	}
	tm, raw, err := envelope(data)
	if err != nil {
		return err
	}
	u, ok := obj.(protoUnmarshaler)
	if !ok {
		return fmt.Errorf("storedobj: %T has no protobuf decoding", obj)
	}
	if err := u.Unmarshal(raw); err != nil {
		return fmt.Errorf("storedobj: decoding %s: %w", tm.Kind, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind))
	return nil
}

// Kind returns the apiVersion and kind a protobuf value names.
func Kind(data []byte) (schema.GroupVersionKind, error) {
	tm, _, err := envelope(data)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind), nil
}

// ToJSON returns a stored value as JSON: a JSON value as it is, a
// protobuf one decoded as the kind it names (a built-in kind) and
// encoded as the API server would store it in JSON. It is for readers
// that show objects to people (the tap, kubebus why).
func ToJSON(data []byte) ([]byte, error) {
	if !IsProtobuf(data) {
		return data, nil
	}
	gvk, err := Kind(data)
	if err != nil {
		return nil, err
	}
	obj, err := scheme.Scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("storedobj: %w", err)
	}
	if err := Decode(data, obj); err != nil {
		return nil, err
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("storedobj: encoding %s as JSON: %w", gvk.Kind, err)
	}
	return out, nil
}

// Valid reports whether data looks like a stored value: a JSON document,
// or a protobuf envelope that parses.
func Valid(data []byte) bool {
	if IsProtobuf(data) {
		_, _, err := envelope(data)
		return err == nil
	}
	return json.Valid(data)
}

// envelope parses the runtime.Unknown after the magic prefix without
// copying the object's bytes.
func envelope(data []byte) (tm runtime.TypeMeta, raw []byte, err error) {
	if !IsProtobuf(data) {
		return tm, nil, fmt.Errorf("storedobj: not a protobuf value")
	}
	b := data[len(Magic):]
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return tm, nil, fmt.Errorf("storedobj: malformed envelope: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return tm, nil, fmt.Errorf("storedobj: malformed envelope: %w", protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return tm, nil, fmt.Errorf("storedobj: malformed envelope: %w", protowire.ParseError(n))
		}
		b = b[n:]
		switch num {
		case 1: // typeMeta
			if err := tm.Unmarshal(v); err != nil {
				return tm, nil, fmt.Errorf("storedobj: malformed envelope: %w", err)
			}
		case 2: // raw
			raw = v
		}
	}
	if tm.Kind == "" || tm.APIVersion == "" {
		return tm, nil, fmt.Errorf("storedobj: the envelope names no apiVersion and kind")
	}
	return tm, raw, nil
}

// PodNodeName returns spec.nodeName of a pod stored in protobuf without
// decoding the rest of it (ok false when data does not parse).
func PodNodeName(data []byte) (string, bool) {
	_, raw, err := envelope(data)
	if err != nil {
		return "", false
	}
	spec, ok := field(raw, 2) // Pod.spec
	if !ok {
		return "", ok
	}
	node, ok := field(spec, 10) // PodSpec.nodeName
	return string(node), ok
}

// field returns the last length-delimited field num of a message (empty
// when absent); ok is false when b does not parse.
func field(b []byte, num protowire.Number) (out []byte, ok bool) {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return nil, false
		}
		b = b[l:]
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return nil, false
		}
		if n == num && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[:l])
			out = v
		}
		b = b[l:]
	}
	return out, true
}
