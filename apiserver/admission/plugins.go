package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// The admission plugins' names, as upstream's --enable-admission-plugins
// and --disable-admission-plugins spell them.
const (
	PluginNamespaceLifecycle       = "NamespaceLifecycle"
	PluginLimitRanger              = "LimitRanger"
	PluginServiceAccount           = "ServiceAccount"
	PluginNodeRestriction          = "NodeRestriction"
	PluginPodSecurity              = "PodSecurity"
	PluginPriority                 = "Priority"
	PluginDefaultTolerationSeconds = "DefaultTolerationSeconds"
	PluginDefaultStorageClass      = "DefaultStorageClass"
	PluginStorageInUseProtection   = "StorageObjectInUseProtection"
	PluginResourceQuota            = "ResourceQuota"
)

// DefaultPlugins returns the plugins a server runs unless told otherwise,
// in upstream's recommended order.
func DefaultPlugins() []string {
	return []string{
		PluginNamespaceLifecycle, PluginLimitRanger, PluginServiceAccount, PluginNodeRestriction,
		PluginPodSecurity, PluginPriority, PluginDefaultTolerationSeconds, PluginDefaultStorageClass,
		PluginStorageInUseProtection, PluginResourceQuota,
	}
}

// validatingOnly are the plugins that never change an object: they run
// after every mutating one, so they judge the object as it will be stored.
func validatingOnly(name string) bool {
	return name == PluginPodSecurity || name == PluginResourceQuota
}

// PodLister lists the pods of a namespace (PodSecurity checks them when a
// namespace's enforce level tightens).
type PodLister interface {
	ListPods(ctx context.Context, namespace string) ([]*corev1.Pod, error)
}

// Deps is what Build hands the plugins.
type Deps struct {
	// Namespaces serves NamespaceLifecycle and PodSecurity.
	Namespaces NamespaceGetter
	// ServiceAccounts serves ServiceAccount.
	ServiceAccounts ServiceAccountGetter
	// Pods serves NodeRestriction.
	Pods PodGetter
	// Nodes, optional, lets NodeRestriction check a mirror pod's owner UID.
	Nodes NodeGetter
	// Authorizer, optional, may let a node request tokens for audiences
	// its pods do not use (NodeRestriction).
	Authorizer auth.Authorizer
	// NamespacePods, optional, lets PodSecurity warn about the existing pods
	// of a namespace whose enforce level tightens.
	NamespacePods PodLister
	// PriorityClasses serves Priority; nil knows only the system classes.
	PriorityClasses PriorityClasses
	// StorageClasses serves DefaultStorageClass; nil turns it off.
	StorageClasses StorageClasses
	// Factories build the plugins defined elsewhere (LimitRanger,
	// ResourceQuota) and may replace a built-in one (a configured
	// DefaultTolerationSeconds, say).
	Factories map[string]func() (auth.Admitter, error)
}

// Resolve returns the plugins to run: the defaults plus enable minus
// disable, in the default order, as upstream's --enable-admission-plugins
// and --disable-admission-plugins. An unknown name, or one both enabled
// and disabled, is an error.
func Resolve(enable, disable []string) ([]string, error) {
	defaults := DefaultPlugins()
	var errs []error
	for _, flag := range []struct {
		name  string
		names []string
	}{{"enable-admission-plugins", enable}, {"disable-admission-plugins", disable}} {
		for _, n := range flag.names {
			if !slices.Contains(defaults, n) {
				errs = append(errs, fmt.Errorf("%s plugin %q is unknown (known plugins: %s)", flag.name, n, strings.Join(defaults, ", ")))
			}
		}
	}
	var both []string
	for _, n := range enable {
		if slices.Contains(disable, n) && !slices.Contains(both, n) {
			both = append(both, n)
		}
	}
	if len(both) > 0 {
		slices.Sort(both)
		errs = append(errs, fmt.Errorf("%v in enable-admission-plugins and disable-admission-plugins overlapped", both))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return slices.DeleteFunc(defaults, func(n string) bool { return slices.Contains(disable, n) }), nil
}

// Build returns the chain of the named plugins: those that may mutate
// first, then those that only validate, each group in the order given.
func Build(names []string, d Deps) (Chain, error) {
	plugins, err := BuildPlugins(names, d)
	if err != nil {
		return nil, err
	}
	chain := make(Chain, len(plugins))
	for i, p := range plugins {
		chain[i] = p.Admitter
	}
	return chain, nil
}

// BuildPlugins returns the named plugins in the order Build runs them,
// each with its name and step, for a Timed chain.
func BuildPlugins(names []string, d Deps) ([]Plugin, error) {
	ordered := slices.Clone(names)
	slices.SortStableFunc(ordered, func(a, b string) int {
		switch va, vb := validatingOnly(a), validatingOnly(b); {
		case va == vb:
			return 0
		case vb:
			return -1
		default:
			return 1
		}
	})
	plugins := make([]Plugin, 0, len(ordered))
	for i, name := range ordered {
		if slices.Contains(ordered[:i], name) {
			return nil, fmt.Errorf("admission: plugin %s is listed twice", name)
		}
		a, err := buildPlugin(name, d)
		if err != nil {
			return nil, fmt.Errorf("admission: building plugin %s: %w", name, err)
		}
		plugins = append(plugins, Plugin{Name: name, Validating: validatingOnly(name), Admitter: a})
	}
	return plugins, nil
}

func buildPlugin(name string, d Deps) (auth.Admitter, error) {
	if f, ok := d.Factories[name]; ok {
		return f()
	}
	switch name {
	case PluginNamespaceLifecycle:
		if d.Namespaces == nil {
			return nil, errors.New("no NamespaceGetter")
		}
		return &NamespaceLifecycle{Namespaces: d.Namespaces}, nil
	case PluginServiceAccount:
		if d.ServiceAccounts == nil {
			return nil, errors.New("no ServiceAccountGetter")
		}
		return ServiceAccount{Accounts: d.ServiceAccounts}, nil
	case PluginNodeRestriction:
		if d.Pods == nil {
			return nil, errors.New("no PodGetter")
		}
		return NodeRestriction{Pods: d.Pods, Nodes: d.Nodes, Authorizer: d.Authorizer}, nil
	case PluginPodSecurity:
		ps, err := NewPodSecurity(d.Namespaces, d.NamespacePods)
		if err != nil {
			return nil, err
		}
		return ps, nil
	case PluginPriority:
		return Priority{Classes: d.PriorityClasses}, nil
	case PluginDefaultTolerationSeconds:
		return DefaultTolerationSeconds{}, nil
	case PluginDefaultStorageClass:
		return DefaultStorageClass{Classes: d.StorageClasses}, nil
	case PluginStorageInUseProtection:
		return StorageObjectInUseProtection{}, nil
	}
	return nil, errors.New("no such plugin here and none in Deps.Factories")
}

// forbidRequest is upstream's admission.NewForbidden: a 403 naming the
// request's resource and object (its generateName, or "Unknown", when it
// has no name yet). An error that is a 403 already is returned as is.
func forbidRequest(req *auth.AdmissionRequest, err error) error {
	if apierrors.IsForbidden(err) {
		return err
	}
	name := req.Attributes.Name
	if name == "" {
		name = "Unknown"
		if m, merr := meta.Accessor(req.Object); merr == nil {
			if m.GetName() != "" {
				name = m.GetName()
			} else if m.GetGenerateName() != "" {
				name = m.GetGenerateName()
			}
		}
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: req.Attributes.APIGroup, Resource: req.Attributes.Resource}, name, err)
}
