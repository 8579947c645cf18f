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

// parseRequestInfo reads a path under /api/v1 or /apis/<group>/<version>
// as upstream's request-info parser does: a trailing slash is ignored, the
// deprecated /watch/ path prefix makes a watch, and a GET of a collection
// is a watch when the query's watch parameter decodes as true (watch=1,
// watch=true, watch=True ...). ok is false when the path is not a
// resource path this server serves.
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
	if parts[0] == "watch" {
		if len(parts) < 2 {
			return ri, false
		}
		ri.Verb = "watch"
		parts = parts[1:]
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
	if len(parts) > 3 || (ri.Verb == "watch" && (ri.Subresource != "" || r.Method != http.MethodGet)) {
		return ri, false
	}
	if ri.Verb == "" {
		ri.Verb = verbOf(r, ri.Name)
	}
	return ri, true
}

// verbOf is the verb of a request without the /watch/ prefix.
func verbOf(r *http.Request, name string) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case name == "" && isWatch(r.URL.Query()):
			return "watch"
		case name == "":
			return "list"
		}
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if name == "" {
			return "deletecollection"
		}
		return "delete"
	}
	return strings.ToLower(r.Method)
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
