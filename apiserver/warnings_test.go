package apiserver

import (
	"net/http/httptest"
	"slices"
	"testing"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// TestWriteWarnings: warnings reach a client as written, quotes and
// backslashes included, as upstream's Warning headers carry them; a
// control character, which no header may hold, becomes a space.
func TestWriteWarnings(t *testing.T) {
	t.Parallel()
	msgs := []string{
		`would violate PodSecurity "restricted:latest": privileged (container "c" must not set securityContext.privileged=true)`,
		`a path C:\dir`,
		"two\nlines",
	}
	w := httptest.NewRecorder()
	writeWarnings(w, msgs)
	got, errs := utilnet.ParseWarningHeaders(w.Header().Values("Warning"))
	if len(errs) > 0 {
		t.Fatalf("parsing %q: %v", w.Header().Values("Warning"), errs)
	}
	var texts []string
	for _, h := range got {
		if h.Code != 299 || h.Agent != "-" {
			t.Errorf("header %+v, want code 299 and agent -", h)
		}
		texts = append(texts, h.Text)
	}
	want := []string{msgs[0], msgs[1], "two lines"}
	if !slices.Equal(texts, want) {
		t.Errorf("warnings read back %q, want %q", texts, want)
	}
}
