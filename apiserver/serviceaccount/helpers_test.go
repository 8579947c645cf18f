package serviceaccount

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Keys are slow to make; the tests share two.
var testKeys = sync.OnceValues(func() ([2]*rsa.PrivateKey, error) {
	var ks [2]*rsa.PrivateKey
	for i := range ks {
		k, err := rsa.GenerateKey(rand.Reader, keyBits)
		if err != nil {
			return ks, err
		}
		ks[i] = k
	}
	return ks, nil
})

func testKey(t testing.TB, i int) *rsa.PrivateKey {
	t.Helper()
	ks, err := testKeys()
	if err != nil {
		t.Fatal(err)
	}
	return ks[i]
}

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fakeGetter is an in-memory Getter that counts lookups.
type fakeGetter struct {
	mu      sync.Mutex
	objects map[string]metav1.Object // "kind/namespace/name"
	lookups int
}

func newFakeGetter(objs ...metav1.Object) *fakeGetter {
	g := &fakeGetter{objects: map[string]metav1.Object{}}
	for _, o := range objs {
		g.put(o)
	}
	return g
}

func objKey(o metav1.Object) string {
	switch o.(type) {
	case *corev1.ServiceAccount:
		return "sa/" + o.GetNamespace() + "/" + o.GetName()
	case *corev1.Pod:
		return "pod/" + o.GetNamespace() + "/" + o.GetName()
	case *corev1.Secret:
		return "secret/" + o.GetNamespace() + "/" + o.GetName()
	default:
		return "node//" + o.GetName()
	}
}

func (g *fakeGetter) put(o metav1.Object) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.objects[objKey(o)] = o
}

func (g *fakeGetter) remove(o metav1.Object) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.objects, objKey(o))
}

func (g *fakeGetter) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lookups
}

func get[T metav1.Object](g *fakeGetter, kind, resource, namespace, name string) (T, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lookups++
	var zero T
	o, ok := g.objects[kind+"/"+namespace+"/"+name]
	if !ok {
		return zero, apierrors.NewNotFound(corev1.Resource(resource), name)
	}
	return o.(T), nil
}

func (g *fakeGetter) GetServiceAccount(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	return get[*corev1.ServiceAccount](g, "sa", "serviceaccounts", ns, name)
}

func (g *fakeGetter) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	return get[*corev1.Pod](g, "pod", "pods", ns, name)
}

func (g *fakeGetter) GetSecret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	return get[*corev1.Secret](g, "secret", "secrets", ns, name)
}

func (g *fakeGetter) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	return get[*corev1.Node](g, "node", "nodes", "", name)
}

func meta(ns, name, uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}
}

func newSA() *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: meta("team", "robot", "sa-uid-1")}
}

func newPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: meta("team", "web-0", "pod-uid-1"),
		Spec: corev1.PodSpec{ServiceAccountName: "robot", NodeName: "n1"}}
}

func newSecret() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: meta("team", "creds", "secret-uid-1")}
}

func newNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: meta("", "n1", "node-uid-1")}
}

// fixture is an issuer and an authenticator sharing a key, a clock and a
// getter holding a ServiceAccount, a pod, a secret and a node.
type fixture struct {
	clock  *clock
	getter *fakeGetter
	issuer *Issuer
	authn  *Authenticator
}

func newFixture(t testing.TB, cacheTTL time.Duration) *fixture {
	t.Helper()
	f := &fixture{clock: newClock(), getter: newFakeGetter(newSA(), newPod(), newSecret(), newNode())}
	var err error
	f.issuer, err = NewIssuer(IssuerConfig{Key: testKey(t, 0), Nodes: f.getter, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	f.authn, err = NewAuthenticator(AuthenticatorConfig{
		PublicKeys: []*rsa.PublicKey{&testKey(t, 0).PublicKey},
		Getter:     f.getter, Now: f.clock.Now, CacheTTL: cacheTTL,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// token issues a token for the fixture's ServiceAccount bound to bound
// (nil for none).
func (f *fixture) token(t testing.TB, bound metav1.Object, audiences ...string) string {
	t.Helper()
	req := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: audiences}}
	if bound != nil {
		kind := map[string]string{"pod": "Pod", "secret": "Secret", "node": "Node"}[strings.Split(objKey(bound), "/")[0]]
		req.Spec.BoundObjectRef = &authnv1.BoundObjectReference{Kind: kind, APIVersion: "v1", Name: bound.GetName(), UID: bound.GetUID()}
	}
	out, err := f.issuer.TokenRequest(context.Background(), newSA(), req, bound)
	if err != nil {
		t.Fatal(err)
	}
	return out.Status.Token
}

// decodeSegment decodes one base64url segment of a JWT into a map.
func decodeSegment(t *testing.T, tok string, i int) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
