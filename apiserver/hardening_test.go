package apiserver

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// jsonPatchOf joins n copies of op into a JSON patch, after the ops in prefix.
func jsonPatchOf(n int, op string, prefix ...string) []byte {
	ops := append([]string{}, prefix...)
	for range n {
		ops = append(ops, op)
	}
	return []byte("[" + strings.Join(ops, ",") + "]")
}

func TestJSONPatchOperationLimit(t *testing.T) {
	t.Parallel()
	cm := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"k":"v"}}`)
	test := `{"op":"test","path":"/metadata/name","value":"cm"}`

	// The most operations upstream allows apply.
	if _, err := applyPatch(patchRequest{typ: types.JSONPatchType, body: jsonPatchOf(maxJSONPatchOperations, test)}, cm, nil); err != nil {
		t.Fatalf("a patch of %d operations: %v", maxJSONPatchOperations, err)
	}
	// One more is refused as upstream refuses it.
	_, err := applyPatch(patchRequest{typ: types.JSONPatchType, body: jsonPatchOf(maxJSONPatchOperations+1, test)}, cm, nil)
	if !apierrors.IsRequestEntityTooLargeError(err) {
		t.Fatalf("a patch of %d operations: %v, want 413", maxJSONPatchOperations+1, err)
	}
	want := "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
	if got := err.Error(); got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

// TestJSONPatchCopyBomb applies a patch whose copies double an array 30
// times: 4 KiB doubled 30 times is 4 TiB. It must fail with a 4xx
// having allocated little: the bytes allocated while it ran (TotalAlloc,
// which the garbage collector cannot make shrink) stay under 256 MiB.
// Not parallel, so that other tests' allocations do not count.
func TestJSONPatchCopyBomb(t *testing.T) {
	cm := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`)
	seed := fmt.Sprintf(`{"op":"add","path":"/x","value":[%q]}`, strings.Repeat("a", 4<<10))
	body := jsonPatchOf(30, `{"op":"copy","from":"/x","path":"/x/-"}`, seed)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := applyPatch(patchRequest{typ: types.JSONPatchType, body: body}, cm, nil)
	runtime.ReadMemStats(&after)

	code := http.StatusOK
	if se, ok := err.(apierrors.APIStatus); ok {
		code = int(se.Status().Code)
	}
	if code < 400 || code >= 500 {
		t.Fatalf("copy bomb: %v (code %d), want a 4xx", err, code)
	}
	if !strings.Contains(err.Error(), "exceeding the limit") {
		t.Errorf("copy bomb failed with %v, want the copy size limit", err)
	}
	if strings.Contains(err.Error(), strings.Repeat("a", 4<<10)) {
		t.Errorf("the error quotes the %d-byte patch back", len(body))
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 256<<20 {
		t.Errorf("applying the copy bomb allocated %d MiB, want at most 256", grew>>20)
	}
}

func TestWatchLimit(t *testing.T) {
	t.Parallel()
	alice := auth.User{Name: "alice"}
	bob := auth.User{Name: "bob"}
	admin := auth.User{Name: "admin", Groups: []string{auth.SystemPrivilegedGroup}}
	podUser := func(uid string) auth.User {
		return auth.User{Name: "system:serviceaccount:ns:agent", Extra: map[string][]string{podUIDExtra: {uid}}}
	}
	l := newWatchLimit(2)
	take := func(u auth.User) func() {
		t.Helper()
		release, err := l.acquire(u)
		if err != nil {
			t.Fatalf("watch of %s: %v", u.Name, err)
		}
		return release
	}
	refused := func(u auth.User) {
		t.Helper()
		_, err := l.acquire(u)
		if !apierrors.IsTooManyRequests(err) {
			t.Fatalf("watch of %s past the bound: %v, want 429", u.Name, err)
		}
		if d, ok := apierrors.SuggestsClientDelay(err); !ok || d != watchRetryAfter {
			t.Errorf("Retry-After %d (%t), want %d", d, ok, watchRetryAfter)
		}
	}

	first := take(alice)
	take(alice)
	refused(alice)
	take(bob) // another user has a budget of its own
	for range 5 {
		take(admin) // system:masters is not bounded
	}
	// Each pod of a ServiceAccount has its budget; a pod has no more.
	take(podUser("p1"))
	take(podUser("p1"))
	refused(podUser("p1"))
	take(podUser("p2"))

	first()
	first() // a second release gives nothing back
	take(alice)
	refused(alice)

	unbounded := newWatchLimit(-1)
	for range 10 {
		if _, err := unbounded.acquire(alice); err != nil {
			t.Fatalf("no bound: %v", err)
		}
	}
}
