package server

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// LogOptions are the query parameters of GET /containerLogs, named as the
// API server's PodLogOptions.
type LogOptions struct {
	Follow, Previous bool
	// Timestamps is accepted and ignored: log files hold raw output.
	Timestamps bool
	// TailLines, when set, starts at the last TailLines lines.
	TailLines *int64
	// LimitBytes, when set, ends the response after that many bytes.
	LimitBytes *int64
	// Since, when not zero, is the earliest time of interest (from
	// sinceSeconds or sinceTime); see the package comment for how far it
	// is honoured.
	Since time.Time
}

// ParseLogOptions reads the query of a log request. now is the time
// sinceSeconds counts back from. Bad values are errors naming the
// parameter.
func ParseLogOptions(q url.Values, now time.Time) (LogOptions, error) {
	o := LogOptions{Follow: parseBool(q, "follow"), Previous: parseBool(q, "previous"), Timestamps: parseBool(q, "timestamps")}
	var err error
	if o.TailLines, err = parseInt(q, "tailLines"); err != nil {
		return LogOptions{}, err
	}
	if o.TailLines != nil && *o.TailLines < 0 {
		return LogOptions{}, fmt.Errorf("tailLines: must be greater than or equal to 0, got %d", *o.TailLines)
	}
	if o.LimitBytes, err = parseInt(q, "limitBytes"); err != nil {
		return LogOptions{}, err
	}
	if o.LimitBytes != nil && *o.LimitBytes < 1 {
		return LogOptions{}, fmt.Errorf("limitBytes: must be greater than 0, got %d", *o.LimitBytes)
	}
	secs, err := parseInt(q, "sinceSeconds")
	if err != nil {
		return LogOptions{}, err
	}
	sinceTime := q.Get("sinceTime")
	if secs != nil && sinceTime != "" {
		return LogOptions{}, fmt.Errorf("at most one of sinceTime or sinceSeconds may be specified")
	}
	if secs != nil {
		if *secs < 1 {
			return LogOptions{}, fmt.Errorf("sinceSeconds: must be greater than 0, got %d", *secs)
		}
		o.Since = now.Add(-time.Duration(*secs) * time.Second)
	}
	if sinceTime != "" {
		if o.Since, err = time.Parse(time.RFC3339, sinceTime); err != nil {
			return LogOptions{}, fmt.Errorf("sinceTime: %q is not an RFC 3339 time", sinceTime)
		}
	}
	return o, nil
}

// parseBool reads a boolean parameter as the API server does: absent is
// false; "false", "f" and "0" are false; any other value is true.
func parseBool(q url.Values, name string) bool {
	v, ok := q[name]
	if !ok || len(v) == 0 {
		return false
	}
	switch strings.ToLower(v[0]) {
	case "false", "f", "0":
		return false
	}
	return true
}

func parseInt(q url.Values, name string) (*int64, error) {
	s := q.Get(name)
	if s == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not an integer", name, s)
	}
	return &n, nil
}
