package serve

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/apiserver"
	"github.com/kubebus/kubebus/apiserver/admission"
	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/nodeauth"
	"github.com/kubebus/kubebus/apiserver/rbac"
	"github.com/kubebus/kubebus/apiserver/serviceaccount"
	"github.com/kubebus/kubebus/apiserver/servicealloc"
	"github.com/kubebus/kubebus/apiserver/storage"
)

// AuthOptions say who may do what, as upstream's API server flags do.
type AuthOptions struct {
	// AnonymousAuth lets requests without a credential in as
	// system:anonymous (RBAC then grants them health and version only);
	// false answers them 401.
	AnonymousAuth bool
	// Profiling serves /debug/pprof to users RBAC lets read it.
	Profiling bool
	// AuthorizationModes are upstream's --authorization-mode: Node and
	// RBAC (the default, in that order), or AlwaysAllow alone.
	AuthorizationModes []string
	// EncryptionProviderConfig is an EncryptionConfiguration file: which
	// resources are encrypted at rest, and how.
	EncryptionProviderConfig string
	// EnableAdmissionPlugins and DisableAdmissionPlugins change the
	// default admission plugins.
	EnableAdmissionPlugins, DisableAdmissionPlugins []string
	// ServiceAccountIssuer is the iss of ServiceAccount tokens.
	ServiceAccountIssuer string
	// ServiceAccountMaxTokenExpiration caps the lifetime of requested
	// tokens (0: no cap), as upstream's --service-account-max-token-expiration.
	ServiceAccountMaxTokenExpiration time.Duration
	// ServiceAccountJWKSURI overrides the jwks_uri of the OIDC discovery
	// document, as upstream's --service-account-jwks-uri (default: this
	// API server's advertised address).
	ServiceAccountJWKSURI string
	// AdvertiseAddress is where pods reach this API server (the endpoints
	// of the kubernetes Service); empty: the bind address. AdvertisePort
	// defaults to the listening port.
	AdvertiseAddress string
	AdvertisePort    int
	// Instance names this API server's bus consumers and its entry among
	// the API servers (default host and port).
	Instance string
}

// security is what authentication, authorization and admission need,
// built before the server and completed once it exists.
type security struct {
	authn     auth.Chain
	authz     auth.Authorizer
	rules     auth.RuleResolver
	admission *admission.Timed
	issuer    *serviceaccount.Issuer
	reviewer  auth.Bearer // every token authenticator, for requests and TokenReview
	mounts    []func(chi.Router)
	// external is this API server's advertised host:port, set once it
	// listens (the default jwks_uri's host).
	external atomic.Pointer[string]
	objects  *objects
	caches   *authCaches // nil without the bus
}

// newSecurity builds the authenticators (client certificates of clientCAs,
// static tokens, ServiceAccount tokens), the authorizers (system:masters, the Node
// authorizer, RBAC from the bus-fed caches) and the admission chain.
func newSecurity(o Options, clientCAs *x509.CertPool, store *storage.Store, caches *authCaches, rec admission.Recorder) (*security, error) {
	sec := &security{objects: &objects{caches: caches}, caches: caches}
	key, err := serviceaccount.LoadOrCreateKey(o.PKIDir)
	if err != nil {
		return nil, fmt.Errorf("service account key: %w", err)
	}
	issuer := o.Auth.ServiceAccountIssuer
	if issuer == "" {
		issuer = serviceaccount.DefaultIssuer
	}
	// Tokens of the projected kube-api-access volumes (3607 s) are valid
	// for a year, as upstream's --service-account-extend-token-expiration
	// (on by default) makes them: the kubelet writes them once per start.
	sec.issuer, err = serviceaccount.NewIssuer(serviceaccount.IssuerConfig{Key: key, Issuer: issuer, Nodes: sec.objects, ExtendExpiration: true,
		MaxExpiration: o.Auth.ServiceAccountMaxTokenExpiration})
	if err != nil {
		return nil, err
	}
	saTokens, err := serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{
		PublicKeys: []*rsa.PublicKey{&key.PublicKey}, Issuers: []string{issuer}, Getter: sec.objects,
	})
	if err != nil {
		return nil, err
	}
	// As upstream: the token authenticators (static tokens, valid for the
	// API server's audiences, then ServiceAccount tokens) sit behind one
	// bearer authenticator, so a token none accepts is a 401, and
	// TokenReview runs them all.
	var tokens auth.TokenUnion
	if o.TokenFile != "" {
		toks, err := auth.LoadTokenFile(o.TokenFile)
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, auth.AudienceAgnostic{APIAudiences: saTokens.APIAudiences(), Tokens: toks})
	}
	tokens = append(tokens, saTokens)
	sec.reviewer = auth.Bearer{Tokens: tokens}
	sec.authn = auth.Chain{&auth.ClientCert{Roots: clientCAs}, sec.reviewer}
	// An issuer that is no https URL (upstream accepts any string) still
	// signs and verifies tokens; as upstream, only the OIDC discovery
	// documents, which need one, are not served.
	if uri := o.Auth.ServiceAccountJWKSURI; uri != "" {
		if err := serviceaccount.ValidateJWKSURI(uri); err != nil {
			return nil, fmt.Errorf("--service-account-jwks-uri: %w", err)
		}
	}
	if oidc, jwks, err := serviceaccount.DiscoveryHandlers(serviceaccount.DiscoveryConfig{
		Issuer: issuer, JWKSURI: o.Auth.ServiceAccountJWKSURI, Keys: []*rsa.PublicKey{&key.PublicKey},
		ExternalAddress: func() string {
			if p := sec.external.Load(); p != nil {
				return *p
			}
			return ""
		},
	}); err != nil {
		logger := o.Logger
		if logger == nil {
			logger = slog.Default()
		}
		logger.Error("not serving the ServiceAccount issuer discovery documents", "issuer", issuer, "err", err)
	} else {
		sec.mounts = append(sec.mounts, func(r chi.Router) {
			r.Handle(serviceaccount.OpenIDConfigPath, oidc)
			r.Handle(serviceaccount.JWKSPath, jwks)
		})
	}

	graph := nodeauth.NewGraph()
	var lister rbac.Lister = rbac.NewStaticLister(rbac.Policy{})
	if caches != nil {
		caches.pods.AddHandler(graph.Handler())
		caches.claims.AddHandler(graph.ClaimHandler())
		lister = caches.rbacLister()
	}
	rbacAuthz := rbac.NewAuthorizer(lister)
	sec.rules = rbacAuthz
	union := auth.Union{auth.SystemMasters{}}
	modes := o.Auth.AuthorizationModes
	if len(modes) == 0 {
		modes = []string{"Node", "RBAC"}
	}
	for _, m := range modes {
		switch m {
		case "Node":
			union = append(union, nodeauth.NewAuthorizer(graph))
		case "RBAC":
			union = append(union, rbacAuthz)
		case "AlwaysAllow":
			if len(modes) > 1 {
				return nil, errors.New("--authorization-mode: AlwaysAllow stands alone")
			}
			union = auth.Union{auth.AlwaysAllow{}}
		default:
			return nil, fmt.Errorf("--authorization-mode: unknown mode %q (known: Node, RBAC, AlwaysAllow)", m)
		}
	}
	sec.authz = union

	names, err := admission.Resolve(o.Auth.EnableAdmissionPlugins, o.Auth.DisableAdmissionPlugins)
	if err != nil {
		return nil, err
	}
	plugins, err := admission.BuildPlugins(names, admission.Deps{
		Namespaces: sec.objects, ServiceAccounts: sec.objects, Pods: sec.objects, Nodes: sec.objects, NamespacePods: sec.objects,
		Authorizer:      sec.authz,
		PriorityClasses: &admission.StoredPriorityClasses{Store: store},
		StorageClasses:  admission.StoredStorageClasses{Store: store},
		Factories: map[string]func() (auth.Admitter, error){
			admission.PluginLimitRanger: func() (auth.Admitter, error) { return admission.NewLimitRanger(sec.objects), nil },
			admission.PluginResourceQuota: func() (auth.Admitter, error) {
				return admission.NewResourceQuota(admission.QuotaConfig{Quotas: sec.objects}), nil
			},
		},
	})
	if err != nil {
		return nil, err
	}
	// RBAC's own guard against escalation is not an admission plugin
	// upstream (it is the RBAC storage's) and cannot be turned off.
	// Its time is recorded as a validating plugin named RBACEscalation, a
	// name of kubebus's: upstream checks escalation outside admission.
	plugins = append(plugins, admission.Plugin{Name: "RBACEscalation", Validating: true,
		Admitter: &rbac.EscalationCheck{Authorizer: sec.authz, Rules: rbacAuthz, Roles: lister}})
	sec.admission = admission.NewTimed(plugins, rec)
	return sec, nil
}

// bootstrapPolicy creates the bootstrap RBAC policy and reconciles what
// exists with it, as upstream's API server does at every start.
func bootstrapPolicy(ctx context.Context, srv *apiserver.Server) error {
	p := rbac.Bootstrap()
	reconcile := func(desired runtime.Object) apiserver.Reconcile {
		return func(existing runtime.Object) (runtime.Object, bool, error) {
			u, changed := rbac.Reconcile(existing, desired)
			if _, ok := u.(*rbac.Recreate); ok {
				return nil, false, apiserver.ErrRecreate
			}
			return u, changed, nil
		}
	}
	ensure := func(gvr string, obj runtime.Object) error {
		g := rbacv1.SchemeGroupVersion.WithResource(gvr)
		if err := srv.Ensure(ctx, g, obj, reconcile(obj)); err != nil {
			return fmt.Errorf("bootstrap policy %s: %w", gvr, err)
		}
		return nil
	}
	for _, r := range p.ClusterRoles {
		if err := ensure("clusterroles", r); err != nil {
			return err
		}
	}
	for _, b := range p.ClusterRoleBindings {
		if err := ensure("clusterrolebindings", b); err != nil {
			return err
		}
	}
	for _, r := range p.Roles {
		if err := ensure("roles", r); err != nil {
			return err
		}
	}
	for _, b := range p.RoleBindings {
		if err := ensure("rolebindings", b); err != nil {
			return err
		}
	}
	return nil
}

// waitForPolicy waits until the RBAC caches hold every bootstrap binding,
// so that the server authorizes its components from its first request.
func waitForPolicy(ctx context.Context, c *authCaches, log *slog.Logger) error {
	if c == nil {
		log.Warn("no bus: RBAC has no cache to read, only system:masters is authorized")
		return nil
	}
	if err := c.WaitForSync(ctx); err != nil {
		return fmt.Errorf("waiting for the authorization caches: %w", err)
	}
	p := rbac.Bootstrap()
	for {
		missing := ""
		for _, b := range p.ClusterRoleBindings {
			if _, ok := c.clusterRoleBindings.Get("", b.Name); !ok {
				missing = b.Name
				break
			}
		}
		if missing == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the bootstrap policy to reach the RBAC cache (%s): %w", missing, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// advertised returns where pods reach this API server.
func advertised(o Options, listening string) (addr string, port int) {
	host, p, _ := net.SplitHostPort(listening)
	addr = o.Auth.AdvertiseAddress
	if addr == "" {
		addr = host
	}
	port = o.Auth.AdvertisePort
	if port == 0 {
		fmt.Sscan(p, &port)
	}
	return addr, port
}

// firstServiceIP is the kubernetes Service's address: the first of the
// service range.
func firstServiceIP(cidr string) (string, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return "", fmt.Errorf("service cluster IP range %q: %w", cidr, err)
	}
	return p.Masked().Addr().Next().String(), nil
}

// ServingHosts are the names and addresses the serving certificate must
// carry: the given ones, the kubernetes Service's names and cluster IP, and
// the advertised address.
func ServingHosts(hosts []string, serviceCIDR, advertise string) []string {
	out := append([]string(nil), hosts...)
	out = append(out, "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
	if serviceCIDR == "" {
		serviceCIDR = servicealloc.DefaultClusterIPRange
	}
	if ip, err := firstServiceIP(serviceCIDR); err == nil {
		out = append(out, ip)
	}
	if advertise != "" {
		out = append(out, advertise)
	}
	seen := map[string]bool{}
	uniq := out[:0]
	for _, h := range out {
		if !seen[h] {
			seen[h] = true
			uniq = append(uniq, h)
		}
	}
	return uniq
}
