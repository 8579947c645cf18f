package admission

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/internal/crash/crashtest"
)

// panicky is the test hook: an admission plugin that panics while armed.
type panicky struct{ armed *bool }

func (p panicky) Admit(context.Context, *auth.AdmissionRequest) error {
	if *p.armed {
		*p.armed = false
		panic("admission hook panics on purpose")
	}
	return nil
}

// TestChainPanicIsInternalError: a plugin that panics rejects that request
// alone with a 500 InternalError; the panic is counted and logged with its
// stack, later plugins do not run, and the next request is admitted.
func TestChainPanicIsInternalError(t *testing.T) {
	var logs crashtest.Log
	prev := slog.Default()
	slog.SetDefault(logs.Logger())
	t.Cleanup(func() { slog.SetDefault(prev) })

	armed := true
	var after int
	chain := Chain{panicky{armed: &armed}, admitFunc(func(context.Context, *auth.AdmissionRequest) error { after++; return nil })}
	panics := crashtest.Watch("admission", "panicky")

	err := chain.Admit(context.Background(), podCreate())
	if !apierrors.IsInternalError(err) {
		t.Fatalf("Admit = %v, want an InternalError", err)
	}
	if code := apierrors.ReasonForError(err); code != "InternalError" {
		t.Errorf("reason = %s", code)
	}
	if se, ok := err.(apierrors.APIStatus); !ok || se.Status().Code != http.StatusInternalServerError {
		t.Errorf("status = %+v, want code 500", err)
	}
	if strings.Contains(err.Error(), "on purpose") {
		t.Errorf("the client sees the panic value: %v", err)
	}
	if after != 0 {
		t.Errorf("the plugin after the panicking one ran %d times", after)
	}
	panics.Expect(t, 1)
	logs.Contains(t, `"where":"panicky"`, `"key":"CREATE pods default/p"`, "admission.panicky.Admit")

	if err := chain.Admit(context.Background(), podCreate()); err != nil {
		t.Fatalf("the next request: %v", err)
	}
	if after != 1 {
		t.Errorf("the next request ran the later plugin %d times, want 1", after)
	}
}

func TestPluginName(t *testing.T) {
	t.Parallel()
	for a, want := range map[auth.Admitter]string{
		DefaultTolerationSeconds{}: "DefaultTolerationSeconds",
		&PodSecurity{}:             "PodSecurity",
	} {
		if got := pluginName(a); got != want {
			t.Errorf("pluginName(%T) = %q, want %q", a, got, want)
		}
	}
}
