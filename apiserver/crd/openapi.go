package crd

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/spec3"
)

// OpenAPIV3 returns the OpenAPI v3 document (JSON) of one served version of
// crd, as upstream serves it at /openapi/v3/apis/<group>/<version>: the
// resource's and subresources' paths, and components holding the custom
// resource's schema and the definitions it references (ObjectMeta, ...).
func OpenAPIV3(crd *apiextensionsv1.CustomResourceDefinition, version string) ([]byte, error) {
	served := false
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			served = v.Served
		}
	}
	if !served {
		return nil, fmt.Errorf("version %q of %s is not served", version, crd.Name)
	}
	doc, err := builder.BuildOpenAPIV3(crd, version, builder.Options{V2: false, IncludeSelectableFields: true})
	if err != nil {
		return nil, fmt.Errorf("building OpenAPI v3 of %s/%s: %w", crd.Name, version, err)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding OpenAPI v3 of %s/%s: %w", crd.Name, version, err)
	}
	return out, nil
}

// typeConverter builds the server-side-apply type converter of crd's
// versions from their OpenAPI models, as upstream's crdHandler does, so
// list-type and map-type markers are honoured.
func typeConverter(crd *apiextensionsv1.CustomResourceDefinition) (managedfields.TypeConverter, error) {
	var specs []*spec3.OpenAPI
	for _, v := range crd.Spec.Versions {
		s, err := builder.BuildOpenAPIV3(crd, v.Name, builder.Options{})
		if err != nil {
			return nil, fmt.Errorf("building OpenAPI models of %s/%s: %w", crd.Name, v.Name, err)
		}
		specs = append(specs, s)
	}
	merged, err := builder.MergeSpecsV3(specs...)
	if err != nil {
		return nil, fmt.Errorf("merging OpenAPI models of %s: %w", crd.Name, err)
	}
	if merged.Components == nil || len(merged.Components.Schemas) == 0 {
		return nil, fmt.Errorf("no OpenAPI models for %s", crd.Name)
	}
	tc, err := managedfields.NewTypeConverter(merged.Components.Schemas, crd.Spec.PreserveUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("building type converter of %s: %w", crd.Name, err)
	}
	return tc, nil
}
