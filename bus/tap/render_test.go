package tap

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kubebus/kubebus/bus"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 5, 0, time.UTC)

func deployment(replicas int, labels string, managers string) json.RawMessage {
	return json.RawMessage(`{"metadata":{"name":"web","namespace":"default","generation":` + itoa(replicas) +
		`,"labels":{` + labels + `},"managedFields":[` + managers + `]},"spec":{"replicas":` + itoa(replicas) + `}}`)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func sampleRecords() []Record {
	kubectl := `{"manager":"kubectl","operation":"Update","time":"2026-03-01T12:00:00Z"}`
	ctrl := `{"manager":"kube-controller-manager","operation":"Update","time":"2026-03-01T12:00:04Z"}`
	return []Record{
		{Seq: 1, Time: t0, Event: &bus.Event{Type: bus.Added, Revision: 7, Group: "apps", Resource: "deployments", Namespace: "default", Name: "web",
			Object: deployment(3, `"app":"web"`, kubectl)}},
		{Seq: 2, Time: t0.Add(time.Second), Event: &bus.Event{Type: bus.Modified, Revision: 9, PrevRevision: 8, Group: "apps", Resource: "deployments", Namespace: "default", Name: "web",
			Object:   deployment(5, `"app":"web","tier":"front"`, kubectl+","+ctrl),
			Previous: deployment(3, `"app":"web"`, kubectl), PreviousRevision: 7}},
		{Seq: 3, Time: t0.Add(2 * time.Second), Event: &bus.Event{Type: bus.Gap, Revision: 20, PrevRevision: 9, From: 10, To: 20}},
		{Seq: 4, Time: t0.Add(3 * time.Second), Event: &bus.Event{Type: bus.Deleted, Revision: 21, Resource: "nodes", Name: "node-1",
			Object: json.RawMessage(`{"metadata":{"name":"node-1","labels":{"zone":"a"}}}`)}},
	}
}

func render(t *testing.T, p Printer, recs []Record) string {
	t.Helper()
	var b bytes.Buffer
	p.Location = time.UTC
	for _, r := range recs {
		if err := p.Print(&b, r); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

func TestPrintTable(t *testing.T) {
	t.Parallel()
	want := `REVISION   TIME                  TYPE       RESOURCE                NAMESPACE/NAME                            WHO
7          2026-03-01T12:00:05Z  ADDED      deployments.apps        default/web                               kubectl
9          2026-03-01T12:00:06Z  MODIFIED   deployments.apps        default/web                               kube-controller-manager
  metadata.labels.tier: <none> -> front
  spec.replicas: 3 -> 5
GAP: revisions 10..20 were not published (etcd compacted them); state was reseeded
21         2026-03-01T12:00:08Z  DELETED    nodes                   node-1                                    -
`
	if got := render(t, Printer{Format: Table}, sampleRecords()); got != want {
		t.Fatalf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestPrintTableColor(t *testing.T) {
	t.Parallel()
	rec := Record{Seq: 1, Time: t0, Event: &bus.Event{Type: bus.Modified, Revision: 3, Resource: "configmaps", Namespace: "ns", Name: "c",
		Object:   json.RawMessage(`{"data":{"a":"2","new":"x"}}`),
		Previous: json.RawMessage(`{"data":{"a":"1","old":"y"}}`)}}
	gap := Record{Seq: 2, Time: t0, Event: &bus.Event{Type: bus.Gap, Revision: 9, From: 4, To: 9}}
	got := render(t, Printer{Format: Table, Color: true}, []Record{rec, gap})
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	want := []string{
		"\x1b[33m  data.a: 1 -> 2\x1b[0m",
		"\x1b[32m  data.new: <none> -> x\x1b[0m",
		"\x1b[31m  data.old: y -> <none>\x1b[0m",
		"\x1b[1;31mGAP: revisions 4..9 were not published (etcd compacted them); state was reseeded\x1b[0m",
	}
	if len(lines) != 2+len(want) {
		t.Fatalf("got %d lines:\n%s", len(lines), got)
	}
	for i, w := range want {
		if lines[2+i] != w {
			t.Errorf("line %d = %q, want %q", 2+i, lines[2+i], w)
		}
	}
	if strings.Contains(render(t, Printer{Format: Table}, []Record{rec, gap}), "\x1b[") {
		t.Error("colour escapes without Color")
	}
}

func TestPrintJSON(t *testing.T) {
	t.Parallel()
	got := render(t, Printer{Format: JSON}, sampleRecords())
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("want 4 lines, got %d:\n%s", len(lines), got)
	}
	want := `{"seq":2,"time":"2026-03-01T12:00:06Z","type":"MODIFIED","revision":9,"prevRevision":8,"group":"apps","resource":"deployments","namespace":"default","name":"web",` +
		`"object":{"metadata":{"name":"web","namespace":"default","generation":5,"labels":{"app":"web","tier":"front"},"managedFields":[{"manager":"kubectl","operation":"Update","time":"2026-03-01T12:00:00Z"},{"manager":"kube-controller-manager","operation":"Update","time":"2026-03-01T12:00:04Z"}]},"spec":{"replicas":5}},` +
		`"previous":{"metadata":{"name":"web","namespace":"default","generation":3,"labels":{"app":"web"},"managedFields":[{"manager":"kubectl","operation":"Update","time":"2026-03-01T12:00:00Z"}]},"spec":{"replicas":3}},"previousRevision":7,` +
		`"who":"kube-controller-manager","changes":[{"path":"metadata.labels.tier","new":"front"},{"path":"spec.replicas","old":3,"new":5}]}`
	if lines[1] != want {
		t.Fatalf("MODIFIED line:\n%s\nwant:\n%s", lines[1], want)
	}
	if want := `{"seq":3,"time":"2026-03-01T12:00:07Z","type":"GAP","revision":20,"prevRevision":9,"from":10,"to":20}`; lines[2] != want {
		t.Fatalf("GAP line:\n%s\nwant:\n%s", lines[2], want)
	}
	for i, l := range lines {
		var ev bus.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("line %d is not JSON: %v", i, err)
		}
		if ev.Revision != sampleRecords()[i].Event.Revision {
			t.Fatalf("line %d has revision %d", i, ev.Revision)
		}
	}
}

func TestPrintYAML(t *testing.T) {
	t.Parallel()
	recs := sampleRecords()
	got := render(t, Printer{Format: YAML}, []Record{recs[2], recs[3]})
	want := `---
from: 10
prevRevision: 9
revision: 20
seq: 3
time: "2026-03-01T12:00:07Z"
to: 20
type: GAP
---
name: node-1
object:
  metadata:
    labels:
      zone: a
    name: node-1
prevRevision: 0
resource: nodes
revision: 21
seq: 4
time: "2026-03-01T12:00:08Z"
type: DELETED
who: '-'
`
	if got != want {
		t.Fatalf("yaml:\n%s\nwant:\n%s", got, want)
	}
}

func TestWho(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, obj, want string
	}{
		{name: "no metadata", obj: `{}`, want: "-"},
		{name: "not JSON", obj: `nope`, want: "-"},
		{name: "empty managedFields", obj: `{"metadata":{"managedFields":[]}}`, want: "-"},
		{name: "one", obj: `{"metadata":{"managedFields":[{"manager":"kubectl","time":"2026-01-01T00:00:00Z"}]}}`, want: "kubectl"},
		{name: "newest wins over order", obj: `{"metadata":{"managedFields":[{"manager":"late","time":"2026-01-02T00:00:00Z"},{"manager":"early","time":"2026-01-01T00:00:00Z"}]}}`, want: "late"},
		{name: "tie goes to the last listed", obj: `{"metadata":{"managedFields":[{"manager":"a","time":"2026-01-01T00:00:00Z"},{"manager":"b","time":"2026-01-01T00:00:00Z"}]}}`, want: "b"},
		{name: "no times", obj: `{"metadata":{"managedFields":[{"manager":"a"},{"manager":"b"}]}}`, want: "b"},
		{name: "nameless entries skipped", obj: `{"metadata":{"managedFields":[{"manager":"a"},{"manager":""}]}}`, want: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Who([]byte(tt.obj)); got != tt.want {
				t.Fatalf("Who = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFormatValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   json.RawMessage
		want string
	}{
		{in: nil, want: "<none>"},
		{in: json.RawMessage(`3`), want: "3"},
		{in: json.RawMessage(`"front"`), want: "front"},
		{in: json.RawMessage(`""`), want: `""`},
		{in: json.RawMessage(`" padded"`), want: `" padded"`},
		{in: json.RawMessage(`"<none>"`), want: `"<none>"`},
		{in: json.RawMessage(`"a -> b"`), want: `"a -> b"`},
		{in: json.RawMessage(`"two\nlines"`), want: `"two\nlines"`},
		{in: json.RawMessage(`null`), want: "null"},
		{in: json.RawMessage(`{"a":[1,2]}`), want: `{"a":[1,2]}`},
		{in: json.RawMessage(`"` + strings.Repeat("x", 150) + `"`), want: strings.Repeat("x", 99) + "…"},
	}
	for _, tt := range tests {
		if got := FormatValue(tt.in); got != tt.want {
			t.Errorf("FormatValue(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Format{"": Table, "table": Table, "JSON": JSON, "yaml": YAML} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseFormat("wide"); err == nil {
		t.Error("ParseFormat(wide) succeeded")
	}
}
