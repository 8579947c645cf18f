// Package openapi builds the OpenAPI v2 and v3 documents kubebus serves at
// /openapi/v2 and /openapi/v3, by reflection over the Go types of the served
// kinds (k8s.io/api and apimachinery structs).
//
// Schemas follow what kubectl and client-go read from a Kubernetes server:
// upstream definition names (io.k8s.api.apps.v1.Deployment), descriptions
// from each type's SwaggerDoc method, x-kubernetes-group-version-kind on
// kinds and operations, and the patch strategy and merge key struct tags
// kubectl apply needs for strategic merge patches. Paths carry the
// operations, actions and query parameters (fieldValidation among them)
// that kubectl's field-validation check looks for.
//
// The caller builds the documents once at startup with Build and mounts them
// with Register; serving is read-only and needs no locking.
package openapi
