package tap

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/bus"
)

// The tap over the API server, for users who have a kubeconfig but no bus
// credentials: the API server reads the bus for them and streams one JSON
// record per line from EndpointPath. The query parameters are the CLI's
// flags: resource, namespace, labelSelector, name, type, since, follow.

// EndpointPath is where the API server serves the tap.
const EndpointPath = "/kubebus/v1/tap"

// wireRecord is one line of the endpoint's stream.
type wireRecord struct {
	Seq   uint64     `json:"seq"`
	Time  time.Time  `json:"time"`
	Event *bus.Event `json:"event"`
}

// Query encodes flags as the endpoint's query string.
func (f Flags) Query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("resource", f.Resource)
	set("namespace", f.Namespace)
	set("labelSelector", f.Selector)
	set("name", f.Name)
	set("type", f.Types)
	set("since", f.Since)
	q.Set("follow", strconv.FormatBool(f.Follow))
	return q
}

func flagsFromQuery(q url.Values) Flags {
	follow := q.Get("follow") != "false"
	return Flags{Resource: q.Get("resource"), Namespace: q.Get("namespace"), Selector: q.Get("labelSelector"),
		Name: q.Get("name"), Types: q.Get("type"), Since: q.Get("since"), Follow: follow, Output: "json"}
}

// writeBadRequest answers a query the tap cannot run with a 400 Status,
// as the API server answers every refused request.
func writeBadRequest(w http.ResponseWriter, err error) {
	st := apierrors.NewBadRequest(err.Error()).Status()
	st.APIVersion, st.Kind = "v1", "Status"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(st)
}

// statusMessage is the message of a Status body, or the body itself when
// it is not one.
func statusMessage(body []byte) string {
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Message != "" {
		return st.Message
	}
	return strings.TrimSpace(string(body))
}

// Handler serves the tap endpoint from the bus.
func Handler(js jetstream.JetStream, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cfg, err := flagsFromQuery(r.URL.Query()).Config(false)
		if err != nil {
			writeBadRequest(w, err)
			return
		}
		cfg.Logger = log
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		flusher, _ := w.(http.Flusher)
		enc := json.NewEncoder(w)
		err = Tail(r.Context(), js, cfg, func(rec Record) error {
			if err := enc.Encode(wireRecord(rec)); err != nil {
				return err
			}
			if flusher != nil {
				flusher.Flush()
			}
			return nil
		})
		if err != nil && r.Context().Err() == nil {
			log.Warn("tap endpoint ended", "err", err)
		}
	})
}

// RunRemote prints what the API server at server streams from the tap
// endpoint, with client (which carries the kubeconfig's credentials).
func RunRemote(ctx context.Context, client *http.Client, server string, f Flags, terminal bool, w io.Writer) error {
	cfg, err := f.Config(terminal)
	if err != nil {
		return err
	}
	u := strings.TrimSuffix(server, "/") + EndpointPath + "?" + f.Query().Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("reaching the tap endpoint: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("the API server answered %s: %s", resp.Status, statusMessage(body))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	p := cfg.Printer
	for sc.Scan() {
		var rec wireRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.Event == nil {
			return fmt.Errorf("the tap endpoint sent a line that is not a record: %q", truncate(sc.Text(), 200))
		}
		if err := p.Print(w, Record(rec)); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("reading the tap endpoint: %w", err)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
