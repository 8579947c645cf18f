package server

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestParseLogOptions(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	i := func(n int64) *int64 { return &n }
	cases := []struct {
		query   string
		want    LogOptions
		wantErr string
	}{
		{query: "", want: LogOptions{}},
		{query: "follow=true&previous=true&timestamps=true", want: LogOptions{Follow: true, Previous: true, Timestamps: true}},
		{query: "follow=false&previous=0&timestamps=f", want: LogOptions{}},
		{query: "follow", want: LogOptions{Follow: true}},
		{query: "tailLines=0&limitBytes=10", want: LogOptions{TailLines: i(0), LimitBytes: i(10)}},
		{query: "sinceSeconds=60", want: LogOptions{Since: now.Add(-time.Minute)}},
		{query: "sinceTime=2026-11-22T09:30:00Z", want: LogOptions{Since: now.Add(-30 * time.Minute)}},
		{query: "tailLines=-1", wantErr: "tailLines: must be greater than or equal to 0"},
		{query: "tailLines=x", wantErr: `tailLines: "x" is not an integer`},
		{query: "limitBytes=0", wantErr: "limitBytes: must be greater than 0"},
		{query: "sinceSeconds=0", wantErr: "sinceSeconds: must be greater than 0"},
		{query: "sinceSeconds=5&sinceTime=2026-11-22T09:30:00Z", wantErr: "at most one of sinceTime or sinceSeconds"},
		{query: "sinceTime=yesterday", wantErr: `sinceTime: "yesterday" is not an RFC 3339 time`},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			t.Parallel()
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseLogOptions(q, now)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Follow != tc.want.Follow || got.Previous != tc.want.Previous || got.Timestamps != tc.want.Timestamps ||
				!eqPtr(got.TailLines, tc.want.TailLines) || !eqPtr(got.LimitBytes, tc.want.LimitBytes) || !got.Since.Equal(tc.want.Since) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func eqPtr(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
