package tap

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// `kubebus tap lag` over the API server, for users who have a kubeconfig
// but no bus credentials: the API server reads the consumers' state with
// its own bus connection and answers with a LagReport.

// LagEndpointPath is where the API server serves the consumers' lag.
const LagEndpointPath = EndpointPath + "/lag"

// LagReport is the lag endpoint's answer.
type LagReport struct {
	// Time is when the server read the consumers; the OLDEST ages are
	// measured from it.
	Time time.Time `json:"time"`
	// Consumers are the durable consumers, the most behind first.
	Consumers []LagRow `json:"consumers"`
}

// lagTimeout bounds the bus requests of one lag request.
const lagTimeout = 30 * time.Second

// LagHandler serves the lag endpoint from the bus: a GET answers with a
// LagReport of every durable consumer of KUBE_HISTORY and KUBE_NODEPODS.
func LagHandler(js jetstream.JetStream, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "the lag endpoint answers GET only", http.StatusMethodNotAllowed)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), lagTimeout)
		defer cancel()
		rows, err := LagRows(ctx, js)
		if err != nil {
			log.Warn("lag endpoint: reading the consumers", "err", err)
			http.Error(w, "reading the bus's consumers: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		SortLag(rows)
		if rows == nil {
			rows = []LagRow{}
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(LagReport{Time: time.Now().UTC(), Consumers: rows}); err != nil && r.Context().Err() == nil {
			log.Debug("lag endpoint: writing the answer", "err", err)
		}
	})
}

// FetchLag asks the API server at server for the consumers' lag, with
// client (which carries the kubeconfig's credentials).
func FetchLag(ctx context.Context, client *http.Client, server string) (LagReport, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(server, "/")+LagEndpointPath, nil)
	if err != nil {
		return LagReport{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return LagReport{}, fmt.Errorf("reaching the lag endpoint: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return LagReport{}, fmt.Errorf("the API server answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	var rep LagReport
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&rep); err != nil {
		return LagReport{}, fmt.Errorf("the lag endpoint's answer: %w", err)
	}
	return rep, nil
}

// LagRemote writes the lag table the API server at server reports.
func LagRemote(ctx context.Context, client *http.Client, server string, w io.Writer) error {
	rep, err := FetchLag(ctx, client, server)
	if err != nil {
		return err
	}
	now := rep.Time
	if now.IsZero() {
		now = time.Now()
	}
	SortLag(rep.Consumers)
	return RenderLag(w, rep.Consumers, now)
}
