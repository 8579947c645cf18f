package crd

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// cronTabYAML is the CRD the tests serve: two versions, status and scale,
// printer columns, defaults, a CEL rule and a transition rule.
const cronTabYAML = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    listKind: CronTabList
    shortNames: [ct]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
    additionalPrinterColumns:
    - name: Spec
      type: string
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema: &schema
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: self.replicas <= 10
              message: replicas must be at most 10
            properties:
              cronSpec:
                type: string
                pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'
              image:
                type: string
              replicas:
                type: integer
                minimum: 1
                default: 1
              immutable:
                type: string
                x-kubernetes-validations:
                - rule: self == oldSelf
                  message: immutable is immutable
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
              nested:
                type: object
                default: {}
                properties:
                  object:
                    type: object
                    default: {mode: auto}
                    properties:
                      mode: {type: string}
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
  - name: v1beta1
    served: true
    storage: false
    subresources:
      status: {}
    schema:
      openAPIV3Schema: *schema
`

// cronTab returns a fresh, defaulted copy of the test CRD.
func cronTab(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	c := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(cronTabYAML), c); err != nil {
		t.Fatalf("decoding fixture: %v", err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(c)
	return c
}

// cr decodes a custom resource from YAML as the server does from JSON.
func cr(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("yaml: %v", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatalf("decoding object: %v", err)
	}
	return u
}
