package serviceaccount

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestClaimsShape(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	kid, err := keyID(&testKey(t, 0).PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	podNode := map[string]any{"name": "n1", "uid": "node-uid-1"}
	tests := []struct {
		name  string
		bound metav1.Object
		want  map[string]any // the kubernetes.io claim besides namespace and serviceaccount
	}{
		{"unbound", nil, map[string]any{}},
		{"pod", newPod(), map[string]any{"pod": map[string]any{"name": "web-0", "uid": "pod-uid-1"}, "node": podNode}},
		{"secret", newSecret(), map[string]any{"secret": map[string]any{"name": "creds", "uid": "secret-uid-1"}}},
		{"node", newNode(), map[string]any{"node": podNode}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := f.token(t, tt.bound)
			header := decodeSegment(t, tok, 0)
			if header["alg"] != "RS256" || header["kid"] != kid {
				t.Errorf("header = %v, want alg RS256 and kid %s", header, kid)
			}
			c := decodeSegment(t, tok, 1)
			now := float64(f.clock.Now().Unix())
			for k, want := range map[string]any{
				"iss": DefaultIssuer, "sub": "system:serviceaccount:team:robot",
				"aud": []any{DefaultIssuer}, "iat": now, "nbf": now, "exp": now + 3600,
			} {
				if !reflect.DeepEqual(c[k], want) {
					t.Errorf("claim %s = %#v, want %#v", k, c[k], want)
				}
			}
			if _, err := uuid.Parse(c["jti"].(string)); err != nil {
				t.Errorf("jti %v is not a uuid: %v", c["jti"], err)
			}
			want := map[string]any{"namespace": "team", "serviceaccount": map[string]any{"name": "robot", "uid": "sa-uid-1"}}
			for k, v := range tt.want {
				want[k] = v
			}
			if got := c["kubernetes.io"]; !reflect.DeepEqual(got, want) {
				t.Errorf("kubernetes.io = %#v, want %#v", got, want)
			}
		})
	}
}

func TestPodNodeClaimWithoutNodeObject(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	f.getter.remove(newNode())
	c := decodeSegment(t, f.token(t, newPod()), 1)
	node := c["kubernetes.io"].(map[string]any)["node"]
	if want := map[string]any{"name": "n1"}; !reflect.DeepEqual(node, want) {
		t.Errorf("node claim = %#v, want %#v (name only)", node, want)
	}
}

func TestExtendExpiration(t *testing.T) {
	t.Parallel()
	c := newClock()
	iss, err := NewIssuer(IssuerConfig{Key: testKey(t, 0), ExtendExpiration: true, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		secs      int64
		audiences []string
		extended  bool
	}{
		{"kubelet projected token", warnOnlyExpirationSeconds, nil, true},
		{"other lifetime", 3600, nil, false},
		{"foreign audience", warnOnlyExpirationSeconds, []string{"vault"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
				ExpirationSeconds: ptr.To(tt.secs), Audiences: tt.audiences,
				BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web-0"},
			}}
			out, err := iss.TokenRequest(context.Background(), newSA(), req, newPod())
			if err != nil {
				t.Fatal(err)
			}
			claims := decodeSegment(t, out.Status.Token, 1)
			now := c.Now().Unix()
			wantExp, warn := now+tt.secs, any(nil)
			if tt.extended {
				wantExp, warn = now+int64(extendedExpiration/time.Second), float64(now+tt.secs)
			}
			if claims["exp"] != float64(wantExp) {
				t.Errorf("exp = %v, want %d", claims["exp"], wantExp)
			}
			if got := claims["kubernetes.io"].(map[string]any)["warnafter"]; got != warn {
				t.Errorf("warnafter = %v, want %v", got, warn)
			}
			if got, want := out.Status.ExpirationTimestamp.Unix(), now+tt.secs; got != want {
				t.Errorf("status expiration = %d, want %d (the requested lifetime)", got, want)
			}
		})
	}
}

func TestTokenRequestDefaults(t *testing.T) {
	t.Parallel()
	c := newClock()
	iss, err := NewIssuer(IssuerConfig{Key: testKey(t, 0), Issuer: "https://kubebus.example", APIAudiences: []string{"api", "kubebus"}, MaxExpiration: 2 * time.Hour, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		spec     authnv1.TokenRequestSpec
		wantSecs int64
		wantAuds []string
	}{
		{"defaults", authnv1.TokenRequestSpec{}, 3600, []string{"api", "kubebus"}},
		{"capped at the maximum", authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](100 * 3600)}, 7200, []string{"api", "kubebus"}},
		{"as asked", authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600), Audiences: []string{"vault"}}, 600, []string{"vault"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &authnv1.TokenRequest{Spec: tt.spec}
			out, err := iss.TokenRequest(context.Background(), newSA(), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if req.Status.Token != "" || (tt.spec.ExpirationSeconds == nil && req.Spec.ExpirationSeconds != nil) {
				t.Error("TokenRequest changed the request it was given")
			}
			if *out.Spec.ExpirationSeconds != tt.wantSecs || !reflect.DeepEqual(out.Spec.Audiences, tt.wantAuds) {
				t.Errorf("spec = %d s for %v, want %d s for %v", *out.Spec.ExpirationSeconds, out.Spec.Audiences, tt.wantSecs, tt.wantAuds)
			}
			if out.Name != "robot" || out.Namespace != "team" || !out.CreationTimestamp.Time.Equal(c.Now()) {
				t.Errorf("metadata = %s/%s created %v", out.Namespace, out.Name, out.CreationTimestamp)
			}
			if want := c.Now().Add(time.Duration(tt.wantSecs) * time.Second); !out.Status.ExpirationTimestamp.Time.Equal(want) {
				t.Errorf("expiration = %v, want %v", out.Status.ExpirationTimestamp, want)
			}
			claims := decodeSegment(t, out.Status.Token, 1)
			if claims["iss"] != "https://kubebus.example" || claims["exp"] != float64(c.Now().Unix()+tt.wantSecs) {
				t.Errorf("claims iss %v exp %v", claims["iss"], claims["exp"])
			}
		})
	}
}

// TestTokenRequestUncapped: without a maximum, as upstream's default, a
// token lives as long as it asks, up to 2^32 seconds.
func TestTokenRequestUncapped(t *testing.T) {
	t.Parallel()
	c := newClock()
	iss, err := NewIssuer(IssuerConfig{Key: testKey(t, 0), Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	for _, secs := range []int64{7 * 24 * 3600, 1 << 32} {
		out, err := iss.TokenRequest(context.Background(), newSA(), &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To(secs)}}, nil)
		if err != nil {
			t.Fatalf("%d s: %v", secs, err)
		}
		if *out.Spec.ExpirationSeconds != secs {
			t.Errorf("%d s asked, %d s given", secs, *out.Spec.ExpirationSeconds)
		}
		if claims := decodeSegment(t, out.Status.Token, 1); claims["exp"] != float64(c.Now().Unix()+secs) {
			t.Errorf("%d s asked: exp %v, want %d", secs, claims["exp"], c.Now().Unix()+secs)
		}
	}
}

func TestTokenRequestErrors(t *testing.T) {
	t.Parallel()
	iss, err := NewIssuer(IssuerConfig{Key: testKey(t, 0)})
	if err != nil {
		t.Fatal(err)
	}
	podRef := func(uid string) *authnv1.BoundObjectReference {
		return &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web-0", UID: types.UID(uid)}
	}
	otherSAPod := newPod()
	otherSAPod.Spec.ServiceAccountName = "default"
	tests := []struct {
		name    string
		req     *authnv1.TokenRequest
		bound   metav1.Object
		code    int32
		field   string // the field a 422 names
		message string
	}{
		{"too short", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](599)}}, nil,
			http.StatusUnprocessableEntity, "spec.expirationSeconds", "may not specify a duration less than 10 minutes"},
		{"too long", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](1<<32 + 1)}}, nil,
			http.StatusUnprocessableEntity, "spec.expirationSeconds", "may not specify a duration larger than 2^32 seconds"},
		{"bound name missing", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1"}}}, nil,
			http.StatusUnprocessableEntity, "spec.boundObjectRef.name", "Required value"},
		{"other name", &authnv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, nil,
			http.StatusUnprocessableEntity, "metadata.name", "must match the service account name if specified"},
		{"other namespace", &authnv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "other"}}, nil,
			http.StatusUnprocessableEntity, "metadata.namespace", "must match the service account namespace if specified"},
		{"unbindable kind", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{BoundObjectRef: &authnv1.BoundObjectReference{Kind: "ConfigMap", APIVersion: "v1", Name: "c"}}}, nil,
			http.StatusBadRequest, "", "cannot bind token to object of type /v1, Kind=ConfigMap"},
		{"pod of another group", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "example.com/v1", Name: "web-0"}}}, nil,
			http.StatusBadRequest, "", "cannot bind token to object of type example.com/v1, Kind=Pod"},
		{"pod of another service account", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{BoundObjectRef: podRef("")}}, otherSAPod,
			http.StatusBadRequest, "", `cannot bind token for serviceaccount "robot" to pod running with different serviceaccount name.`},
		{"stale uid", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{BoundObjectRef: podRef("old-uid")}}, newPod(),
			http.StatusConflict, "", "the UID in the bound object reference (old-uid) does not match the UID in record"},
		{"bound object not fetched", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{BoundObjectRef: podRef("")}}, nil,
			http.StatusInternalServerError, "", `bound Pod "web-0" was not fetched`},
		{"bound object of the wrong type", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{BoundObjectRef: podRef("")}}, &corev1.Secret{ObjectMeta: meta("team", "web-0", "x")},
			http.StatusInternalServerError, "", "is a *v1.Secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := iss.TokenRequest(context.Background(), newSA(), tt.req, tt.bound)
			var status apierrors.APIStatus
			if !errors.As(err, &status) {
				t.Fatalf("error = %v, want an API status error", err)
			}
			s := status.Status()
			if s.Code != tt.code || !strings.Contains(s.Message, tt.message) {
				t.Errorf("status %d %q, want %d containing %q", s.Code, s.Message, tt.code, tt.message)
			}
			if tt.field != "" {
				if s.Details == nil || len(s.Details.Causes) != 1 || s.Details.Causes[0].Field != tt.field {
					t.Errorf("details = %+v, want one cause on %s", s.Details, tt.field)
				}
				if s.Details != nil && s.Details.Kind != "TokenRequest" || s.Details != nil && s.Details.Group != "authentication.k8s.io" {
					t.Errorf("details kind %s group %s", s.Details.Kind, s.Details.Group)
				}
			}
		})
	}
}

func TestBoundRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		ref       *authnv1.BoundObjectReference
		kind, obj string
		ok        bool
	}{
		{"none", nil, "", "", false},
		{"pod", &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p"}, "Pod", "p", true},
		{"secret", &authnv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "s"}, "Secret", "s", true},
		{"node", &authnv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "n"}, "Node", "n", true},
		{"no name", &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1"}, "", "", false},
		{"other kind", &authnv1.BoundObjectReference{Kind: "ConfigMap", APIVersion: "v1", Name: "c"}, "", "", false},
		{"other group", &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "example.com/v1", Name: "p"}, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, name, ok := BoundRef(&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{BoundObjectRef: tt.ref}})
			if kind != tt.kind || name != tt.obj || ok != tt.ok {
				t.Errorf("BoundRef = %q %q %v, want %q %q %v", kind, name, ok, tt.kind, tt.obj, tt.ok)
			}
		})
	}
}

func TestNewIssuerErrors(t *testing.T) {
	t.Parallel()
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]IssuerConfig{
		"no key":              {},
		"short key":           {Key: small},
		"negative expiration": {Key: testKey(t, 0), MaxExpiration: -time.Second},
		"expiration under 1h": {Key: testKey(t, 0), MaxExpiration: 59 * time.Minute},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := NewIssuer(cfg); err == nil {
				t.Error("NewIssuer succeeded")
			}
		})
	}
}
