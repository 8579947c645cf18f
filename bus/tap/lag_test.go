package tap

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestSortLag(t *testing.T) {
	t.Parallel()
	rows := []LagRow{
		{Consumer: "b", Stream: "KUBE_HISTORY", Pending: 3},
		{Consumer: "kubelet-n1", Stream: "KUBE_NODEPODS", Pending: 10},
		{Consumer: "a", Stream: "KUBE_HISTORY", Pending: 3},
		{Consumer: "z", Stream: "KUBE_HISTORY", Pending: 0},
		{Consumer: "a", Stream: "KUBE_NODEPODS", Pending: 3},
	}
	SortLag(rows)
	var got []string
	for _, r := range rows {
		got = append(got, r.Stream+"/"+r.Consumer)
	}
	want := []string{"KUBE_NODEPODS/kubelet-n1", "KUBE_HISTORY/a", "KUBE_HISTORY/b", "KUBE_NODEPODS/a", "KUBE_HISTORY/z"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

func TestRenderLag(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rows := []LagRow{
		{Consumer: "scheduler", Stream: "KUBE_HISTORY", Filter: "kube.core.pods.>", Pending: 120, Oldest: now.Add(-95 * time.Second), LastAckRevision: 4411},
		{Consumer: "kubelet-node-1", Stream: "KUBE_NODEPODS", Filter: "knode.node-1.>", Pending: 0, LastAckRevision: 4500},
		{Consumer: "fresh", Stream: "KUBE_HISTORY", Filter: ">", Pending: 7, Oldest: now.Add(-3 * time.Hour)},
	}
	var b bytes.Buffer
	if err := RenderLag(&b, rows, now); err != nil {
		t.Fatal(err)
	}
	want := `CONSUMER         STREAM          FILTER             PENDING   OLDEST   LAST-ACK-REVISION
scheduler        KUBE_HISTORY    kube.core.pods.>   120       95s      4411
kubelet-node-1   KUBE_NODEPODS   knode.node-1.>     0         -        4500
fresh            KUBE_HISTORY    >                  7         3h       -
`
	if b.String() != want {
		t.Fatalf("lag table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestConsumerFilters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cfg  jetstream.ConsumerConfig
		want []string
	}{
		{cfg: jetstream.ConsumerConfig{}, want: nil},
		{cfg: jetstream.ConsumerConfig{FilterSubject: "kube.core.pods.>"}, want: []string{"kube.core.pods.>"}},
		{cfg: jetstream.ConsumerConfig{FilterSubjects: []string{"a.>", "b.>"}}, want: []string{"a.>", "b.>"}},
	}
	for _, tt := range tests {
		if got := consumerFilters(tt.cfg); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("consumerFilters(%+v) = %v, want %v", tt.cfg, got, tt.want)
		}
	}
}

// TestLagRemote: the client renders the rows the endpoint sends, the most
// behind first, with ages measured from the server's time, and reports an
// error status with its body.
func TestLagRemote(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rep := LagReport{Time: now, Consumers: []LagRow{
		{Consumer: "caught-up", Stream: "KUBE_HISTORY", Filter: ">", LastAckRevision: 9},
		{Consumer: "behind", Stream: "KUBE_HISTORY", Filter: "kube.core.pods.>", Pending: 2, Oldest: now.Add(-time.Minute), LastAckRevision: 7},
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case LagEndpointPath:
			_ = json.NewEncoder(w).Encode(rep)
		default:
			http.Error(w, `{"kind":"Status","code":403}`, http.StatusForbidden)
		}
	}))
	defer srv.Close()
	var b bytes.Buffer
	if err := LagRemote(t.Context(), srv.Client(), srv.URL+"/", &b); err != nil {
		t.Fatal(err)
	}
	want := `CONSUMER    STREAM         FILTER             PENDING   OLDEST   LAST-ACK-REVISION
behind      KUBE_HISTORY   kube.core.pods.>   2         60s      7
caught-up   KUBE_HISTORY   >                  0         -        9
`
	if b.String() != want {
		t.Fatalf("lag table:\n%s\nwant:\n%s", b.String(), want)
	}
	err := LagRemote(t.Context(), srv.Client(), srv.URL+"/elsewhere", &b)
	if err == nil || !strings.Contains(err.Error(), "403 Forbidden") || !strings.Contains(err.Error(), `"code":403`) {
		t.Fatalf("LagRemote of a refusal = %v", err)
	}
}

func TestLagHandlerAnswersGETOnly(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	LagHandler(nil, slog.Default()).ServeHTTP(w, httptest.NewRequest(http.MethodPost, LagEndpointPath, nil))
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != http.MethodGet {
		t.Fatalf("POST: %d, Allow %q", w.Code, w.Header().Get("Allow"))
	}
}
