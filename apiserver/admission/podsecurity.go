package admission

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	psadmission "k8s.io/pod-security-admission/admission"
	psaconfig "k8s.io/pod-security-admission/admission/api"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/metrics"
	"k8s.io/pod-security-admission/policy"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// PodSecurity is upstream's PodSecurity plugin, driven by the library
// k8s.io/pod-security-admission so that its decisions and messages are
// upstream's. A namespace's labels pod-security.kubernetes.io/enforce,
// audit and warn (each with a -version) pick the levels; unlabelled means
// privileged at latest, and nothing is exempt.
//
//   - pods (and their subresources but status, binding, eviction, exec,
//     attach, log, portforward and proxy) are refused when they violate the
//     enforce level, and warned about when they violate the warn level;
//     updates are checked only when they change container images or add
//     containers;
//   - workloads with pod templates (Deployments, ReplicaSets, Jobs, ...)
//     only get warnings;
//   - namespaces must carry valid labels (422 otherwise); tightening the
//     enforce level warns about the existing pods that would violate it.
type PodSecurity struct {
	delegate *psadmission.Admission
}

var _ auth.Admitter = (*PodSecurity)(nil)

// NewPodSecurity returns the plugin reading namespaces through namespaces
// and, when set, listing the pods of a namespace whose enforce level
// tightens through pods.
func NewPodSecurity(namespaces NamespaceGetter, pods PodLister) (*PodSecurity, error) {
	if namespaces == nil {
		return nil, errors.New("admission: PodSecurity needs a NamespaceGetter")
	}
	// "latest" means the checks of the version the server reports.
	latest := psaapi.MajorMinorVersion(1, 33)
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), &latest)
	if err != nil {
		return nil, fmt.Errorf("admission: building the PodSecurity evaluator: %w", err)
	}
	if pods == nil {
		pods = noPods{}
	}
	a := &psadmission.Admission{
		Configuration: &psaconfig.PodSecurityConfiguration{Defaults: psaconfig.PodSecurityDefaults{
			Enforce: string(psaapi.LevelPrivileged), EnforceVersion: psaapi.VersionLatest,
			Audit: string(psaapi.LevelPrivileged), AuditVersion: psaapi.VersionLatest,
			Warn: string(psaapi.LevelPrivileged), WarnVersion: psaapi.VersionLatest,
		}},
		Evaluator:       evaluator,
		Metrics:         noMetrics{},
		NamespaceGetter: namespaces,
		PodLister:       pods,
	}
	if err := a.CompleteConfiguration(); err != nil {
		return nil, fmt.Errorf("admission: configuring PodSecurity: %w", err)
	}
	if err := a.ValidateConfiguration(); err != nil {
		return nil, fmt.Errorf("admission: configuring PodSecurity: %w", err)
	}
	return &PodSecurity{delegate: a}, nil
}

// Admit implements auth.Admitter.
func (p *PodSecurity) Admit(ctx context.Context, req *auth.AdmissionRequest) error {
	var op admissionv1.Operation
	switch req.Operation {
	case auth.Create:
		op = admissionv1.Create
	case auth.Update:
		op = admissionv1.Update
	default:
		return nil
	}
	gr := schema.GroupResource{Group: req.Attributes.APIGroup, Resource: req.Attributes.Resource}
	if gr != namespacesResource && gr != podsResource && !p.delegate.PodSpecExtractor.HasPodSpec(gr) {
		return nil
	}
	resp := p.delegate.Validate(ctx, podSecurityAttributes(req, op))
	req.Warnings = append(req.Warnings, resp.Warnings...)
	if resp.Allowed {
		return nil
	}
	if resp.Result != nil {
		return &apierrors.StatusError{ErrStatus: *resp.Result}
	}
	//lint:ignore ST1005 upstream's message, word for word
	return forbidRequest(req, errors.New("Not allowed by PodSecurity"))
}

// podSecurityAttributes adapts a request to the library's view of it.
func podSecurityAttributes(req *auth.AdmissionRequest, op admissionv1.Operation) *psaapi.AttributesRecord {
	a := req.Attributes
	version := a.APIVersion
	if version == "" {
		version = "v1"
	}
	kind := req.Kind
	if kind.Kind == "" && req.Object != nil {
		kind = schema.GroupVersionKind{Group: a.APIGroup, Version: version, Kind: reflect.Indirect(reflect.ValueOf(req.Object)).Type().Name()}
	}
	namespace := a.Namespace
	if a.APIGroup == "" && a.Resource == "namespaces" {
		namespace = a.Name // as upstream: a namespace is in itself
	}
	return &psaapi.AttributesRecord{
		Name:        a.Name,
		Namespace:   namespace,
		Kind:        kind,
		Resource:    schema.GroupVersionResource{Group: a.APIGroup, Version: version, Resource: a.Resource},
		Subresource: req.Subresource,
		Operation:   op,
		Object:      req.Object,
		OldObject:   req.OldObject,
		Username:    a.User.Name,
	}
}

// noPods is the PodLister of a plugin given none: a namespace's enforce
// level then tightens without its pods being checked.
type noPods struct{}

func (noPods) ListPods(context.Context, string) ([]*corev1.Pod, error) { return nil, nil }

// noMetrics drops the library's metrics.
type noMetrics struct{}

func (noMetrics) RecordEvaluation(metrics.Decision, psaapi.LevelVersion, metrics.Mode, psaapi.Attributes) {
}
func (noMetrics) RecordExemption(psaapi.Attributes)   {}
func (noMetrics) RecordError(bool, psaapi.Attributes) {}
