package publish

import (
	"encoding/json"
	"testing"
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
