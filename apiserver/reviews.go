package apiserver

import (
	"context"
	"errors"
	"net/http"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	fieldop "k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/resource"
)

// serveReview answers a create of a CreateOnly resource: the access
// reviews (answered by the authorizer), SelfSubjectRulesReview (the rule
// resolver), TokenReview (the token reviewer) and SelfSubjectReview (the
// caller's identity). The body is decoded as every create body; nothing
// is stored; the answer is the review with its status filled, with 201,
// as upstream.
func (s *Server) serveReview(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource) error {
	out, err := negotiate(r)
	if err != nil {
		return err
	}
	obj, warnings, err := decodeBody(r, res)
	if err != nil {
		return err
	}
	if err := reviewNamespace(res, ri, obj); err != nil {
		return err
	}
	ctx := r.Context()
	u := auth.UserFrom(ctx)
	var answer runtime.Object
	switch review := obj.(type) {
	case *authzv1.SelfSubjectAccessReview:
		answer, err = selfSubjectAccessReview(ctx, s.cfg.Authorizer, u, review)
	case *authzv1.SubjectAccessReview:
		answer, err = subjectAccessReview(ctx, s.cfg.Authorizer, review)
	case *authzv1.LocalSubjectAccessReview:
		answer, err = localSubjectAccessReview(ctx, s.cfg.Authorizer, review)
	case *authzv1.SelfSubjectRulesReview:
		answer, err = selfSubjectRulesReview(ctx, s.cfg.RuleResolver, u, review)
	case *authnv1.TokenReview:
		answer, err = tokenReview(ctx, s.cfg.TokenReviewer, review)
	case *authnv1.SelfSubjectReview:
		answer = selfSubjectReview(u)
	default:
		return errMethodNotAllowed(r.Method, res.Plural)
	}
	if err != nil {
		return err
	}
	setTypeMeta(res, answer)
	v, err := render(res, out, []runtime.Object{answer}, nil, metav1.ListMeta{})
	if err != nil {
		return err
	}
	writeWarnings(w, warnings)
	writeOut(w, out, http.StatusCreated, v)
	return nil
}

// reviewNamespace fills or checks the body's namespace against the
// path's, as every create does: a namespaced review takes the path's
// namespace when it has none and must not name another; a cluster-scoped
// one loses any.
func reviewNamespace(res *resource.Resource, ri RequestInfo, obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if !res.Namespaced {
		m.SetNamespace("")
		return nil
	}
	if ri.Namespace == "" {
		return apierrors.NewBadRequest("a namespace is required to create " + res.Plural)
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(ri.Namespace)
	}
	if m.GetNamespace() != ri.Namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

var (
	selfSubjectAccessReviewKind  = authzv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview").GroupKind()
	subjectAccessReviewKind      = authzv1.SchemeGroupVersion.WithKind("SubjectAccessReview").GroupKind()
	localSubjectAccessReviewKind = authzv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview").GroupKind()
)

// selfSubjectAccessReview asks whether the caller may do what the spec says.
func selfSubjectAccessReview(ctx context.Context, az auth.Authorizer, u auth.User, review *authzv1.SelfSubjectAccessReview) (runtime.Object, error) {
	errs := validateAccessAttributes(review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes, field.NewPath("spec"))
	errs = append(errs, validateEmptyMeta(review.ObjectMeta, false)...)
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(selfSubjectAccessReviewKind, "", errs)
	}
	review.Status = decide(ctx, az, accessAttributes(u, review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes))
	return review, nil
}

// subjectAccessReview asks whether the user of the spec may do what it says.
func subjectAccessReview(ctx context.Context, az auth.Authorizer, review *authzv1.SubjectAccessReview) (runtime.Object, error) {
	errs := validateSubjectAccessSpec(review.Spec)
	errs = append(errs, validateEmptyMeta(review.ObjectMeta, false)...)
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(subjectAccessReviewKind, "", errs)
	}
	review.Status = decide(ctx, az, accessAttributes(specUser(review.Spec), review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes))
	return review, nil
}

// localSubjectAccessReview is a SubjectAccessReview confined to its
// namespace (which reviewNamespace made the path's): resource attributes
// only, in that namespace.
func localSubjectAccessReview(ctx context.Context, az auth.Authorizer, review *authzv1.LocalSubjectAccessReview) (runtime.Object, error) {
	errs := validateSubjectAccessSpec(review.Spec)
	errs = append(errs, validateEmptyMeta(review.ObjectMeta, true)...)
	if ra := review.Spec.ResourceAttributes; ra != nil && ra.Namespace != review.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("spec", "resourceAttributes", "namespace"), ra.Namespace, "must match metadata.namespace"))
	}
	if review.Spec.NonResourceAttributes != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "nonResourceAttributes"), review.Spec.NonResourceAttributes, "disallowed on this kind of request"))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(localSubjectAccessReviewKind, "", errs)
	}
	review.Status = decide(ctx, az, accessAttributes(specUser(review.Spec), review.Spec.ResourceAttributes, nil))
	return review, nil
}

func validateSubjectAccessSpec(spec authzv1.SubjectAccessReviewSpec) field.ErrorList {
	p := field.NewPath("spec")
	errs := validateAccessAttributes(spec.ResourceAttributes, spec.NonResourceAttributes, p)
	if spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(p.Child("user"), spec.User, "at least one of user or group must be specified"))
	}
	return errs
}

func validateAccessAttributes(ra *authzv1.ResourceAttributes, nra *authzv1.NonResourceAttributes, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ra != nil && nra != nil {
		errs = append(errs, field.Invalid(p.Child("nonResourceAttributes"), nra, "cannot be specified in combination with resourceAttributes"))
	}
	if ra == nil && nra == nil {
		errs = append(errs, field.Invalid(p.Child("resourceAttributes"), nra, "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	}
	return errs
}

// validateEmptyMeta refuses metadata on an access review (managed fields,
// and for a local review the namespace, aside).
func validateEmptyMeta(m metav1.ObjectMeta, local bool) field.ErrorList {
	rest := m
	rest.ManagedFields = nil
	msg := "must be empty"
	if local {
		rest.Namespace = ""
		msg = "must be empty except for namespace"
	}
	if apiequality.Semantic.DeepEqual(metav1.ObjectMeta{}, rest) {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata"), m, msg)}
}

// specUser is the user a SubjectAccessReview asks about, exactly as given:
// no groups are added.
func specUser(spec authzv1.SubjectAccessReviewSpec) auth.User {
	u := auth.User{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		u.Extra = make(map[string][]string, len(spec.Extra))
		for k, v := range spec.Extra {
			u.Extra[k] = v
		}
	}
	return u
}

// accessAttributes are the authorizer attributes of a review's spec; an
// empty version matches every version, as upstream.
func accessAttributes(u auth.User, ra *authzv1.ResourceAttributes, nra *authzv1.NonResourceAttributes) auth.Attributes {
	if ra == nil {
		return auth.Attributes{User: u, Verb: nra.Verb, Path: nra.Path}
	}
	version := ra.Version
	if version == "" {
		version = "*"
	}
	return auth.Attributes{
		User: u, Verb: ra.Verb, ResourceRequest: true, APIGroup: ra.Group, APIVersion: version,
		Resource: ra.Resource, Subresource: ra.Subresource, Namespace: ra.Namespace, Name: ra.Name,
		FieldSelector: reviewFieldSelector(ra.FieldSelector),
	}
}

// reviewFieldSelector is the field selector a review asks about, as
// upstream reads it: the requirements when there are any (In and NotIn
// of one value each, equality and inequality), else the raw selector. A
// selector it cannot read is left out, which only narrows what the
// authorizers allow (a selector can limit access, never widen it).
func reviewFieldSelector(fs *authzv1.FieldSelectorAttributes) fields.Requirements {
	if fs == nil {
		return nil
	}
	if len(fs.Requirements) == 0 {
		sel, err := fields.ParseSelector(fs.RawSelector)
		if err != nil {
			return nil
		}
		return sel.Requirements()
	}
	reqs := make(fields.Requirements, 0, len(fs.Requirements))
	for _, r := range fs.Requirements {
		if len(r.Values) != 1 {
			return nil
		}
		op := fieldop.Equals
		switch r.Operator {
		case metav1.FieldSelectorOpIn:
		case metav1.FieldSelectorOpNotIn:
			op = fieldop.NotEquals
		default:
			return nil
		}
		reqs = append(reqs, fields.Requirement{Operator: op, Field: r.Key, Value: r.Values[0]})
	}
	return reqs
}

// decide asks the authorizer; denied is only an explicit Deny (NoOpinion
// is neither allowed nor denied).
func decide(ctx context.Context, az auth.Authorizer, a auth.Attributes) authzv1.SubjectAccessReviewStatus {
	d, reason, err := az.Authorize(ctx, a)
	st := authzv1.SubjectAccessReviewStatus{Allowed: d == auth.Allow, Denied: d == auth.Deny, Reason: reason}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}

// selfSubjectRulesReview lists what the caller may do in a namespace.
// Without a resolver the answer is empty and incomplete.
func selfSubjectRulesReview(ctx context.Context, rr auth.RuleResolver, u auth.User, review *authzv1.SelfSubjectRulesReview) (runtime.Object, error) {
	if review.Spec.Namespace == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	st := authzv1.SubjectRulesReviewStatus{ResourceRules: []authzv1.ResourceRule{}, NonResourceRules: []authzv1.NonResourceRule{}, Incomplete: true}
	if rr != nil {
		rules, incomplete, err := rr.RulesFor(ctx, u, review.Spec.Namespace)
		st = rulesStatus(rules)
		st.Incomplete = incomplete
		if err != nil {
			st.EvaluationError = err.Error()
		}
	}
	return &authzv1.SelfSubjectRulesReview{Status: st}, nil
}

// rulesStatus splits policy rules into resource and non-resource rules,
// as upstream's RBAC rule resolver does.
func rulesStatus(rules []rbacv1.PolicyRule) authzv1.SubjectRulesReviewStatus {
	st := authzv1.SubjectRulesReviewStatus{ResourceRules: []authzv1.ResourceRule{}, NonResourceRules: []authzv1.NonResourceRule{}}
	for _, r := range rules {
		if len(r.Resources) > 0 {
			st.ResourceRules = append(st.ResourceRules, authzv1.ResourceRule{
				Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames,
			})
		}
		if len(r.NonResourceURLs) > 0 {
			st.NonResourceRules = append(st.NonResourceRules, authzv1.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
		}
	}
	return st
}

// errBadAudiences is upstream's answer when the reviewer accepted a token
// for none of the audiences the review asked about.
var errBadAudiences = apierrors.NewInternalError(errors.New("error validating audiences"))

// tokenReview authenticates spec.token for spec.audiences (none: the API
// server's) with every token authenticator the server has, as a request's
// bearer token is. A token nobody accepts is unauthenticated with the
// refusals as its error, or upstream's "invalid bearer token" when none
// said why. Without a reviewer every token is unauthenticated.
func tokenReview(ctx context.Context, tr TokenReviewer, review *authnv1.TokenReview) (runtime.Object, error) {
	if review.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	review.Status = authnv1.TokenReviewStatus{}
	if tr == nil {
		return review, nil
	}
	u, matched, ok, err := tr.AuthenticateTokenAudiences(ctx, review.Spec.Token, review.Spec.Audiences)
	review.Status.Authenticated = ok && err == nil
	if !ok && err == nil {
		err = auth.ErrInvalidToken
	}
	if err != nil {
		review.Status.Error = err.Error()
	}
	if !review.Status.Authenticated {
		return review, nil
	}
	if len(review.Spec.Audiences) > 0 && !intersects(review.Spec.Audiences, matched) {
		return nil, errBadAudiences
	}
	review.Status.User = userInfo(u.WithAuthenticated())
	review.Status.Audiences = matched
	return review, nil
}

func intersects(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

// userInfo is u as the authentication API shows a user.
func userInfo(u auth.User) authnv1.UserInfo {
	info := authnv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		info.Extra = make(map[string]authnv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			info.Extra[k] = v
		}
	}
	return info
}
