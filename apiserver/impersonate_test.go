package apiserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// impersonationGrants are what the fake authorizer lets "admin"
// impersonate, as "group/resource/subresource/namespace/name".
var impersonationGrants = map[string]bool{
	"/users///bob":                                   true,
	"/users///system:anonymous":                      true,
	"/groups///dev":                                  true,
	"/groups///system:authenticated":                 true,
	"/groups///system:unauthenticated":               true,
	"/serviceaccounts//ns/builder":                   true,
	"authentication.k8s.io/uids///1234":              true,
	"authentication.k8s.io/userextras/scopes//view":  true,
	"authentication.k8s.io/userextras/scopes//edit":  true,
	"authentication.k8s.io/userextras/a/b//escaped":  true,
	"authentication.k8s.io/userextras/scopes//admin": false,
}

var impersonationAuthorizer = authorizerFunc(func(a auth.Attributes) (auth.Decision, string, error) {
	if a.Verb != "impersonate" || !a.ResourceRequest || a.User.Name != "admin" {
		return auth.NoOpinion, "", nil
	}
	if a.APIVersion != "" && a.APIVersion != "v1" {
		return auth.NoOpinion, "", nil
	}
	key := a.APIGroup + "/" + a.Resource + "/" + a.Subresource + "/" + a.Namespace + "/" + a.Name
	if impersonationGrants[key] {
		return auth.Allow, "", nil
	}
	return auth.NoOpinion, "", nil
})

func TestImpersonate(t *testing.T) {
	t.Parallel()
	s := testServer(Config{Authorizer: impersonationAuthorizer})
	// The handler behind the filter answers with the user it sees and
	// whether any impersonation header got through.
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked := false
		for name := range r.Header {
			leaked = leaked || strings.HasPrefix(name, "Impersonate-")
		}
		writeJSON(w, http.StatusOK, map[string]any{"user": auth.UserFrom(r.Context()), "leaked": leaked})
	})
	h := s.impersonate(echo)
	admin := auth.User{Name: "admin", Groups: []string{auth.AllAuthenticated}}

	cases := []struct {
		name     string
		caller   auth.User
		headers  [][2]string
		wantCode int
		want     auth.User // on 200
		wantMsg  string    // on an error
	}{
		{name: "no headers", caller: admin, wantCode: 200, want: admin},
		{name: "user", caller: admin, headers: [][2]string{{"Impersonate-User", "bob"}}, wantCode: 200,
			want: auth.User{Name: "bob", Groups: []string{auth.AllAuthenticated}}},
		{name: "user and groups", caller: admin, headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Group", "dev"}, {"Impersonate-Group", "system:authenticated"}}, wantCode: 200,
			want: auth.User{Name: "bob", Groups: []string{"dev", auth.AllAuthenticated}}},
		{name: "unauthenticated group keeps system:authenticated out", caller: admin, headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Group", "system:unauthenticated"}}, wantCode: 200,
			want: auth.User{Name: "bob", Groups: []string{auth.AllUnauthenticated}}},
		{name: "anonymous", caller: admin, headers: [][2]string{{"Impersonate-User", "system:anonymous"}}, wantCode: 200,
			want: auth.User{Name: auth.AnonymousUser, Groups: []string{auth.AllUnauthenticated}}},
		{name: "uid and extra", caller: admin, headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Uid", "1234"}, {"Impersonate-Extra-Scopes", "view"}, {"Impersonate-Extra-Scopes", "edit"}, {"Impersonate-Extra-A%2fb", "escaped"}}, wantCode: 200,
			want: auth.User{Name: "bob", UID: "1234", Groups: []string{auth.AllAuthenticated}, Extra: map[string][]string{"scopes": {"view", "edit"}, "a/b": {"escaped"}}}},
		{name: "service account", caller: admin, headers: [][2]string{{"Impersonate-User", "system:serviceaccount:ns:builder"}}, wantCode: 200,
			want: auth.User{Name: "system:serviceaccount:ns:builder", Groups: []string{auth.ServiceAccountsGroup, "system:serviceaccounts:ns", auth.AllAuthenticated}}},
		{name: "service account with groups", caller: admin, headers: [][2]string{{"Impersonate-User", "system:serviceaccount:ns:builder"}, {"Impersonate-Group", "dev"}}, wantCode: 200,
			want: auth.User{Name: "system:serviceaccount:ns:builder", Groups: []string{"dev", auth.AllAuthenticated}}},

		{name: "user refused", caller: admin, headers: [][2]string{{"Impersonate-User", "carol"}}, wantCode: 403,
			wantMsg: `users \"carol\" is forbidden: User \"admin\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope`},
		{name: "not an impersonator", caller: auth.User{Name: "bob"}, headers: [][2]string{{"Impersonate-User", "bob"}}, wantCode: 403,
			wantMsg: `users \"bob\" is forbidden: User \"bob\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope`},
		{name: "group refused", caller: admin, headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Group", "system:masters"}}, wantCode: 403,
			wantMsg: `groups \"system:masters\" is forbidden: User \"admin\" cannot impersonate resource \"groups\" in API group \"\" at the cluster scope`},
		{name: "service account refused", caller: admin, headers: [][2]string{{"Impersonate-User", "system:serviceaccount:kube-system:root"}}, wantCode: 403,
			wantMsg: `serviceaccounts \"root\" is forbidden: User \"admin\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"kube-system\"`},
		// Not a valid account name: asked for as a user, as upstream.
		{name: "invalid service account name is a user", caller: admin, headers: [][2]string{{"Impersonate-User", "system:serviceaccount:NS:builder"}}, wantCode: 403,
			wantMsg: `users \"system:serviceaccount:NS:builder\" is forbidden: User \"admin\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope`},
		{name: "extra refused", caller: admin, headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Extra-Scopes", "admin"}}, wantCode: 403,
			wantMsg: `userextras.authentication.k8s.io \"admin\" is forbidden: User \"admin\" cannot impersonate resource \"userextras/scopes\" in API group \"authentication.k8s.io\" at the cluster scope`},
		{name: "uid refused", caller: admin, headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Uid", "0"}}, wantCode: 403,
			wantMsg: `uids.authentication.k8s.io \"0\" is forbidden: User \"admin\" cannot impersonate resource \"uids\" in API group \"authentication.k8s.io\" at the cluster scope`},
		{name: "groups without a user", caller: admin, headers: [][2]string{{"Impersonate-Group", "dev"}}, wantCode: 400,
			wantMsg: `requested [{Group  dev    }] without impersonating a user`},
		{name: "uid without a user", caller: admin, headers: [][2]string{{"Impersonate-Uid", "1234"}}, wantCode: 400,
			wantMsg: `without impersonating a user`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
			for _, kv := range tc.headers {
				req.Header.Add(kv[0], kv[1])
			}
			req = req.WithContext(auth.WithUser(req.Context(), tc.caller))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", rec.Code, tc.wantCode, body)
			}
			if tc.wantCode != http.StatusOK {
				if !strings.Contains(string(body), tc.wantMsg) {
					t.Errorf("body %s, want message %s", body, tc.wantMsg)
				}
				return
			}
			var got struct {
				User   auth.User
				Leaked bool
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.User, tc.want) {
				t.Errorf("user %+v, want %+v", got.User, tc.want)
			}
			if got.Leaked {
				t.Error("impersonation headers reached the handler")
			}
		})
	}
}
