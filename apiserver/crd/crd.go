// Package crd turns apiextensions.k8s.io/v1 CustomResourceDefinitions into
// rows of the resource table, and provides the row of the
// CustomResourceDefinition kind itself.
//
// It wires together the pieces upstream's apiextensions-apiserver uses to
// serve custom resources (structural pruning and defaulting, OpenAPI schema
// and CEL validation, printer columns, the OpenAPI builder and the
// server-side-apply type converter) without any I/O of its own.
package crd

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// scheme converts CRDs between v1 and the internal version upstream's
// validation works on.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// metaDescriptions holds ObjectMeta's field descriptions, which upstream's
// tables use for their name and age columns.
var metaDescriptions = metav1.ObjectMeta{}.SwaggerDoc()

// Row returns the row of customresourcedefinitions.
func Row() *resource.Resource {
	return &resource.Resource{
		GVK:           apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"),
		Plural:        "customresourcedefinitions",
		Singular:      "customresourcedefinition",
		ShortNames:    []string{"crd", "crds"},
		Categories:    []string{"api-extensions"},
		Subresources:  []resource.Subresource{resource.Status},
		HasGeneration: true,
		New:           func() runtime.Object { return &apiextensionsv1.CustomResourceDefinition{} },
		NewList:       func() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} },
		Default: func(obj runtime.Object) {
			apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(obj.(*apiextensionsv1.CustomResourceDefinition))
		},
		PrepareForCreate: func(obj runtime.Object) {
			c := obj.(*apiextensionsv1.CustomResourceDefinition)
			c.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
			addStoredVersion(c)
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			c := obj.(*apiextensionsv1.CustomResourceDefinition)
			c.Status = *old.(*apiextensionsv1.CustomResourceDefinition).Status.DeepCopy()
			addStoredVersion(c)
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			in, err := toInternal(obj)
			if err != nil {
				return field.ErrorList{field.InternalError(nil, err)}
			}
			return crdvalidation.ValidateCustomResourceDefinition(context.Background(), in)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			in, inOld, errs := toInternalPair(obj, old)
			if errs != nil {
				return errs
			}
			return crdvalidation.ValidateCustomResourceDefinitionUpdate(context.Background(), in, inOld)
		},
		ValidateSubresource: func(obj, old runtime.Object, sub string) field.ErrorList {
			in, inOld, errs := toInternalPair(obj, old)
			if errs != nil {
				return errs
			}
			if sub == string(resource.Status) {
				return crdvalidation.ValidateUpdateCustomResourceDefinitionStatus(context.Background(), in, inOld)
			}
			return crdvalidation.ValidateCustomResourceDefinitionUpdate(context.Background(), in, inOld)
		},
		Columns: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: metaDescriptions["name"]},
			{Name: "Created At", Type: "date", Description: metaDescriptions["creationTimestamp"]},
		},
		Cells: func(obj runtime.Object, _ time.Time) ([]any, error) {
			c, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
			if !ok {
				return nil, fmt.Errorf("unexpected object %T", obj)
			}
			return []any{c.Name, c.CreationTimestamp.UTC().Format(time.RFC3339)}, nil
		},
	}
}

// addStoredVersion records the storage version in status.storedVersions,
// as upstream's strategy does on create and update.
func addStoredVersion(c *apiextensionsv1.CustomResourceDefinition) {
	for _, v := range c.Spec.Versions {
		if !v.Storage {
			continue
		}
		if !apihelpers.IsStoredVersion(c, v.Name) {
			c.Status.StoredVersions = append(c.Status.StoredVersions, v.Name)
		}
		return
	}
}

// toInternal converts a v1 CRD to the internal version.
func toInternal(obj runtime.Object) (*apiextensions.CustomResourceDefinition, error) {
	c, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	out := &apiextensions.CustomResourceDefinition{}
	if err := scheme.Convert(c.DeepCopy(), out, nil); err != nil {
		return nil, fmt.Errorf("converting CustomResourceDefinition to internal: %w", err)
	}
	return out, nil
}

func toInternalPair(obj, old runtime.Object) (in, inOld *apiextensions.CustomResourceDefinition, errs field.ErrorList) {
	in, err := toInternal(obj)
	if err != nil {
		return nil, nil, field.ErrorList{field.InternalError(nil, err)}
	}
	inOld, err = toInternal(old)
	if err != nil {
		return nil, nil, field.ErrorList{field.InternalError(nil, err)}
	}
	return in, inOld, nil
}

// SetCondition sets or replaces a condition by type on crd.Status. Its
// LastTransitionTime changes only when its status does.
func SetCondition(crd *apiextensionsv1.CustomResourceDefinition, c apiextensionsv1.CustomResourceDefinitionCondition) {
	apihelpers.SetCRDCondition(crd, c)
}
