package admission

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/internal/crash"
)

// Chain runs admitters in order; the first error rejects the write and stops
// the chain. A later admitter sees what earlier ones mutated. A nil or empty
// chain admits everything. An admitter that panics rejects that write alone
// with a 500 InternalError; the panic is logged with its stack and counted
// in kubebus_panics_total{component="admission",where=<plugin>}.
type Chain []auth.Admitter

var _ auth.Admitter = Chain(nil)

// Admit implements auth.Admitter.
func (c Chain) Admit(ctx context.Context, req *auth.AdmissionRequest) error {
	for _, a := range c {
		if a == nil {
			continue
		}
		if err := admitSafely(ctx, "", a, req); err != nil {
			return err
		}
	}
	return nil
}

// admitSafely runs one admitter, turning its panic into an InternalError.
// The panic is logged through slog.Default(): a Chain has no logger.
// The plugin's name (its type's, when name is empty) and the request's
// key are made only after a panic: made for every plugin of every write
// they cost more than most plugins.
func admitSafely(ctx context.Context, name string, a auth.Admitter, req *auth.AdmissionRequest) (err error) {
	defer func() {
		if v := recover(); v != nil {
			if name == "" {
				name = pluginName(a)
			}
			crash.Handle(slog.Default(), "admission", name, requestKey(req), v)
			err = apierrors.NewInternalError(fmt.Errorf("admission plugin %s failed", name))
		}
	}()
	return a.Admit(ctx, req)
}

// pluginName is the admitter's type name without its package and pointer
// (PodSecurity, LimitRanger...).
func pluginName(a auth.Admitter) string {
	name := strings.TrimLeft(fmt.Sprintf("%T", a), "*")
	return name[strings.LastIndexByte(name, '.')+1:]
}

// requestKey names the object of a request for the log.
func requestKey(req *auth.AdmissionRequest) string {
	key := req.Attributes.Resource
	if req.Subresource != "" {
		key += "/" + req.Subresource
	}
	if req.Attributes.Namespace != "" {
		key += " " + req.Attributes.Namespace + "/" + req.Attributes.Name
	} else {
		key += " " + req.Attributes.Name
	}
	return string(req.Operation) + " " + key
}
