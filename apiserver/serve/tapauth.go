package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/bus/tap"
)

// authorizedTap serves the tap endpoint to users who may list and watch
// what they ask it for, as a list with watch=true would be authorized: the
// resource of the resource filter (every resource, "*" in every group,
// when there is none) in the namespace of the namespace filter (every
// namespace when none). Secret data never reaches it: the bus carries
// Secrets as metadata only.
func authorizedTap(authz auth.Authorizer, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		group, resource, err := tap.ParseResource(q.Get("resource"))
		if err != nil {
			writeStatus(w, apierrors.NewBadRequest(err.Error()))
			return
		}
		if resource == "" {
			group, resource = "*", "*"
		}
		if authorizeListWatch(w, r, authz, group, resource, q.Get("namespace"), "the tap") {
			next.ServeHTTP(w, r)
		}
	})
}

// authorizedTapLag serves the tap's lag endpoint to users who may list and
// watch every resource ("*" in every group, "*") in every namespace: the
// consumers' filters and positions tell about every resource.
func authorizedTapLag(authz auth.Authorizer, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if authorizeListWatch(w, r, authz, "*", "*", "", "the tap's consumer lag") {
			next.ServeHTTP(w, r)
		}
	})
}

// authorizeListWatch reports whether the request's user may list and
// watch resource in group in namespace ("" for every namespace), and
// otherwise writes a Forbidden Status naming what (the endpoint) refused.
func authorizeListWatch(w http.ResponseWriter, r *http.Request, authz auth.Authorizer, group, resource, namespace, what string) bool {
	u := auth.UserFrom(r.Context())
	for _, verb := range []string{"list", "watch"} {
		a := auth.Attributes{User: u, Verb: verb, ResourceRequest: true, APIGroup: group, APIVersion: "*", Resource: resource, Namespace: namespace}
		dec, reason, err := authz.Authorize(r.Context(), a)
		if dec == auth.Allow {
			continue
		}
		msg := fmt.Sprintf("User %q cannot %s resource %q in API group %q through %s", u.Name, verb, resource, group, what)
		if reason != "" {
			msg += ": " + reason
		} else if err != nil {
			msg += ": " + err.Error()
		}
		writeStatus(w, apierrors.NewForbidden(schema.GroupResource{Group: group, Resource: resource}, "", errors.New(msg)))
		return false
	}
	return true
}

// writeStatus writes an API error as a JSON Status.
func writeStatus(w http.ResponseWriter, err error) {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		se = apierrors.NewInternalError(err)
	}
	st := se.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(&st)
}
