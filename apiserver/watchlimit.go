package apiserver

import (
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// DefaultMaxWatchesPerUser is Config.MaxWatchesPerUser's default. kubebus's
// own components follow the bus, not watches, so what watches is kubectl,
// client-go controllers and operators, and stock kubelets. A stock
// kube-controller-manager holds about 50 (one per shared informer), an
// operator tens, a stock kubelet one per Secret and ConfigMap its pods
// mount plus about ten (a few hundred on a full node, and every node is a
// user of its own); kubectl get -w holds one. A thousand leaves room for
// several replicas of a controller sharing a kubeconfig while stopping a
// client that leaks watches long before it costs the server memory (each
// watch holds a goroutine and a buffer of hubClientBuf events).
const DefaultMaxWatchesPerUser = 1000

// watchRetryAfter is the Retry-After of a watch past its user's bound, in
// seconds: a slot frees only when one of the user's watches ends, which
// takes minutes, so retrying every second would be wasted work.
const watchRetryAfter = 5

// podUIDExtra is the user extra a ServiceAccount token bound to a pod
// carries (upstream's serviceaccount.PodUIDKey).
const podUIDExtra = "authentication.kubernetes.io/pod-uid"

// watchLimit bounds the concurrent watches of each user. The user is the
// authenticated name, narrowed to the pod for a ServiceAccount token bound
// to one: the pods of a DaemonSet share their ServiceAccount, and each
// must be able to watch what one alone would, however many nodes there
// are. Members of system:masters, the API server's own user among them,
// are not bounded, as upstream's priority and fairness exempts them.
type watchLimit struct {
	max int // <= 0: no bound

	mu   sync.Mutex
	held map[string]int
}

func newWatchLimit(max int) *watchLimit {
	return &watchLimit{max: max, held: map[string]int{}}
}

// watchKey is whose budget a watch of u counts against.
func watchKey(u auth.User) string {
	if uid := u.Extra[podUIDExtra]; len(uid) == 1 && uid[0] != "" {
		return u.Name + "\x00" + uid[0]
	}
	return u.Name
}

// acquire counts one more watch of u, or fails with 429 when u holds the
// bound already. release gives the watch back; call it once.
func (l *watchLimit) acquire(u auth.User) (release func(), err error) {
	if l.max <= 0 || u.InGroup(auth.SystemPrivilegedGroup) {
		return func() {}, nil
	}
	key := watchKey(u)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[key] >= l.max {
		return nil, apierrors.NewTooManyRequests(fmt.Sprintf("user %q holds %d watches, the most one user may hold at once; close one or try again later", u.Name, l.max), watchRetryAfter)
	}
	l.held[key]++
	var once sync.Once
	return func() { once.Do(func() { l.release(key) }) }, nil
}

func (l *watchLimit) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[key]--; l.held[key] <= 0 {
		delete(l.held, key)
	}
}
