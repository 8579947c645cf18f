package apiserver

import (
	"net/http"
	"strings"
)

// RequestInfo is what a resource request path and method say.
type RequestInfo struct {
	Group, Version string
	Namespace      string
	Resource       string
	Name           string
	Subresource    string
	// Verb is get, list, watch, create, update, patch, delete or deletecollection.
	Verb string
}

// namespaceSubresources are the subresources of a namespace object itself,
// so /namespaces/foo/status is not the resource "status" in namespace foo.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// parseRequestInfo reads a path under /api/v1 or /apis/<group>/<version>.
// ok is false when the path is not a resource path.
func parseRequestInfo(r *http.Request) (RequestInfo, bool) {
	parts := splitPath(r.URL.Path)
	var ri RequestInfo
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		ri.Version = parts[1]
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		ri.Group, ri.Version = parts[1], parts[2]
		parts = parts[3:]
	default:
		return ri, false
	}
	if parts[0] == "namespaces" && len(parts) > 1 {
		ri.Namespace = parts[1]
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
		} else {
			ri.Namespace = ""
		}
	}
	ri.Resource = parts[0]
	if len(parts) > 1 {
		ri.Name = parts[1]
	}
	if len(parts) > 2 {
		ri.Subresource = parts[2]
	}
	if len(parts) > 3 {
		return ri, false
	}
	q := r.URL.Query()
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case ri.Name == "" && isTrue(q.Get("watch")):
			ri.Verb = "watch"
		case ri.Name == "":
			ri.Verb = "list"
		default:
			ri.Verb = "get"
		}
	case http.MethodPost:
		ri.Verb = "create"
	case http.MethodPut:
		ri.Verb = "update"
	case http.MethodPatch:
		ri.Verb = "patch"
	case http.MethodDelete:
		if ri.Name == "" {
			ri.Verb = "deletecollection"
		} else {
			ri.Verb = "delete"
		}
	default:
		ri.Verb = strings.ToLower(r.Method)
	}
	return ri, true
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func isTrue(s string) bool { return s == "true" || s == "1" }
