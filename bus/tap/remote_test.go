package tap

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHandlerRefusesBadQueriesWithStatus: a query the tap cannot run is
// answered 400 with a Status naming what is wrong, as the API server
// answers every refused request, and the CLI shows the Status's message.
func TestHandlerRefusesBadQueriesWithStatus(t *testing.T) {
	t.Parallel()
	h := Handler(nil, slog.New(slog.DiscardHandler)) // refused before the bus is read
	for _, tc := range []struct{ query, want string }{
		{"labelSelector=a+in", "label selector"},
		{"since=yesterday", "yesterday"},
		{"type=FOO", "FOO"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, EndpointPath+"?"+tc.query, nil))
		if rec.Code != http.StatusBadRequest {
			t.Fatalf("%s: code %d, want 400: %s", tc.query, rec.Code, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: content type %q, want application/json", tc.query, ct)
		}
		var st metav1.Status
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
			t.Fatalf("%s: body is not JSON: %v: %s", tc.query, err, rec.Body)
		}
		if st.Kind != "Status" || st.Status != metav1.StatusFailure || st.Reason != metav1.StatusReasonBadRequest || st.Code != http.StatusBadRequest {
			t.Errorf("%s: %+v, want a BadRequest failure Status", tc.query, st)
		}
		if !strings.Contains(st.Message, tc.want) {
			t.Errorf("%s: message %q does not name %q", tc.query, st.Message, tc.want)
		}
		if got := statusMessage(rec.Body.Bytes()); got != st.Message {
			t.Errorf("%s: the CLI would show %q, want the Status's message %q", tc.query, got, st.Message)
		}
	}
	if got := statusMessage([]byte("plain words\n")); got != "plain words" {
		t.Errorf("a body that is no Status: %q, want it as it is", got)
	}
}
