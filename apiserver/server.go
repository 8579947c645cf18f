package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"runtime/debug"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/fieldmanager"
	"github.com/kubebus/kubebus/apiserver/openapi"
	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/apiserver/storage"
)

// Config is everything the API server needs.
type Config struct {
	Store     *storage.Store
	Resources []*resource.Resource
	Logger    *slog.Logger
	// Authenticator finds the user of a request; nil means every request is
	// anonymous. Authorizer decides; nil allows everything.
	Authenticator auth.Authenticator
	Authorizer    auth.Authorizer
	// Admission runs before every write (may be nil).
	Admission auth.Admitter
	// RuleResolver answers SelfSubjectRulesReview (nil: the review says
	// its rules are incomplete). TokenReviewer answers TokenReview (nil:
	// every token review is unauthenticated).
	RuleResolver  auth.RuleResolver
	TokenReviewer TokenReviewer
	// TokenIssuer signs tokens for serviceaccounts/token (nil: that
	// subresource answers 503).
	TokenIssuer TokenIssuer
	// ReadyChecks are extra /readyz checks by name (etcd is always checked).
	ReadyChecks map[string]func(context.Context) error
	Metrics     *Metrics
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight bound concurrent
	// non-watch requests; a request past them waits for a slot up to
	// InFlightWait (default 5s; negative: not at all), then gets 429.
	MaxRequestsInFlight         int
	MaxMutatingRequestsInFlight int
	InFlightWait                time.Duration
	// RequestBodyTimeout bounds how long a client may take to send a
	// request body, counted from when its headers arrived (default 60s,
	// upstream's request timeout; negative: no bound). A body still
	// arriving then fails with 408 and frees the request's in-flight slot.
	RequestBodyTimeout time.Duration
	// MaxWatchesPerUser bounds the watches one user holds at once
	// (default DefaultMaxWatchesPerUser; negative: no bound). Past it a
	// watch gets 429 with a Retry-After. Members of system:masters, the
	// API server's own user among them, are not bounded.
	MaxWatchesPerUser int
	// Mount adds routes (OpenAPI, logs proxy) to the router.
	Mount []func(chi.Router)
	// OpenAPI, when set, serves the documents of custom resources too.
	OpenAPI *openapi.Documents
	// SelfAuthorized are mounted paths whose handlers authorize requests
	// themselves with resource attributes (the tap: list and watch of
	// what it streams), instead of as non-resource paths.
	SelfAuthorized []string
	// Profiling serves /debug/pprof, as upstream's --profiling does (to
	// users the authorizer lets GET those paths).
	Profiling bool
	// RejectAnonymous answers a request without a credential with 401, as
	// upstream's --anonymous-auth=false; by default it goes on as
	// system:anonymous and the authorizer decides what it may do.
	RejectAnonymous bool
	// WatchBookmarkInterval is how often watches that allow bookmarks get one.
	WatchBookmarkInterval time.Duration
	// WatchCacheBytes bounds the encoded recent events every resource's
	// watch hub keeps, all resources together (default
	// DefaultWatchCacheBytes). Watches that resume from before what is
	// kept are served from etcd.
	WatchCacheBytes int64
	// StorageMediaType is how pods are written to etcd: StorageProtobuf
	// (the default when empty) or StorageJSON. Every kind is read in
	// either; other kinds are always written as JSON. JSON is for a
	// cluster that still runs components older than the protobuf
	// encoding, which cannot read it (see docs/architecture.md).
	StorageMediaType string
	// KubeletTLS is how pods/log dials kubelets: a client certificate they
	// accept and the CA their serving certificates chain to (see
	// KubeletClientTLS). Nil makes pods/log fail with an internal error.
	KubeletTLS *tls.Config
	// Allocators give objects of a resource values unique across objects
	// (see Allocator). Nil gives Services cluster IPs and node ports from
	// the default ranges; an empty map allocates nothing.
	Allocators map[schema.GroupResource]Allocator
}

func (c *Config) validate() error {
	if c.Store == nil {
		return errors.New("apiserver: no store")
	}
	if len(c.Resources) == 0 {
		return errors.New("apiserver: no resources")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Authorizer == nil {
		c.Authorizer = auth.AlwaysAllow{}
	}
	switch c.StorageMediaType {
	case "":
		c.StorageMediaType = StorageProtobuf
	case StorageProtobuf, StorageJSON:
	default:
		return fmt.Errorf("apiserver: storage media type %q: want %s or %s", c.StorageMediaType, StorageProtobuf, StorageJSON)
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics()
	}
	if c.MaxRequestsInFlight == 0 {
		c.MaxRequestsInFlight = 400
	}
	if c.MaxMutatingRequestsInFlight == 0 {
		c.MaxMutatingRequestsInFlight = 200
	}
	if c.InFlightWait == 0 {
		c.InFlightWait = 5 * time.Second
	}
	if c.RequestBodyTimeout == 0 {
		c.RequestBodyTimeout = DefaultRequestBodyTimeout
	}
	if c.MaxWatchesPerUser == 0 {
		c.MaxWatchesPerUser = DefaultMaxWatchesPerUser
	}
	if c.WatchBookmarkInterval == 0 {
		c.WatchBookmarkInterval = 10 * time.Second
	}
	if c.WatchCacheBytes <= 0 {
		c.WatchCacheBytes = DefaultWatchCacheBytes
	}
	if c.Allocators == nil {
		a, err := defaultAllocators(c.Store)
		if err != nil {
			return err
		}
		c.Allocators = a
	}
	return nil
}

// TokenReviewer authenticates a bearer token for TokenReview: the user, and
// the audiences of the request the token is valid for. It should run every
// token authenticator the server has (an auth.Bearer over them); ok false
// without error is reported as upstream's "invalid bearer token".
type TokenReviewer interface {
	AuthenticateTokenAudiences(ctx context.Context, token string, audiences []string) (u auth.User, matched []string, ok bool, err error)
}

// Version is what /version reports.
var Version = version.Info{
	Major: "1", Minor: "33", GitVersion: "v1.33.0-kubebus", GitCommit: "kubebus",
	GitTreeState: "clean", BuildDate: "2026-11-22T00:00:00Z", GoVersion: "go1.26", Compiler: "gc", Platform: "linux/amd64",
}

// Server serves the REST API.
type Server struct {
	cfg      Config
	store    *storage.Store
	log      *slog.Logger
	table    *table
	readOnly inflight
	mutating inflight
	watches  *watchLimit
	handler  http.Handler
	kubelet  *http.Client // nil without Config.KubeletTLS
	fields   *fieldmanager.Managers

	crds *customResources

	hubsMu     sync.Mutex
	hubs       map[*resource.Resource]*hub
	ringBudget *ringBudget
}

// New builds a server from cfg.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, store: cfg.Store, log: cfg.Logger,
		hubs:       map[*resource.Resource]*hub{},
		ringBudget: newRingBudget(cfg.WatchCacheBytes),
		crds:       newCustomResources(),
		readOnly:   newInflight(cfg.MaxRequestsInFlight, cfg.InFlightWait),
		mutating:   newInflight(cfg.MaxMutatingRequestsInFlight, cfg.InFlightWait),
		watches:    newWatchLimit(cfg.MaxWatchesPerUser),
		kubelet:    newKubeletClient(cfg.KubeletTLS),
	}
	t, err := newTable(cfg.Resources)
	if err != nil {
		return nil, err
	}
	s.table = t
	fields, err := fieldmanager.New(cfg.Resources)
	if err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	s.fields = fields
	s.handler = s.routes()
	return s, nil
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(presizeStack, s.recoverer, s.bodyDeadline, s.authenticate, s.impersonate, s.authorizeNonResource)
	r.Get("/livez", s.serveLive)
	r.Get("/healthz", s.serveReady)
	r.Get("/readyz", s.serveReady)
	r.Handle("/metrics", s.cfg.Metrics.Handler())
	// Upstream serves these with and without a trailing slash.
	for _, slash := range []string{"", "/"} {
		r.Get("/version"+slash, s.serveVersion)
		r.Get("/api"+slash, s.serveAPIVersions)
		r.Get("/apis"+slash, s.serveAPIGroupList)
		r.Get("/api/v1"+slash, s.serveResourceList)
		r.Get("/apis/{group}"+slash, s.serveAPIGroup)
		r.Get("/apis/{group}/{version}"+slash, s.serveResourceList)
	}
	r.Handle("/api/v1/*", http.HandlerFunc(s.serveResource))
	r.Handle("/apis/{group}/{version}/*", http.HandlerFunc(s.serveResource))
	if s.cfg.Profiling {
		r.HandleFunc("/debug/pprof/*", pprof.Index)
		r.HandleFunc("/debug/pprof/profile", pprof.Profile)
		r.HandleFunc("/debug/pprof/trace", pprof.Trace)
		r.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		r.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	}
	for _, m := range s.cfg.Mount {
		m(r)
	}
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errMethodNotAllowed(r.Method, r.URL.Path))
	})
	return r
}

// recoverer turns a panic in a handler into a 500 Status and logs the stack.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(r.Context(), "panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				s.writeError(w, r, apierrors.NewInternalError(fmt.Errorf("internal error while serving %s %s", r.Method, r.URL.Path)))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// presizeStack grows the request goroutine's stack first (growStack).
func presizeStack(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		growStack(0)
		next.ServeHTTP(w, r)
	})
}

// stackReserve is how much stack growStack makes room for.
const stackReserve = 24 << 10

// growStack grows the calling goroutine's stack, while it is still
// shallow, to about what the deepest request work needs (decoding JSON
// and the field manager's walks recurse once per level of an object).
// net/http serves every request on a new goroutine with a small stack;
// grown on the way down instead, the stack is copied at each doubling
// with every frame then on it, which cost about 6% of the API server's
// CPU under the node-load benchmark.
//
//go:noinline
func growStack(i int) byte {
	var buf [stackReserve]byte
	buf[i%stackReserve] = 1
	return buf[(i+1)%stackReserve]
}

// authenticate attaches the request's user to its context: an
// authenticated user with system:authenticated among its groups, or
// system:anonymous when the request has no credential and anonymous
// requests are allowed. A bad credential is a 401, as upstream.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		u := auth.Anonymous
		ok := false
		if s.cfg.Authenticator != nil {
			got, found, err := s.cfg.Authenticator.Authenticate(r)
			if err != nil {
				s.cfg.Metrics.observeAuthentication("error", time.Since(start))
				// As upstream: the client learns only "Unauthorized", the log why.
				s.log.WarnContext(r.Context(), "unable to authenticate the request", "remote", r.RemoteAddr, "path", r.URL.Path, "err", err)
				s.writeError(w, r, apierrors.NewUnauthorized("Unauthorized"))
				return
			}
			if found {
				u, ok = got.WithAuthenticated(), true
			}
		}
		if !ok && s.cfg.RejectAnonymous {
			s.cfg.Metrics.observeAuthentication("failure", time.Since(start))
			s.writeError(w, r, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
		// Anonymous, where allowed, is a success, as upstream's anonymous
		// authenticator is the last of its union.
		s.cfg.Metrics.observeAuthentication("success", time.Since(start))
		next.ServeHTTP(w, r.WithContext(auth.WithUser(r.Context(), u)))
	})
}

// lookup finds the resource a request names.
func (s *Server) lookup(ri RequestInfo) (*resource.Resource, error) {
	res, ok := s.table.get(schema.GroupVersionResource{Group: ri.Group, Version: ri.Version, Resource: ri.Resource})
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: ri.Group, Resource: ri.Resource}, "")
	}
	return res, nil
}

// limit takes an in-flight slot, waiting for one a while, or fails with
// 429. Long-running requests (watches and pods/log) take none, as upstream.
func (s *Server) limit(ctx context.Context, ri RequestInfo) (release func(), err error) {
	if longRunning(ri) {
		return func() {}, nil
	}
	l := s.readOnly
	switch ri.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		l = s.mutating
	}
	return l.acquire(ctx)
}
