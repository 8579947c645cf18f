package why

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Render writes the report as one screen of text. Times are shown in loc
// (local time when nil).
func Render(w io.Writer, r Report, loc *time.Location) error {
	if loc == nil {
		loc = time.Local
	}
	var b strings.Builder
	b.WriteString(r.Summary + "\n")
	if r.Revision > 0 {
		fmt.Fprintf(&b, "as of revision %d\n", r.Revision)
	}
	if len(r.Chain) > 0 {
		b.WriteString("\nCHAIN\n")
		rows := [][]string{{"", "STEP", "REVISION", "TIME", "WHO", "TOOK"}}
		for i, l := range r.Chain {
			mark, took := "", "-"
			if i > 0 {
				took = "+" + FormatDuration(l.Took)
			}
			if i == r.Slowest {
				mark = "*"
			}
			rows = append(rows, []string{mark, l.Step, strconv.FormatInt(l.Revision, 10), l.Time.In(loc).Format("15:04:05.000"), l.Who, took})
		}
		writeTable(&b, rows)
		if r.Slowest >= 0 {
			l := r.Chain[r.Slowest]
			fmt.Fprintf(&b, "* slowest step: %s (%s)\n", l.Step, FormatDuration(l.Took))
		}
		if len(r.Chain) > 1 {
			fmt.Fprintf(&b, "total: %s from %s to %s\n", FormatDuration(r.Chain[len(r.Chain)-1].Time.Sub(r.Chain[0].Time)),
				r.Chain[0].Stage, r.Chain[len(r.Chain)-1].Stage)
		}
	}
	b.WriteString("\n")
	if len(r.Stops) == 0 {
		b.WriteString("WHERE IT STOPS: nowhere; nothing is holding it up\n")
	} else {
		b.WriteString("WHERE IT STOPS, AND WHY\n")
		for _, f := range r.Stops {
			fmt.Fprintf(&b, "  %s %s: %s\n", f.Cause, f.Object, f.Message)
			for _, ev := range f.Evidence {
				b.WriteString("      " + ev + "\n")
			}
		}
	}
	if len(r.Notes) > 0 {
		b.WriteString("\nNOTES\n")
		for _, n := range r.Notes {
			b.WriteString("  " + n + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// RenderJSON writes the report as one JSON document.
func RenderJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// FormatDuration prints a step's duration readably: 850ms, 1.25s, 2m3s.
func FormatDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + FormatDuration(-d)
	case d < time.Millisecond:
		return d.String()
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
	default:
		return d.Truncate(time.Second).String()
	}
}

func writeTable(b *strings.Builder, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		b.WriteString(" ")
		for i, c := range r {
			if i == len(r)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
		}
		b.WriteString("\n")
	}
}
