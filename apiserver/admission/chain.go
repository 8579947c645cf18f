package admission

import (
	"context"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// Chain runs admitters in order; the first error rejects the write and stops
// the chain. A later admitter sees what earlier ones mutated. A nil or empty
// chain admits everything.
type Chain []auth.Admitter

var _ auth.Admitter = Chain(nil)

// Admit implements auth.Admitter.
func (c Chain) Admit(ctx context.Context, req *auth.AdmissionRequest) error {
	for _, a := range c {
		if a == nil {
			continue
		}
		if err := a.Admit(ctx, req); err != nil {
			return err
		}
	}
	return nil
}
