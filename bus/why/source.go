package why

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/tap"
)

// Source is where the answer's facts come from.
type Source interface {
	// Read returns the retained history of what q selects, oldest first
	// (q.Follow is ignored: reading stops at the newest stored event).
	// A refusal by the API server is an *AccessError.
	Read(ctx context.Context, q tap.Flags) ([]tap.Record, error)
	// Logs returns the last lines of a container's log: of its previous
	// run when previous is set.
	Logs(ctx context.Context, namespace, pod, container string, previous bool, lines int64) (string, error)
}

// AccessError is the API server refusing a read (403 and the like).
type AccessError struct {
	Code    int
	Message string
}

func (e *AccessError) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

// Remote reads through the API server: the tap endpoint for histories and
// the pods/log subresource for logs, both with the kubeconfig's identity.
type Remote struct {
	// HTTP carries the kubeconfig's credentials (rest.HTTPClientFor).
	HTTP *http.Client
	// Server is the API server's base URL.
	Server string
	// Clientset reads logs.
	Clientset kubernetes.Interface
}

// wireRecord is one line of the tap endpoint's stream.
type wireRecord struct {
	Seq   uint64     `json:"seq"`
	Time  time.Time  `json:"time"`
	Event *bus.Event `json:"event"`
}

// Read implements Source.
func (r *Remote) Read(ctx context.Context, q tap.Flags) ([]tap.Record, error) {
	q.Follow = false
	u := strings.TrimSuffix(r.Server, "/") + tap.EndpointPath + "?" + q.Query().Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reaching the tap endpoint: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		msg := strings.TrimSpace(string(body))
		var st struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &st) == nil && st.Message != "" {
			msg = st.Message
		}
		return nil, &AccessError{Code: resp.StatusCode, Message: msg}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var out []tap.Record
	for sc.Scan() {
		var rec wireRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.Event == nil {
			return nil, fmt.Errorf("the tap endpoint sent a line that is not a record")
		}
		out = append(out, tap.Record(rec))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the tap endpoint: %w", err)
	}
	return out, nil
}

// Logs implements Source.
func (r *Remote) Logs(ctx context.Context, namespace, pod, container string, previous bool, lines int64) (string, error) {
	if r.Clientset == nil {
		return "", errors.New("no client for logs")
	}
	b, err := r.Clientset.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, Previous: previous, TailLines: &lines}).DoRaw(ctx)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
