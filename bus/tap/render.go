package tap

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/kubebus/kubebus/bus"
)

// Format is an output format.
type Format string

// Output formats.
const (
	Table Format = "table"
	JSON  Format = "json"
	YAML  Format = "yaml"
)

// ParseFormat parses -o.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case "", Table:
		return Table, nil
	case JSON, YAML:
		return f, nil
	default:
		return "", fmt.Errorf("tap: unknown output format %q (want table, json or yaml)", s)
	}
}

// Record is one event read from the history stream.
type Record struct {
	Seq   uint64    // stream sequence
	Time  time.Time // when the stream stored it
	Event *bus.Event
}

// Printer renders records in one format. It is not safe for concurrent use:
// the table header is printed once, before the first row.
type Printer struct {
	Format Format
	// Color marks diff lines (green added, red removed, yellow changed) and
	// gaps with ANSI colours; only for a terminal.
	Color bool
	// Location is the time zone of the TIME column (default: local).
	Location *time.Location

	headerDone bool
}

// ANSI colours.
const (
	ansiGreen  = "\x1b[32m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiAlarm  = "\x1b[1;31m"
	ansiReset  = "\x1b[0m"
)

// Print writes one record.
func (p *Printer) Print(w io.Writer, r Record) error {
	var err error
	switch p.Format {
	case JSON:
		err = p.printJSON(w, r)
	case YAML:
		err = p.printYAML(w, r)
	default:
		err = p.printTable(w, r)
	}
	if err != nil {
		return fmt.Errorf("writing revision %d: %w", r.Event.Revision, err)
	}
	return nil
}

// Column widths of the table; a longer value pushes the rest of its row.
var columns = []struct {
	title string
	width int
}{{"REVISION", 9}, {"TIME", 20}, {"TYPE", 9}, {"RESOURCE", 22}, {"NAMESPACE/NAME", 40}, {"WHO", 0}}

func row(values ...string) string {
	var b strings.Builder
	for i, v := range values {
		if i == len(values)-1 {
			b.WriteString(v)
			break
		}
		b.WriteString(v)
		b.WriteString(strings.Repeat(" ", max(columns[i].width-utf8.RuneCountInString(v), 0)+2))
	}
	b.WriteByte('\n')
	return b.String()
}

func (p *Printer) printTable(w io.Writer, r Record) error {
	var b strings.Builder
	ev := r.Event
	if ev.Type == bus.Gap {
		line := GapLine(ev)
		if p.Color {
			line = ansiAlarm + line + ansiReset
		}
		b.WriteString(line + "\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	if !p.headerDone {
		titles := make([]string, len(columns))
		for i, c := range columns {
			titles[i] = c.title
		}
		b.WriteString(row(titles...))
		p.headerDone = true
	}
	b.WriteString(row(strconv.FormatInt(ev.Revision, 10), p.timeString(r.Time), string(ev.Type),
		ResourceName(ev.Group, ev.Resource), ObjectName(ev.Namespace, ev.Name), Who(ev.Object)))
	if ev.Type == bus.Modified && len(ev.Previous) == 0 {
		b.WriteString("  (the previous state is not on the bus)\n")
	} else if ev.Type == bus.Modified {
		changes, err := DiffResource(ev.Group, ev.Resource, ev.Previous, ev.Object)
		if err != nil {
			b.WriteString("  (cannot diff: " + err.Error() + ")\n")
		}
		for _, c := range changes {
			b.WriteString(p.changeLine(c))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// GapLine is the loud line a GAP event prints as.
func GapLine(ev *bus.Event) string {
	return fmt.Sprintf("GAP: revisions %d..%d were not published (etcd compacted them); state was reseeded", ev.From, ev.To)
}

func (p *Printer) timeString(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	loc := p.Location
	if loc == nil {
		loc = time.Local
	}
	return t.In(loc).Format(time.RFC3339)
}

func (p *Printer) changeLine(c Change) string {
	line := "  " + c.Path + ": " + FormatValue(c.Old) + " -> " + FormatValue(c.New)
	if !p.Color {
		return line + "\n"
	}
	colour := ansiYellow
	switch {
	case c.Old == nil:
		colour = ansiGreen
	case c.New == nil:
		colour = ansiRed
	}
	return colour + line + ansiReset + "\n"
}

// maxValueWidth caps a value in a diff line.
const maxValueWidth = 100

// FormatValue renders a JSON value for a diff line: <none> when absent,
// strings without quotes unless they would be ambiguous, everything else as
// compact JSON, cut at 100 characters.
func FormatValue(v json.RawMessage) string {
	if v == nil {
		return "<none>"
	}
	s := string(v)
	var str string
	if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &str) == nil {
		s = str
		if str == "" || str == "<none>" || str != strings.TrimSpace(str) || strings.ContainsAny(str, "\n\t\r") || strings.Contains(str, " -> ") {
			s = strconv.Quote(str)
		}
	}
	if utf8.RuneCountInString(s) > maxValueWidth {
		s = string([]rune(s)[:maxValueWidth-1]) + "…"
	}
	return s
}

// ResourceName is the RESOURCE column: "pods", "deployments.apps".
func ResourceName(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

// ObjectName is the NAMESPACE/NAME column.
func ObjectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// Who returns the manager of the newest metadata.managedFields entry of an
// object (the last listed among the newest when times tie), or "-".
func Who(obj []byte) string {
	var o struct {
		Metadata struct {
			ManagedFields []struct {
				Manager string `json:"manager"`
				Time    string `json:"time"`
			} `json:"managedFields"`
		} `json:"metadata"`
	}
	if json.Unmarshal(obj, &o) != nil {
		return "-"
	}
	who, newest := "-", time.Time{}
	for _, e := range o.Metadata.ManagedFields {
		if e.Manager == "" {
			continue
		}
		t, _ := time.Parse(time.RFC3339, e.Time)
		if who == "-" || !t.Before(newest) {
			who, newest = e.Manager, t
		}
	}
	return who
}

// jsonRecord is the -o json / -o yaml shape: the event's own fields plus
// where and when the stream stored it, who wrote it and, for MODIFIED, the
// changed fields.
type jsonRecord struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	*bus.Event
	Who     string   `json:"who,omitempty"`
	Changes []Change `json:"changes,omitempty"`
}

func newJSONRecord(r Record) jsonRecord {
	jr := jsonRecord{Seq: r.Seq, Time: r.Time, Event: r.Event}
	if r.Event.Type == bus.Gap {
		return jr
	}
	jr.Who = Who(r.Event.Object)
	if r.Event.Type == bus.Modified && len(r.Event.Previous) > 0 {
		jr.Changes, _ = DiffResource(r.Event.Group, r.Event.Resource, r.Event.Previous, r.Event.Object)
	}
	return jr
}

func (p *Printer) printJSON(w io.Writer, r Record) error {
	b, err := json.Marshal(newJSONRecord(r))
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func (p *Printer) printYAML(w io.Writer, r Record) error {
	j, err := json.Marshal(newJSONRecord(r))
	if err != nil {
		return err
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return err
	}
	_, err = w.Write(append([]byte("---\n"), y...))
	return err
}
