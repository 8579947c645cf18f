package apiserver

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// isResourcePath reports whether a path names resources (under /api/<v>/
// or /apis/<group>/<version>/), which serveResource authorizes with
// resource attributes; everything else (discovery, health, metrics,
// OpenAPI, the tap) is a non-resource request.
func isResourcePath(path string) bool {
	parts := splitPath(path)
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		return true
	case len(parts) >= 4 && parts[0] == "apis":
		return true
	}
	return false
}

// authorizeNonResource authorizes every request that is not a resource
// request by its path and lower-case method, as upstream's
// authorization filter does (RBAC's nonResourceURLs). Resource requests
// pass through to serveResource.
func (s *Server) authorizeNonResource(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isResourcePath(r.URL.Path) || slices.Contains(s.cfg.SelfAuthorized, r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		a := auth.Attributes{User: auth.UserFrom(r.Context()), Verb: strings.ToLower(r.Method), Path: r.URL.Path}
		if !s.authorized(w, r, a) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorized asks the authorizer about a; when the answer is not Allow it
// writes the error (403 with upstream's message, or 500) and returns false.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request, a auth.Attributes) bool {
	start := time.Now()
	dec, reason, err := s.cfg.Authorizer.Authorize(r.Context(), a)
	s.cfg.Metrics.observeAuthorization(dec, err, time.Since(start))
	if dec == auth.Allow {
		return true
	}
	if err != nil && dec != auth.Deny {
		s.log.WarnContext(r.Context(), "authorizer error", "user", a.User.Name, "verb", a.Verb, "resource", a.Resource, "path", a.Path, "err", err)
		if reason == "" {
			reason = "authorizer error"
		}
	}
	s.writeError(w, r, forbidden(a, reason))
	return false
}

// forbidden is the 403 Status upstream answers a refused request with.
func forbidden(a auth.Attributes, reason string) error {
	msg := forbiddenMessage(a)
	if reason != "" {
		msg += ": " + reason
	}
	gr := schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}
	return apierrors.NewForbidden(gr, a.Name, errors.New(msg))
}

// forbiddenMessage says who cannot do what, in upstream's words.
func forbiddenMessage(a auth.Attributes) string {
	if !a.ResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", a.User.Name, a.Verb, a.Path)
	}
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", a.User.Name, a.Verb, res, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", a.User.Name, a.Verb, res, a.APIGroup)
}
