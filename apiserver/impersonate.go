package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// impersonate is upstream's impersonation filter: a request carrying
// Impersonate-User (and optionally Impersonate-Group, repeatable,
// Impersonate-Uid and Impersonate-Extra-<key>) runs as that user once the
// authenticated user is authorized to impersonate each value requested
// (verb impersonate on users, groups, serviceaccounts, uids and
// userextras/<key>). A refusal is a 403; groups, uid or extra without a
// user is a 400. It runs after authenticate.
func (s *Server) impersonate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests, err := impersonationRequests(r.Header)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if len(requests) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		ctx := r.Context()
		u, err := impersonatedUser(ctx, s.cfg.Authorizer, auth.UserFrom(ctx), requests, len(r.Header.Values(authnv1.ImpersonateGroupHeader)) > 0)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.log.DebugContext(ctx, "impersonating", "user", auth.UserFrom(ctx).Name, "as", u.Name, "groups", u.Groups)
		r = r.Clone(auth.WithUser(ctx, u))
		for name := range r.Header {
			if strings.HasPrefix(name, authnv1.ImpersonateUserExtraHeaderPrefix) {
				r.Header.Del(name)
			}
		}
		r.Header.Del(authnv1.ImpersonateUserHeader)
		r.Header.Del(authnv1.ImpersonateGroupHeader)
		r.Header.Del(authnv1.ImpersonateUIDHeader)
		next.ServeHTTP(w, r)
	})
}

// impersonationRequests lists what the headers ask to act as, as upstream
// does with object references: a ServiceAccount or a User, then Groups,
// UserExtras (FieldPath is the key) and a UID.
func impersonationRequests(h http.Header) ([]corev1.ObjectReference, error) {
	var reqs []corev1.ObjectReference
	name := h.Get(authnv1.ImpersonateUserHeader)
	if name != "" {
		if ns, sa, ok := auth.SplitServiceAccountUser(name); ok {
			reqs = append(reqs, corev1.ObjectReference{Kind: "ServiceAccount", Namespace: ns, Name: sa})
		} else {
			reqs = append(reqs, corev1.ObjectReference{Kind: "User", Name: name})
		}
	}
	others := false
	for _, g := range h.Values(authnv1.ImpersonateGroupHeader) {
		others = true
		reqs = append(reqs, corev1.ObjectReference{Kind: "Group", Name: g})
	}
	// Header order is random; sort the keys so checks run in a fixed order.
	var keys []string
	for header := range h {
		if strings.HasPrefix(header, authnv1.ImpersonateUserExtraHeaderPrefix) {
			keys = append(keys, header)
		}
	}
	slices.Sort(keys)
	for _, header := range keys {
		others = true
		key := strings.ToLower(header[len(authnv1.ImpersonateUserExtraHeaderPrefix):])
		if unescaped, err := url.PathUnescape(key); err == nil {
			key = unescaped
		}
		for _, v := range h[header] {
			reqs = append(reqs, corev1.ObjectReference{Kind: "UserExtra", APIVersion: authnv1.SchemeGroupVersion.String(), Name: v, FieldPath: key})
		}
	}
	if uid := h.Get(authnv1.ImpersonateUIDHeader); uid != "" {
		others = true
		reqs = append(reqs, corev1.ObjectReference{Kind: "UID", APIVersion: authnv1.SchemeGroupVersion.String(), Name: uid})
	}
	if others && name == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("requested %v without impersonating a user", reqs))
	}
	return reqs, nil
}

// impersonatedUser authorizes requestor for each request and returns the
// user they make. Without Impersonate-Group headers a service account gets
// its fixed groups; every user but the anonymous one gets
// system:authenticated unless system:authenticated or
// system:unauthenticated was asked for, and the anonymous user
// system:unauthenticated.
func impersonatedUser(ctx context.Context, az auth.Authorizer, requestor auth.User, reqs []corev1.ObjectReference, groupsSpecified bool) (auth.User, error) {
	var u auth.User
	for _, req := range reqs {
		a := auth.Attributes{User: requestor, Verb: "impersonate", ResourceRequest: true, Name: req.Name}
		switch req.Kind {
		case "ServiceAccount":
			a.Resource, a.Namespace = "serviceaccounts", req.Namespace
			u.Name = auth.ServiceAccountUser(req.Namespace, req.Name)
			if !groupsSpecified {
				u.Groups = []string{auth.ServiceAccountsGroup, auth.ServiceAccountGroupPfx + req.Namespace}
			}
		case "User":
			a.Resource = "users"
			u.Name = req.Name
		case "Group":
			a.Resource = "groups"
			u.Groups = append(u.Groups, req.Name)
		case "UserExtra":
			a.APIGroup, a.APIVersion = authnv1.GroupName, authnv1.SchemeGroupVersion.Version
			a.Resource, a.Subresource = "userextras", req.FieldPath
			if u.Extra == nil {
				u.Extra = map[string][]string{}
			}
			u.Extra[req.FieldPath] = append(u.Extra[req.FieldPath], req.Name)
		case "UID":
			a.APIGroup, a.APIVersion = authnv1.GroupName, authnv1.SchemeGroupVersion.Version
			a.Resource = "uids"
			u.UID = req.Name
		}
		d, reason, err := az.Authorize(ctx, a)
		if err != nil || d != auth.Allow {
			return auth.User{}, forbidden(a, reason)
		}
	}
	if u.Name == auth.AnonymousUser {
		if !u.InGroup(auth.AllUnauthenticated) {
			u.Groups = append(u.Groups, auth.AllUnauthenticated)
		}
	} else if !u.InGroup(auth.AllAuthenticated) && !u.InGroup(auth.AllUnauthenticated) {
		u.Groups = append(u.Groups, auth.AllAuthenticated)
	}
	return u, nil
}
