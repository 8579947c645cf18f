package prober

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// RunHandler runs a lifecycle hook (postStart or preStop) against t and
// waits for it, within ctx (the caller bounds a preStop hook by the grace
// period). exec fails on a non-zero exit, httpGet on a status outside
// 200-399; sleep waits its seconds or until ctx ends.
func (p *Prober) RunHandler(ctx context.Context, h *corev1.LifecycleHandler, t Target) error {
	if h == nil {
		return errors.New("prober: nil lifecycle handler")
	}
	switch {
	case h.Exec != nil:
		if p.exec == nil {
			return errors.New("prober: no execer configured for exec hooks")
		}
		if len(h.Exec.Command) == 0 {
			return errors.New("prober: exec hook without a command")
		}
		var to time.Duration
		if d, ok := ctx.Deadline(); ok {
			to = time.Until(d)
		}
		res, err := p.exec.ExecSync(ctx, t.ContainerID, h.Exec.Command, to)
		if err != nil {
			return fmt.Errorf("exec hook in container %s: %w", t.ContainerID, err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("exec hook %q exited with %d: %s", h.Exec.Command, res.ExitCode, res.Stdout)
		}
		return nil
	case h.HTTPGet != nil:
		req, err := p.httpRequest(ctx, h.HTTPGet, t)
		if err != nil {
			return err
		}
		code, body, err := p.do(req)
		if err != nil {
			return fmt.Errorf("http hook: %w", err)
		}
		if code < 200 || code >= 400 {
			return fmt.Errorf("http hook %s returned %d: %s", req.URL, code, body)
		}
		return nil
	case h.Sleep != nil:
		timer := time.NewTimer(time.Duration(h.Sleep.Seconds) * time.Second)
		defer timer.Stop()
		select {
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("%w: lifecycle handler has no exec, httpGet or sleep", ErrUnsupported)
}
