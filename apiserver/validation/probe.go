package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedSchemes = []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}

// validateLifecycleAndProbes validates the hooks and probes of a regular or
// sidecar container.
func validateLifecycleAndProbes(c *corev1.Container, pc podContext, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if lc := c.Lifecycle; lc != nil {
		if lc.PostStart != nil {
			errs = append(errs, validateHandler(lifecycleHandler(lc.PostStart), pc.gracePeriod, p.Child("lifecycle", "postStart"))...)
		}
		if lc.PreStop != nil {
			errs = append(errs, validateHandler(lifecycleHandler(lc.PreStop), pc.gracePeriod, p.Child("lifecycle", "preStop"))...)
		}
	}
	if pr := c.LivenessProbe; pr != nil {
		path := p.Child("livenessProbe")
		errs = append(errs, validateProbe(pr, pc.gracePeriod, path)...)
		if pr.SuccessThreshold != 1 {
			errs = append(errs, field.Invalid(path.Child("successThreshold"), pr.SuccessThreshold, "must be 1"))
		}
	}
	if pr := c.ReadinessProbe; pr != nil {
		path := p.Child("readinessProbe")
		errs = append(errs, validateProbe(pr, pc.gracePeriod, path)...)
		if pr.TerminationGracePeriodSeconds != nil {
			errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), pr.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	if pr := c.StartupProbe; pr != nil {
		path := p.Child("startupProbe")
		errs = append(errs, validateProbe(pr, pc.gracePeriod, path)...)
		if pr.SuccessThreshold != 1 {
			errs = append(errs, field.Invalid(path.Child("successThreshold"), pr.SuccessThreshold, "must be 1"))
		}
	}
	return errs
}

func validateProbe(pr *corev1.Probe, gracePeriod *int64, path *field.Path) field.ErrorList {
	errs := validateHandler(handler{
		exec: pr.Exec, httpGet: pr.HTTPGet, tcpSocket: pr.TCPSocket, grpc: pr.GRPC,
	}, gracePeriod, path)
	errs = append(errs, validateNonnegative(int64(pr.InitialDelaySeconds), path.Child("initialDelaySeconds"))...)
	errs = append(errs, validateNonnegative(int64(pr.TimeoutSeconds), path.Child("timeoutSeconds"))...)
	errs = append(errs, validateNonnegative(int64(pr.PeriodSeconds), path.Child("periodSeconds"))...)
	errs = append(errs, validateNonnegative(int64(pr.SuccessThreshold), path.Child("successThreshold"))...)
	errs = append(errs, validateNonnegative(int64(pr.FailureThreshold), path.Child("failureThreshold"))...)
	if t := pr.TerminationGracePeriodSeconds; t != nil && *t <= 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *t, "must be greater than 0"))
	}
	return errs
}

// handler is the union of what a probe and a lifecycle hook can do.
type handler struct {
	exec      *corev1.ExecAction
	httpGet   *corev1.HTTPGetAction
	tcpSocket *corev1.TCPSocketAction
	grpc      *corev1.GRPCAction
	sleep     *corev1.SleepAction
}

func lifecycleHandler(h *corev1.LifecycleHandler) handler {
	return handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, sleep: h.Sleep}
}

// validateHandler requires exactly one action and validates it.
func validateHandler(h handler, gracePeriod *int64, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	// add counts an action and validates the first one set.
	add := func(set bool, name string, validate func(*field.Path) field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(path.Child(name), "may not specify more than 1 handler type"))
			return
		}
		n++
		errs = append(errs, validate(path.Child(name))...)
	}
	add(h.exec != nil, "exec", func(p *field.Path) field.ErrorList {
		if len(h.exec.Command) == 0 {
			return field.ErrorList{field.Required(p.Child("command"), "")}
		}
		return nil
	})
	add(h.httpGet != nil, "httpGet", func(p *field.Path) field.ErrorList { return validateHTTPGet(h.httpGet, p) })
	add(h.tcpSocket != nil, "tcpSocket", func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(h.tcpSocket.Port, p.Child("port"))
	})
	add(h.grpc != nil, "grpc", func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(intstr.FromInt32(h.grpc.Port), p.Child("port"))
	})
	add(h.sleep != nil, "sleep", func(p *field.Path) field.ErrorList {
		if gracePeriod != nil && (h.sleep.Seconds < 0 || h.sleep.Seconds > *gracePeriod) {
			return field.ErrorList{field.Invalid(p, h.sleep.Seconds,
				fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *gracePeriod))}
		}
		return nil
	})
	if n == 0 {
		errs = append(errs, field.Required(path, "must specify a handler type"))
	}
	return errs
}

func validateHTTPGet(h *corev1.HTTPGetAction, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if h.Path == "" {
		errs = append(errs, field.Required(path.Child("path"), ""))
	}
	errs = append(errs, validatePortNumOrName(h.Port, path.Child("port"))...)
	if h.Scheme != corev1.URISchemeHTTP && h.Scheme != corev1.URISchemeHTTPS {
		errs = append(errs, field.NotSupported(path.Child("scheme"), h.Scheme, supportedSchemes))
	}
	for _, header := range h.HTTPHeaders {
		errs = append(errs, messages(path.Child("httpHeaders"), header.Name, validation.IsHTTPHeaderName(header.Name))...)
	}
	return errs
}
