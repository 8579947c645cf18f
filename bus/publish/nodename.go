package publish

import (
	"bytes"
	"encoding/json"

	"github.com/kubebus/kubebus/internal/storedobj"
)

// podNode reads spec.nodeName from a stored pod: in protobuf by scanning
// for the field (storedobj.PodNodeName); in JSON it walks the text
// without decoding it (the publisher does this for every pod revision,
// old and new state), and falls back to encoding/json for the rare text it
// does not handle (escapes in the names it looks for, malformed input).
func podNode(data []byte) string {
	if len(data) == 0 {
		return ""
	}
	if storedobj.IsProtobuf(data) {
		name, _ := storedobj.PodNodeName(data)
		return name
	}
	if name, ok := scanNodeName(data); ok {
		return name
	}
	return decodeNodeName(data)
}

// decodeNodeName is podNode by decoding.
func decodeNodeName(data []byte) string {
	var p struct {
		Spec struct {
			NodeName string `json:"nodeName"`
		} `json:"spec"`
	}
	_ = json.Unmarshal(data, &p)
	return p.Spec.NodeName
}

// scanNodeName finds "spec" among the top-level keys and "nodeName" among
// its keys; ok is false when the text is not what it can read.
func scanNodeName(data []byte) (name string, ok bool) {
	spec, ok := objectMember(data, "spec")
	if !ok {
		return "", false
	}
	if spec == nil {
		return "", true
	}
	v, ok := objectMember(spec, "nodeName")
	if !ok || v == nil {
		return "", ok
	}
	if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 || !ascii(v) {
		return "", false
	}
	return string(v[1 : len(v)-1]), true
}

// objectMember returns the raw value of key in the JSON object data (nil
// when absent). ok is false when data is not an object it can read, or
// when encoding/json could read it differently: a key that matches only
// case-insensitively or has non-ASCII bytes (encoding/json folds case), or
// the key twice.
func objectMember(data []byte, key string) (value []byte, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil, true
	}
	for i < len(data) {
		end, ok := skipValue(data, i)
		if !ok || data[i] != '"' {
			return nil, false
		}
		k := data[i+1 : end-1]
		if bytes.IndexByte(k, '\\') >= 0 || !ascii(k) {
			return nil, false
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return nil, false
		}
		i = skipSpace(data, i+1)
		vend, ok := skipValue(data, i)
		if !ok {
			return nil, false
		}
		switch {
		case string(k) == key && value == nil:
			value = data[i:vend]
		case bytes.EqualFold(k, []byte(key)):
			return nil, false
		}
		i = skipSpace(data, vend)
		switch {
		case i < len(data) && data[i] == ',':
			i = skipSpace(data, i+1)
		case i < len(data) && data[i] == '}':
			return value, true
		default:
			return nil, false
		}
	}
	return nil, false
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value starting at i.
func skipValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return 0, false
	}
	switch data[i] {
	case '"':
		for j := i + 1; j < len(data); j++ {
			switch data[j] {
			case '\\':
				j++
			case '"':
				return j + 1, true
			}
		}
		return 0, false
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, ok := skipValue(data, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	default:
		j := i
		for j < len(data) && data[j] != ',' && data[j] != '}' && data[j] != ']' && data[j] != ' ' && data[j] != '\n' && data[j] != '\t' && data[j] != '\r' {
			j++
		}
		return j, j > i
	}
}
