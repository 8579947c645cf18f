package serviceaccount

import (
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	sa "k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// privateClaims is the "kubernetes.io" claim upstream puts in a token:
// the ServiceAccount and the object the token is bound to.
type privateClaims struct {
	Kubernetes kubernetesClaims `json:"kubernetes.io,omitempty"`
}

type kubernetesClaims struct {
	Namespace string `json:"namespace,omitempty"`
	Svcacct   ref    `json:"serviceaccount,omitempty"`
	Pod       *ref   `json:"pod,omitempty"`
	Secret    *ref   `json:"secret,omitempty"`
	// Node is the node a token is bound to, or the node of the pod it is
	// bound to (then only informative, never looked up).
	Node *ref `json:"node,omitempty"`
	// WarnAfter is set on tokens whose expiry was extended: past it the
	// token still works, but its holder should have refreshed it.
	WarnAfter *jwt.NumericDate `json:"warnafter,omitempty"`
}

type ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// boundObjects are what a token is bound to: a pod (with, when it is
// scheduled, its node), a secret, a node, or nothing.
type boundObjects struct {
	pod    *corev1.Pod
	secret *corev1.Secret
	node   *corev1.Node
}

// tokenClaims are the public and private claims of one token.
type tokenClaims struct {
	public  jwt.Claims
	private privateClaims
}

// newClaims builds the claims of a token for sa, valid from now for exp
// (warnAfter, when not zero, marks an extended expiry), with id as jti.
func newClaims(issuer string, acct *corev1.ServiceAccount, b boundObjects, audiences []string, now time.Time, exp, warnAfter time.Duration, id string) tokenClaims {
	c := tokenClaims{
		public: jwt.Claims{
			Issuer:    issuer,
			Subject:   sa.MakeUsername(acct.Namespace, acct.Name),
			Audience:  jwt.Audience(audiences),
			Expiry:    jwt.NewNumericDate(now.Add(exp)),
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ID:        id,
		},
		private: privateClaims{Kubernetes: kubernetesClaims{
			Namespace: acct.Namespace,
			Svcacct:   ref{Name: acct.Name, UID: string(acct.UID)},
		}},
	}
	k := &c.private.Kubernetes
	switch {
	case b.pod != nil:
		k.Pod = &ref{Name: b.pod.Name, UID: string(b.pod.UID)}
		if b.node != nil {
			k.Node = &ref{Name: b.node.Name, UID: string(b.node.UID)}
		}
	case b.secret != nil:
		k.Secret = &ref{Name: b.secret.Name, UID: string(b.secret.UID)}
	case b.node != nil:
		k.Node = &ref{Name: b.node.Name, UID: string(b.node.UID)}
	}
	if warnAfter != 0 {
		k.WarnAfter = jwt.NewNumericDate(now.Add(warnAfter))
	}
	return c
}
