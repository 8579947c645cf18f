package crd

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// Resources returns one row per served version of crd, which must be valid.
func Resources(crd *apiextensionsv1.CustomResourceDefinition) ([]*resource.Resource, error) {
	names := crd.Spec.Names
	if crd.Status.AcceptedNames.Plural != "" {
		names = crd.Status.AcceptedNames
	}
	if names.ListKind == "" {
		names.ListKind = names.Kind + "List"
	}
	var served []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served = append(served, v.Name)
		}
	}
	tc, err := typeConverter(crd)
	if err != nil {
		return nil, err
	}
	var rows []*resource.Resource
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		row, err := versionRow(crd, v, names, served)
		if err != nil {
			return nil, fmt.Errorf("version %s of %s: %w", v.Name, crd.Name, err)
		}
		row.TypeConverter = tc
		rows = append(rows, row)
	}
	return rows, nil
}

// versionRow builds the row of one served version, mirroring how
// upstream's crdHandler builds its storage and request scope.
func versionRow(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion,
	names apiextensionsv1.CustomResourceDefinitionNames, served []string) (*resource.Resource, error) {
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: names.Kind}
	listGVK := gvk.GroupVersion().WithKind(names.ListKind)

	internalSchema, structural, err := schemas(crd, v.Name)
	if err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internalSchema)
	if err != nil {
		return nil, fmt.Errorf("building schema validator: %w", err)
	}
	subresources, err := apihelpers.GetSubresourcesForVersion(crd, v.Name)
	if err != nil {
		return nil, fmt.Errorf("reading subresources: %w", err)
	}
	var (
		statusSpec      *apiextensions.CustomResourceSubresourceStatus
		statusValidator apiservervalidation.SchemaValidator
		scaleSpec       *apiextensions.CustomResourceSubresourceScale
		subs            []resource.Subresource
	)
	if subresources != nil && subresources.Status != nil {
		subs = append(subs, resource.Status)
		statusSpec = &apiextensions.CustomResourceSubresourceStatus{}
		if internalSchema != nil {
			if st, ok := internalSchema.Properties["status"]; ok {
				if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&st); err != nil {
					return nil, fmt.Errorf("building status schema validator: %w", err)
				}
			}
		}
	}
	if subresources != nil && subresources.Scale != nil {
		subs = append(subs, resource.Scale)
		scaleSpec = &apiextensions.CustomResourceSubresourceScale{}
		if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(subresources.Scale, scaleSpec, nil); err != nil {
			return nil, fmt.Errorf("converting scale subresource: %w", err)
		}
	}
	strategy := customresource.NewStrategy(nil, namespaced, gvk, validator, statusValidator, structural, statusSpec, scaleSpec, v.SelectableFields)
	statusStrategy := customresource.NewStatusStrategy(strategy)

	columns, cells, err := printer(v.AdditionalPrinterColumns)
	if err != nil {
		return nil, err
	}

	row := &resource.Resource{
		GVK:           gvk,
		Plural:        names.Plural,
		Singular:      names.Singular,
		Namespaced:    namespaced,
		ShortNames:    names.ShortNames,
		Categories:    names.Categories,
		Subresources:  subs,
		HasGeneration: true,
		Versions:      served,
		New: func() runtime.Object {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			return u
		},
		NewList: func() runtime.Object {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(listGVK)
			return l
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			return strategy.Validate(context.Background(), obj)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return strategy.ValidateUpdate(context.Background(), obj, old)
		},
		ValidateSubresource: func(obj, old runtime.Object, sub string) field.ErrorList {
			if sub == string(resource.Status) {
				return statusStrategy.ValidateUpdate(context.Background(), obj, old)
			}
			return strategy.ValidateUpdate(context.Background(), obj, old)
		},
		Fields: func(obj runtime.Object) fields.Set {
			_, set, err := strategy.GetAttrs(obj)
			if err != nil {
				return nil
			}
			return set
		},
		Columns: columns,
		Cells:   cells,
	}
	if statusSpec != nil {
		row.PrepareForCreate = func(obj runtime.Object) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				delete(u.Object, "status")
			}
		}
		row.PrepareForUpdate = keepStatus
	}
	if scaleSpec != nil {
		row.Scale = scaleAccess(scaleSpec)
	}
	if structural != nil && !crd.Spec.PreserveUnknownFields {
		row.Prune = func(obj runtime.Object) []string { return prune(obj, gvk.GroupKind(), structural) }
		row.Default = func(obj runtime.Object) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				structuraldefaulting.Default(u.Object, structural)
			}
		}
	} else {
		row.Prune = func(obj runtime.Object) []string { return prune(obj, gvk.GroupKind(), nil) }
	}
	return row, nil
}

// schemas returns the internal OpenAPI schema of a version and its
// structural form with defaults pruned (nil, nil when it has none).
func schemas(crd *apiextensionsv1.CustomResourceDefinition, version string) (*apiextensions.JSONSchemaProps, *structuralschema.Structural, error) {
	val, err := apihelpers.GetSchemaForVersion(crd, version)
	if err != nil {
		return nil, nil, fmt.Errorf("reading schema: %w", err)
	}
	if val == nil || val.OpenAPIV3Schema == nil {
		return nil, nil, nil
	}
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
		return nil, nil, fmt.Errorf("converting schema to internal: %w", err)
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		if crd.Spec.PreserveUnknownFields {
			return internal.OpenAPIV3Schema, nil, nil
		}
		return nil, nil, fmt.Errorf("schema is not structural: %w", err)
	}
	s = s.DeepCopy()
	if !crd.Spec.PreserveUnknownFields {
		if err := structuraldefaulting.PruneDefaults(s); err != nil {
			return nil, nil, fmt.Errorf("pruning defaults: %w", err)
		}
	}
	return internal.OpenAPIV3Schema, s, nil
}

// keepStatus carries the stored status over an update of the main
// resource, which may not change it when the status subresource is served.
func keepStatus(obj, old runtime.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	o, ok := old.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if st, ok := o.Object["status"]; ok {
		u.Object["status"] = runtime.DeepCopyJSONValue(st)
	} else {
		delete(u.Object, "status")
	}
}

// prune drops what s does not know from obj and metadata fields ObjectMeta
// does not have, returning the dropped paths, as upstream's decoder does
// (s nil: only metadata is pruned).
func prune(obj runtime.Object, gk schema.GroupKind, s *structuralschema.Structural) []string {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	kind, foundKind, _ := unstructured.NestedString(u.Object, "kind")
	apiVersion, foundAPIVersion, _ := unstructured.NestedString(u.Object, "apiVersion")
	objectMeta, foundMeta, paths, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{
		ReturnUnknownFieldPaths: true,
	})
	if err != nil {
		// Malformed metadata: validation reports it.
		foundMeta = false
		paths = nil
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err == nil && gv.Group == gk.Group && kind == gk.Kind {
		if s != nil {
			paths = append(paths, structuralpruning.PruneWithOptions(u.Object, s, true,
				structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, s)
		}
		if cerr, more := schemaobjectmeta.CoerceWithOptions(nil, u.Object, s, false, schemaobjectmeta.CoerceOptions{
			ReturnUnknownFieldPaths: true,
		}); cerr == nil {
			paths = append(paths, more...)
		}
	}
	if foundKind {
		u.SetKind(kind)
	}
	if foundAPIVersion {
		u.SetAPIVersion(apiVersion)
	}
	if foundMeta {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
			return paths
		}
	}
	return paths
}
