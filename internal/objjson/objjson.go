// Package objjson decodes the JSON of API objects that kubebus itself
// wrote (values stored in etcd as JSON, objects in bus events; see
// internal/storedobj, which reads those in protobuf too) with
// github.com/goccy/go-json, which decodes into the same Go values as
// encoding/json, calling the same UnmarshalJSON methods, about three times
// as fast. Request bodies are not its business: they are decoded strictly
// (sigs.k8s.io/json), to report unknown and duplicate fields.
//
// Encoding stays with encoding/json: goccy's encoder, twice as fast on a
// pod, does not write the same bytes. It ignores omitzero, which
// metadata.creationTimestamp carries (it writes "creationTimestamp":null
// where encoding/json leaves the field out), and it orders some map keys
// differently.
package objjson

import gojson "github.com/goccy/go-json"

// Unmarshal decodes data into v as encoding/json.Unmarshal does.
func Unmarshal(data []byte, v any) error {
	return gojson.Unmarshal(data, v)
}
