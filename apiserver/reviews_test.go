package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/resource"
)

// authorizerFunc adapts a function to auth.Authorizer.
type authorizerFunc func(auth.Attributes) (auth.Decision, string, error)

func (f authorizerFunc) Authorize(_ context.Context, a auth.Attributes) (auth.Decision, string, error) {
	return f(a)
}

// reviewAuthorizer allows alice to get pods, denies her secrets outright,
// allows her GET /healthz, and has no opinion on the rest.
var reviewAuthorizer = authorizerFunc(func(a auth.Attributes) (auth.Decision, string, error) {
	switch {
	case a.User.Name != "alice":
	case !a.ResourceRequest && a.Verb == "get" && a.Path == "/healthz":
		return auth.Allow, "healthz for all", nil
	case a.Resource == "pods" && a.Verb == "get" && a.APIVersion == "*":
		return auth.Allow, "pod reader in " + a.Namespace, nil
	case a.Resource == "secrets":
		return auth.Deny, "secrets are off limits", nil
	case a.Resource == "broken":
		return auth.NoOpinion, "", errors.New("webhook down")
	}
	return auth.NoOpinion, "", nil
})

type ruleResolverFunc func(auth.User, string) ([]rbacv1.PolicyRule, bool, error)

func (f ruleResolverFunc) RulesFor(_ context.Context, u auth.User, ns string) ([]rbacv1.PolicyRule, bool, error) {
	return f(u, ns)
}

type tokenReviewerFunc func(token string, audiences []string) (auth.User, []string, bool, error)

func (f tokenReviewerFunc) AuthenticateTokenAudiences(_ context.Context, token string, audiences []string) (auth.User, []string, bool, error) {
	return f(token, audiences)
}

// testServer is a Server without storage: enough for the handlers that
// answer without it.
func testServer(cfg Config) *Server {
	if cfg.Authorizer == nil {
		cfg.Authorizer = auth.AlwaysAllow{}
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	t, err := newTable(resource.Builtin())
	if err != nil {
		panic(err)
	}
	return &Server{cfg: cfg, log: slog.New(slog.DiscardHandler), table: t}
}

// reviewHandler serves reviews as the caller u, the way dispatch does.
func reviewHandler(s *Server, u auth.User) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(auth.WithUser(r.Context(), u))
		ri, ok := parseRequestInfo(r)
		res, err := s.lookup(ri)
		switch {
		case !ok:
			err = apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path)
		case err == nil:
			err = s.serveReview(w, r, ri, res)
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}

func alice() auth.User {
	return auth.User{Name: "alice", UID: "u-1", Groups: []string{"dev", auth.AllAuthenticated}, Extra: map[string][]string{"scopes": {"a", "b"}}}
}

func TestServeReview(t *testing.T) {
	t.Parallel()
	s := testServer(Config{
		Authorizer: reviewAuthorizer,
		RuleResolver: ruleResolverFunc(func(u auth.User, ns string) ([]rbacv1.PolicyRule, bool, error) {
			if ns == "broken" {
				return nil, true, errors.New("role r not found")
			}
			return []rbacv1.PolicyRule{
				{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{u.Name}},
				{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}},
			}, false, nil
		}),
		TokenReviewer: tokenReviewerFunc(func(token string, audiences []string) (auth.User, []string, bool, error) {
			switch token {
			case "good":
				if len(audiences) > 0 && audiences[0] == "vault" {
					return auth.User{Name: "bob"}, nil, true, nil // a reviewer that ignores audiences
				}
				return auth.User{Name: "bob", UID: "u-2", Groups: []string{"ops"}, Extra: map[string][]string{"pod": {"p"}}}, audiences, true, nil
			case "bad":
				return auth.User{}, nil, false, errors.New("token has expired")
			}
			return auth.User{}, nil, false, nil
		}),
	})
	srv := httptest.NewServer(reviewHandler(s, alice()))
	t.Cleanup(srv.Close)

	cases := []struct {
		name, path, body string
		contentType      string
		wantCode         int
		want             string // JSON the response's status (or a Status's message) must contain
	}{
		{name: "ssar allowed", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			body:     `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"namespace":"ns","verb":"get","resource":"pods"}}}`,
			wantCode: 201, want: `"status":{"allowed":true,"reason":"pod reader in ns"}`},
		{name: "ssar denied", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			body:     `{"spec":{"resourceAttributes":{"verb":"get","resource":"secrets"}}}`,
			wantCode: 201, want: `"status":{"allowed":false,"denied":true,"reason":"secrets are off limits"}`},
		{name: "ssar no opinion", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			body:     `{"spec":{"resourceAttributes":{"verb":"delete","resource":"pods"}}}`,
			wantCode: 201, want: `"status":{"allowed":false}`},
		{name: "ssar evaluation error", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			body:     `{"spec":{"resourceAttributes":{"verb":"get","resource":"broken"}}}`,
			wantCode: 201, want: `"status":{"allowed":false,"evaluationError":"webhook down"}`},
		{name: "ssar non-resource", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			body:     `{"spec":{"nonResourceAttributes":{"verb":"get","path":"/healthz"}}}`,
			wantCode: 201, want: `"status":{"allowed":true,"reason":"healthz for all"}`},
		{name: "ssar yaml", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", contentType: "application/yaml",
			body:     "apiVersion: authorization.k8s.io/v1\nkind: SelfSubjectAccessReview\nspec:\n  resourceAttributes:\n    verb: get\n    resource: pods\n",
			wantCode: 201, want: `"allowed":true`},
		{name: "ssar without attributes", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			body:     `{"spec":{}}`,
			wantCode: 422, want: `SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified`},
		{name: "ssar with both", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			body:     `{"spec":{"resourceAttributes":{"verb":"get"},"nonResourceAttributes":{"verb":"get"}}}`,
			wantCode: 422, want: `cannot be specified in combination with resourceAttributes`},
		{name: "ssar with a name", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			body:     `{"metadata":{"name":"x"},"spec":{"resourceAttributes":{"verb":"get"}}}`,
			wantCode: 422, want: `metadata: Invalid value:`},
		{name: "wrong kind", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			body:     `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{}}`,
			wantCode: 400, want: `the kind in the data (SubjectAccessReview) does not match the expected kind (SelfSubjectAccessReview)`},
		{name: "wrong version", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			body:     `{"apiVersion":"authorization.k8s.io/v1beta1","kind":"SelfSubjectAccessReview","spec":{}}`,
			wantCode: 400, want: `the API version in the data (authorization.k8s.io/v1beta1) does not match the expected API version (authorization.k8s.io/v1)`},
		{name: "not json", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			body: `{"spec":`, wantCode: 400, want: `the body of the request could not be decoded`},

		{name: "sar for alice", path: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
			body:     `{"spec":{"user":"alice","resourceAttributes":{"namespace":"ns","verb":"get","resource":"pods"}}}`,
			wantCode: 201, want: `"status":{"allowed":true,"reason":"pod reader in ns"}`},
		{name: "sar for bob", path: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
			body:     `{"spec":{"user":"bob","groups":["dev"],"resourceAttributes":{"verb":"get","resource":"pods"}}}`,
			wantCode: 201, want: `"status":{"allowed":false}`},
		{name: "sar without a subject", path: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
			body:     `{"spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`,
			wantCode: 422, want: `spec.user: Invalid value: \"\": at least one of user or group must be specified`},

		{name: "lsar", path: "/apis/authorization.k8s.io/v1/namespaces/ns/localsubjectaccessreviews",
			body:     `{"spec":{"user":"alice","resourceAttributes":{"namespace":"ns","verb":"get","resource":"pods"}}}`,
			wantCode: 201, want: `"status":{"allowed":true,"reason":"pod reader in ns"}`},
		{name: "lsar attributes in another namespace", path: "/apis/authorization.k8s.io/v1/namespaces/ns/localsubjectaccessreviews",
			body:     `{"spec":{"user":"alice","resourceAttributes":{"namespace":"other","verb":"get","resource":"pods"}}}`,
			wantCode: 422, want: `spec.resourceAttributes.namespace: Invalid value: \"other\": must match metadata.namespace`},
		{name: "lsar body in another namespace", path: "/apis/authorization.k8s.io/v1/namespaces/ns/localsubjectaccessreviews",
			body:     `{"metadata":{"namespace":"other"},"spec":{"user":"alice","resourceAttributes":{"namespace":"other","verb":"get","resource":"pods"}}}`,
			wantCode: 400, want: `the namespace of the provided object does not match the namespace sent on the request`},
		{name: "lsar non-resource", path: "/apis/authorization.k8s.io/v1/namespaces/ns/localsubjectaccessreviews",
			body:     `{"spec":{"user":"alice","nonResourceAttributes":{"verb":"get","path":"/healthz"}}}`,
			wantCode: 422, want: `spec.nonResourceAttributes: Invalid value: `},

		{name: "rules", path: "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
			body:     `{"spec":{"namespace":"ns"}}`,
			wantCode: 201, want: `"status":{"resourceRules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"],"resourceNames":["alice"]}],"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/healthz"]}],"incomplete":false}`},
		{name: "rules incomplete", path: "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
			body:     `{"spec":{"namespace":"broken"}}`,
			wantCode: 201, want: `"status":{"resourceRules":[],"nonResourceRules":[],"incomplete":true,"evaluationError":"role r not found"}`},
		{name: "rules without namespace", path: "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
			body: `{"spec":{}}`, wantCode: 400, want: `no namespace on request`},

		{name: "token", path: "/apis/authentication.k8s.io/v1/tokenreviews",
			body:     `{"spec":{"token":"good","audiences":["api"]}}`,
			wantCode: 201, want: `"status":{"authenticated":true,"user":{"username":"bob","uid":"u-2","groups":["ops","system:authenticated"],"extra":{"pod":["p"]}},"audiences":["api"]}`},
		{name: "token unknown", path: "/apis/authentication.k8s.io/v1/tokenreviews",
			body: `{"spec":{"token":"who"}}`, wantCode: 201, want: `"status":{"user":{},"error":"invalid bearer token"}`},
		{name: "token error", path: "/apis/authentication.k8s.io/v1/tokenreviews",
			body: `{"spec":{"token":"bad"}}`, wantCode: 201, want: `"status":{"user":{},"error":"token has expired"}`},
		{name: "token status forged", path: "/apis/authentication.k8s.io/v1/tokenreviews",
			body: `{"spec":{"token":"who"},"status":{"authenticated":true}}`, wantCode: 201, want: `"status":{"user":{},"error":"invalid bearer token"}`},
		{name: "token audience mismatch", path: "/apis/authentication.k8s.io/v1/tokenreviews",
			body: `{"spec":{"token":"good","audiences":["vault"]}}`, wantCode: 500, want: `error validating audiences`},
		{name: "token missing", path: "/apis/authentication.k8s.io/v1/tokenreviews",
			body: `{"spec":{}}`, wantCode: 400, want: `token is required for TokenReview in authentication`},

		{name: "whoami", path: "/apis/authentication.k8s.io/v1/selfsubjectreviews",
			body:     `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`,
			wantCode: 201, want: `"status":{"userInfo":{"username":"alice","uid":"u-1","groups":["dev","system:authenticated"],"extra":{"scopes":["a","b"]}}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(http.MethodPost, srv.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantCode || !strings.Contains(string(body), tc.want) {
				t.Errorf("%d %s\nwant %d with %s", resp.StatusCode, body, tc.wantCode, tc.want)
			}
			if resp.StatusCode == http.StatusCreated {
				var tm metav1.TypeMeta
				if err := json.Unmarshal(body, &tm); err != nil || tm.Kind == "" || tm.APIVersion == "" {
					t.Errorf("answer without kind and apiVersion: %s", body)
				}
			}
		})
	}
}

// TestReviewsWithClientGo makes the calls kubectl auth can-i (with and
// without --list) and kubectl auth whoami make, through client-go, in
// JSON and in protobuf.
func TestReviewsWithClientGo(t *testing.T) {
	t.Parallel()
	s := testServer(Config{Authorizer: reviewAuthorizer})
	srv := httptest.NewServer(reviewHandler(s, alice()))
	t.Cleanup(srv.Close)
	for _, ct := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		t.Run(ct, func(t *testing.T) {
			t.Parallel()
			cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: ct}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			ssar, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
				Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{Namespace: "ns", Verb: "get", Resource: "pods"}},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !ssar.Status.Allowed || ssar.Status.Reason != "pod reader in ns" {
				t.Errorf("can-i get pods: %+v", ssar.Status)
			}
			ssrr, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authzv1.SelfSubjectRulesReview{
				Spec: authzv1.SelfSubjectRulesReviewSpec{Namespace: "default"},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !ssrr.Status.Incomplete || len(ssrr.Status.ResourceRules) != 0 {
				t.Errorf("can-i --list without a rule resolver: %+v", ssrr.Status)
			}
			ssr, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := authnv1.UserInfo{Username: "alice", UID: "u-1", Groups: []string{"dev", auth.AllAuthenticated}, Extra: map[string]authnv1.ExtraValue{"scopes": {"a", "b"}}}
			if !reflect.DeepEqual(ssr.Status.UserInfo, want) {
				t.Errorf("whoami = %+v, want %+v", ssr.Status.UserInfo, want)
			}
			tr, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: "t"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tr.Status.Authenticated {
				t.Errorf("a token review without a reviewer authenticated: %+v", tr.Status)
			}
		})
	}
}

func TestSelfSubjectReviewRoute(t *testing.T) {
	t.Parallel()
	s := testServer(Config{})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews", strings.NewReader(`{}`))
	ri, _ := parseRequestInfo(req)
	res, err := s.lookup(ri)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.serveReview(rec, req.WithContext(auth.WithUser(req.Context(), auth.Anonymous)), ri, res); err != nil {
		t.Fatal(err)
	}
	var got authnv1.SelfSubjectReview
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusCreated {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	want := authnv1.UserInfo{Username: auth.AnonymousUser, Groups: []string{auth.AllUnauthenticated}}
	if !reflect.DeepEqual(got.Status.UserInfo, want) {
		t.Errorf("anonymous whoami = %+v, want %+v", got.Status.UserInfo, want)
	}
}

// TestReviewFieldSelector: an access review's field selector reaches the
// authorizers as upstream reads it (requirements before the raw
// selector), so "may node n1 list pods with spec.nodeName=n1" is asked as
// the kubelet's list is; one it cannot read is left out.
func TestReviewFieldSelector(t *testing.T) {
	t.Parallel()
	node := fields.OneTermEqualSelector("spec.nodeName", "n1").Requirements()
	for _, tc := range []struct {
		name string
		fs   *authzv1.FieldSelectorAttributes
		want fields.Requirements
	}{
		{"none", nil, nil},
		{"raw", &authzv1.FieldSelectorAttributes{RawSelector: "spec.nodeName=n1"}, node},
		{"requirement", &authzv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
			{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn, Values: []string{"n1"}}}}, node},
		{"requirements win over raw", &authzv1.FieldSelectorAttributes{RawSelector: "spec.nodeName=n2", Requirements: []metav1.FieldSelectorRequirement{
			{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn, Values: []string{"n1"}}}}, node},
		{"not in", &authzv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
			{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpNotIn, Values: []string{"n1"}}}},
			fields.Requirements{{Operator: "!=", Field: "spec.nodeName", Value: "n1"}}},
		{"two values", &authzv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
			{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn, Values: []string{"n1", "n2"}}}}, nil},
		{"exists", &authzv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
			{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpExists}}}, nil},
		{"bad raw", &authzv1.FieldSelectorAttributes{RawSelector: "spec.nodeName"}, nil},
	} {
		a := accessAttributes(alice(), &authzv1.ResourceAttributes{Verb: "list", Resource: "pods", FieldSelector: tc.fs}, nil)
		if !reflect.DeepEqual(a.FieldSelector, tc.want) {
			t.Errorf("%s: field selector %v, want %v", tc.name, a.FieldSelector, tc.want)
		}
	}
}
