package serviceaccount

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	sa "k8s.io/apiserver/pkg/authentication/serviceaccount"
	tokenjwt "k8s.io/apiserver/pkg/authentication/token/jwt"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// ErrInvalidToken is wrapped by every error about a token of our issuer
// that does not authenticate (bad signature, expired, wrong audience, the
// ServiceAccount or bound object gone). Its messages name the reason, never
// the token. It is the request authenticator's auth.ErrInvalidToken.
var ErrInvalidToken = auth.ErrInvalidToken

// errInvalidated is the answer, as upstream's, when a token's bound object
// is gone: it does not say which lookup failed.
var errInvalidated = fmt.Errorf("%w: service account token has been invalidated", ErrInvalidToken)

// defaultCacheTTL is how long a verified token is remembered, as upstream's
// --authentication-token-success-cache-ttl.
const (
	defaultCacheTTL  = 10 * time.Second
	defaultCacheSize = 4096
)

// Getter finds the objects a token names, normally from informer caches.
// A missing object is an error (NotFound or any other).
type Getter interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
}

// AuthenticatorConfig configures an Authenticator.
type AuthenticatorConfig struct {
	// PublicKeys verify token signatures (at least one).
	PublicKeys []*rsa.PublicKey
	// Issuers are the iss claims accepted; [DefaultIssuer] when empty.
	// Tokens of other issuers are left to other authenticators.
	Issuers []string
	// APIAudiences are the audiences a token must share to authenticate to
	// the API server; [Issuers[0]] when empty.
	APIAudiences []string
	// Getter looks up the ServiceAccount and bound objects (required).
	Getter Getter
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// CacheTTL is how long a verified token is remembered: 10s when zero,
	// no caching when negative. A token whose ServiceAccount or bound
	// object is deleted authenticates for at most this long after.
	CacheTTL time.Duration
	// CacheSize bounds the number of remembered tokens; 4096 when zero.
	CacheSize int
}

func (c *AuthenticatorConfig) validate() error {
	if len(c.PublicKeys) == 0 {
		return errors.New("serviceaccount: authenticator needs a public key")
	}
	if slices.Contains(c.PublicKeys, nil) {
		return errors.New("serviceaccount: nil public key")
	}
	if c.Getter == nil {
		return errors.New("serviceaccount: authenticator needs a getter")
	}
	if c.CacheSize < 0 {
		return errors.New("serviceaccount: negative token cache size")
	}
	return nil
}

// Authenticator verifies ServiceAccount tokens, as upstream's JWT token
// authenticator with the ServiceAccount validator. It implements
// auth.TokenAuthenticator: an auth.Bearer reads the request's header. A
// token that is not a JWT of our issuers is not ours (ok false without
// error), for the other token authenticators to try.
type Authenticator struct {
	keys      map[string][]*rsa.PublicKey // by key id
	issuers   []string
	audiences authenticator.Audiences
	getter    Getter
	now       func() time.Time
	cache     *tokenCache // nil: no caching
}

var _ auth.TokenAuthenticator = (*Authenticator)(nil)

// NewAuthenticator returns an Authenticator for tokens signed by one of
// cfg.PublicKeys.
func NewAuthenticator(cfg AuthenticatorConfig) (*Authenticator, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a := &Authenticator{
		keys:      make(map[string][]*rsa.PublicKey, len(cfg.PublicKeys)),
		issuers:   slices.Clone(cfg.Issuers),
		audiences: slices.Clone(cfg.APIAudiences),
		getter:    cfg.Getter,
		now:       cfg.Now,
	}
	for _, k := range cfg.PublicKeys {
		kid, err := keyID(k)
		if err != nil {
			return nil, fmt.Errorf("serviceaccount: deriving key id: %w", err)
		}
		a.keys[kid] = append(a.keys[kid], k)
	}
	if len(a.issuers) == 0 {
		a.issuers = []string{DefaultIssuer}
	}
	if len(a.audiences) == 0 {
		a.audiences = authenticator.Audiences{a.issuers[0]}
	}
	if a.now == nil {
		a.now = time.Now
	}
	if cfg.CacheTTL >= 0 {
		ttl, size := cfg.CacheTTL, cfg.CacheSize
		if ttl == 0 {
			ttl = defaultCacheTTL
		}
		if size == 0 {
			size = defaultCacheSize
		}
		a.cache = newTokenCache(size, ttl, a.now)
	}
	return a, nil
}

// APIAudiences returns the audiences a token must share to authenticate
// to the API server: the implicit audiences of audience-agnostic tokens.
func (a *Authenticator) APIAudiences() []string {
	return slices.Clone(a.audiences)
}

// AuthenticateToken authenticates token for the API server's audiences.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (auth.User, bool, error) {
	u, _, ok, err := a.AuthenticateTokenAudiences(ctx, token, nil)
	return u, ok, err
}

// AuthenticateTokenAudiences authenticates token for audiences (the API
// server's when empty), as a request or a TokenReview does, and returns the
// audiences the token shares with them. A token that is not a JWT of our
// issuers has ok false and no error.
func (a *Authenticator) AuthenticateTokenAudiences(ctx context.Context, token string, audiences []string) (auth.User, []string, bool, error) {
	requested := authenticator.Audiences(audiences)
	if len(requested) == 0 {
		requested = a.audiences
	}
	var key cacheKey
	if a.cache != nil {
		key = newCacheKey(token, requested)
		if r, ok := a.cache.get(key); ok {
			return cloneUser(r.user), slices.Clone(r.audiences), true, nil
		}
	}
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return auth.User{}, nil, false, nil
	}
	var unverified struct {
		Issuer string `json:"iss"`
	}
	if tok.UnsafeClaimsWithoutVerification(&unverified) != nil || !slices.Contains(a.issuers, unverified.Issuer) {
		return auth.User{}, nil, false, nil
	}
	var c tokenClaims
	if err := a.verify(tok, &c); err != nil {
		return auth.User{}, nil, false, err
	}
	tokenAuds := authenticator.Audiences(c.public.Audience)
	if len(tokenAuds) == 0 {
		// A token without aud (a legacy one) is for the API server only.
		tokenAuds = a.audiences
	}
	matched := tokenAuds.Intersect(requested)
	if len(matched) == 0 {
		return auth.User{}, nil, false, fmt.Errorf("%w: token audiences %q is invalid for the target audiences %q", ErrInvalidToken, tokenAuds, requested)
	}
	now := a.now()
	info, err := a.validate(ctx, &c, now)
	if err != nil {
		return auth.User{}, nil, false, err
	}
	ui := info.UserInfo()
	u := auth.User{Name: ui.GetName(), UID: ui.GetUID(), Groups: ui.GetGroups(), Extra: ui.GetExtra()}
	if a.cache != nil {
		a.cache.add(key, cachedResult{user: cloneUser(u), audiences: slices.Clone(matched)}, c.public.Expiry.Time().Sub(now))
	}
	return u, matched, true, nil
}

// verify checks the token's signature with the key its kid names (every
// key when it names none) and decodes its claims.
func (a *Authenticator) verify(tok *jwt.JSONWebToken, c *tokenClaims) error {
	var kid string
	for _, h := range tok.Headers {
		if h.KeyID != "" {
			kid = h.KeyID
			break
		}
	}
	keys := a.keys[kid]
	if kid == "" {
		for _, ks := range a.keys {
			keys = append(keys, ks...)
		}
	}
	if len(keys) == 0 {
		return fmt.Errorf("%w: invalid signature, no keys found", ErrInvalidToken)
	}
	for _, k := range keys {
		if tok.Claims(k, &c.public, &c.private) == nil {
			if !slices.Contains(a.issuers, c.public.Issuer) {
				return fmt.Errorf("%w: token issuer %q is invalid", ErrInvalidToken, c.public.Issuer)
			}
			return nil
		}
	}
	return fmt.Errorf("%w: invalid signature", ErrInvalidToken)
}

// validate is upstream's ServiceAccount token validator: the token is
// within its lifetime, and its ServiceAccount and bound object still
// exist with the UIDs it names. Objects deleted more than a minute ago
// (deletionTimestamp in the past) invalidate it; a pod in graceful
// termination keeps its token until then.
func (a *Authenticator) validate(ctx context.Context, c *tokenClaims, now time.Time) (*sa.ServiceAccountInfo, error) {
	switch err := c.public.Validate(jwt.Expected{Time: now}); {
	case err == nil:
	case errors.Is(err, jwt.ErrExpired):
		return nil, fmt.Errorf("%w: service account token has expired", ErrInvalidToken)
	case errors.Is(err, jwt.ErrNotValidYet):
		return nil, fmt.Errorf("%w: service account token is not valid yet", ErrInvalidToken)
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, fmt.Errorf("%w: service account token is issued in the future", ErrInvalidToken)
	default:
		return nil, fmt.Errorf("%w: service account token claims could not be validated", ErrInvalidToken)
	}
	k := &c.private.Kubernetes
	if k.Namespace == "" || k.Svcacct.Name == "" {
		return nil, fmt.Errorf("%w: service account token names no service account", ErrInvalidToken)
	}
	deletedBefore := now.Add(-jwt.DefaultLeeway)
	gone := func(ts *metav1.Time) bool { return ts != nil && ts.Time.Before(deletedBefore) }

	acct, err := a.getter.GetServiceAccount(ctx, k.Namespace, k.Svcacct.Name)
	if err != nil {
		return nil, fmt.Errorf("%w: getting service account %s/%s: %w", ErrInvalidToken, k.Namespace, k.Svcacct.Name, err)
	}
	if string(acct.UID) != k.Svcacct.UID {
		return nil, fmt.Errorf("%w: service account UID (%s) does not match claim (%s)", ErrInvalidToken, acct.UID, k.Svcacct.UID)
	}
	if gone(acct.DeletionTimestamp) {
		return nil, fmt.Errorf("%w: service account %s/%s has been deleted", ErrInvalidToken, k.Namespace, k.Svcacct.Name)
	}
	info := &sa.ServiceAccountInfo{
		Namespace:    k.Namespace,
		Name:         k.Svcacct.Name,
		UID:          k.Svcacct.UID,
		CredentialID: tokenjwt.CredentialIDForJTI(c.public.ID),
	}
	if r := k.Secret; r != nil {
		s, err := a.getter.GetSecret(ctx, k.Namespace, r.Name)
		if err != nil || gone(s.DeletionTimestamp) {
			return nil, errInvalidated
		}
		if string(s.UID) != r.UID {
			return nil, fmt.Errorf("%w: secret UID (%s) does not match service account secret ref claim (%s)", ErrInvalidToken, s.UID, r.UID)
		}
	}
	switch {
	case k.Pod != nil:
		p, err := a.getter.GetPod(ctx, k.Namespace, k.Pod.Name)
		if err != nil || gone(p.DeletionTimestamp) {
			return nil, errInvalidated
		}
		if string(p.UID) != k.Pod.UID {
			return nil, fmt.Errorf("%w: pod UID (%s) does not match service account pod ref claim (%s)", ErrInvalidToken, p.UID, k.Pod.UID)
		}
		info.PodName, info.PodUID = k.Pod.Name, k.Pod.UID
		if k.Node != nil {
			// The pod's node, for information: not looked up.
			info.NodeName, info.NodeUID = k.Node.Name, k.Node.UID
		}
	case k.Node != nil:
		n, err := a.getter.GetNode(ctx, k.Node.Name)
		if err != nil || gone(n.DeletionTimestamp) {
			return nil, errInvalidated
		}
		if string(n.UID) != k.Node.UID {
			return nil, fmt.Errorf("%w: node UID (%s) does not match service account node ref claim (%s)", ErrInvalidToken, n.UID, k.Node.UID)
		}
		info.NodeName, info.NodeUID = k.Node.Name, k.Node.UID
	}
	return info, nil
}

// cloneUser copies u so a cached user is never shared with a caller that
// might change it.
func cloneUser(u auth.User) auth.User {
	u.Groups = slices.Clone(u.Groups)
	if u.Extra != nil {
		extra := make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			extra[k] = slices.Clone(v)
		}
		u.Extra = extra
	}
	return u
}
