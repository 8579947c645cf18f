package bus

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// FuzzDecode: Decode never panics; an event it accepts is complete for its
// type, and encoding it gives a message Decode accepts again, whose
// encoding is the same bytes (one round normalises the JSON of the object,
// the next changes nothing).
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"type":"ADDED","revision":7,"prevRevision":6,"resource":"pods","namespace":"default","name":"web","object":{"kind":"Pod","metadata":{"name":"web"}}}`,
		`{"type":"MODIFIED","revision":9,"prevRevision":8,"group":"apps","resource":"deployments","namespace":"ns","name":"d","object":{"spec":{"replicas":2}},"previous":{"spec":{"replicas":1}},"previousRevision":8}`,
		`{"type":"DELETED","revision":10,"resource":"nodes","name":"n1","object":{}}`,
		`{"type":"GAP","from":3,"to":5}`,
		`{"type":"PROGRESS","revision":12}`,
		`{"type":"ADDED","revision":0,"resource":"pods","name":"x","object":{}}`,
		`{"type":"bogus"}`,
		`[]`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := Decode(data)
		if err != nil {
			if ev != nil {
				t.Fatalf("Decode returned an event with the error %v", err)
			}
			return
		}
		switch ev.Type {
		case Added, Modified, Deleted:
			if ev.Revision <= 0 || ev.Resource == "" || ev.Name == "" || len(ev.Object) == 0 {
				t.Fatalf("accepted an incomplete %s event: %+v", ev.Type, ev)
			}
		case Gap:
			if ev.From <= 0 || ev.To < ev.From {
				t.Fatalf("accepted a malformed gap: %+v", ev)
			}
		case Progress:
			if ev.Revision <= 0 {
				t.Fatalf("accepted a progress event without a revision: %+v", ev)
			}
		default:
			t.Fatalf("accepted the unknown type %q", ev.Type)
		}
		enc, err := Encode(ev)
		if err != nil {
			t.Fatalf("Encode refuses an event Decode accepted: %v", err)
		}
		if !json.Valid(enc) {
			t.Fatalf("Encode made what encoding/json does not take for JSON:\n%s", enc)
		}
		back, err := Decode(enc)
		if err != nil || back.Key() != ev.Key() || back.Revision != ev.Revision || back.Type != ev.Type {
			t.Fatalf("Decode of Encode: %+v, %v\n%s", back, err, enc)
		}
		if !bytes.Equal(back.Object, ev.Object) || !bytes.Equal(back.Previous, ev.Previous) {
			t.Fatalf("Encode changed the raw values: %q, %q -> %q, %q", ev.Object, ev.Previous, back.Object, back.Previous)
		}
		once, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("encoding an accepted event: %v", err)
		}
		again, err := Decode(once)
		if err != nil {
			t.Fatalf("Decode rejects the encoding of an event it accepted: %v\n%s", err, once)
		}
		twice, err := json.Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once, twice) {
			t.Fatalf("encoding is not stable:\n%s\n%s", once, twice)
		}
		if ev.Key() != again.Key() || ev.Revision != again.Revision || ev.PrevRevision != again.PrevRevision {
			t.Fatalf("the round trip changed the event: %+v -> %+v", ev, again)
		}
	})
}

// FuzzSubjects: Escape makes one NATS subject token of any string, which
// Unescape reverses, and ParseHistorySubject reverses HistorySubject (the
// group "core" and the core group "" are one group on the bus).
func FuzzSubjects(f *testing.F) {
	f.Add("", "pods", "default", "web-0")
	f.Add("apps", "deployments", "", "d")
	f.Add("core", "nodes", "_", "_n")
	f.Add("x.y", "a b", "ns.*", "name>%41")
	f.Add("rbac.authorization.k8s.io", "roles", "kube-system", "system:controller:foo")
	f.Fuzz(func(t *testing.T, group, resource, namespace, name string) {
		for _, s := range []string{group, resource, namespace, name} {
			tok := Escape(s)
			if strings.ContainsAny(tok, ". *>\t\r\n") || (tok != "" && tok[0] == '_') {
				t.Fatalf("Escape(%q) = %q is not one plain token", s, tok)
			}
			back, err := Unescape(tok)
			if err != nil || back != s {
				t.Fatalf("Unescape(Escape(%q)) = %q, %v", s, back, err)
			}
		}
		k := ObjectKey{Group: group, Resource: resource, Namespace: namespace, Name: name}
		got, err := ParseHistorySubject(HistorySubject(k))
		if err != nil {
			t.Fatalf("ParseHistorySubject(HistorySubject(%+v)): %v", k, err)
		}
		if k.Group == "core" {
			k.Group = ""
		}
		if !reflect.DeepEqual(got, k) {
			t.Fatalf("round trip of %+v gave %+v", k, got)
		}
		if StateSubject(k) == HistorySubject(k) {
			t.Fatalf("the state and history subjects of %+v are one", k)
		}
	})
}

// FuzzHeaderInt: HeaderInt reads back what FormatInt wrote, and anything
// else as a number or 0 without panicking.
func FuzzHeaderInt(f *testing.F) {
	f.Add("42", int64(42))
	f.Add("", int64(-1))
	f.Add("9223372036854775808", int64(0))
	f.Fuzz(func(t *testing.T, raw string, n int64) {
		h := nats.Header{}
		h.Set(HeaderRevision, raw)
		_ = HeaderInt(h, HeaderRevision)
		h.Set(HeaderRevision, strconv.FormatInt(n, 10))
		if got := HeaderInt(h, HeaderRevision); got != n {
			t.Fatalf("HeaderInt of %d = %d", n, got)
		}
	})
}
