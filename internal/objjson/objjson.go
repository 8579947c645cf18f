// Package objjson decodes and encodes the JSON of API objects on the API
// server's and the bus's hot paths, byte for byte and value for value as
// encoding/json does, only faster. Decoding (values stored in etcd,
// objects in bus events: JSON kubebus itself wrote) uses
// github.com/goccy/go-json, which calls the same UnmarshalJSON methods,
// about three times as fast. Encoding (what is stored, what a response
// carries) uses github.com/segmentio/encoding/json, which gives the same
// bytes in about 60% of the time. Request bodies are not its business:
// they are decoded strictly (sigs.k8s.io/json), to report unknown and
// duplicate fields.
package objjson

import (
	gojson "github.com/goccy/go-json"
	segjson "github.com/segmentio/encoding/json"
)

// Unmarshal decodes data into v as encoding/json.Unmarshal does.
func Unmarshal(data []byte, v any) error {
	return gojson.Unmarshal(data, v)
}

// Marshal encodes v as encoding/json.Marshal does, to the same bytes.
func Marshal(v any) ([]byte, error) {
	return segjson.Marshal(v)
}
