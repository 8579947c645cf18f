// Package serve runs one API server process: it connects to etcd and NATS,
// ensures the certificates, bootstraps the system namespaces and serves
// HTTPS until its context ends. Both `kubebus apiserver` and the all-in-one
// `kubebus server` use it.
package serve

import (
	"context"
	"errors"
	"fmt"
	clientv3 "go.etcd.io/etcd/client/v3"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver"
	"github.com/kubebus/kubebus/apiserver/openapi"
	"github.com/kubebus/kubebus/apiserver/pki"
	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/apiserver/servicealloc"
	"github.com/kubebus/kubebus/apiserver/storage"
	"github.com/kubebus/kubebus/apiserver/storage/encryption"
	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/busauth"
	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/bus/publish"
	"github.com/kubebus/kubebus/bus/stages"
	"github.com/kubebus/kubebus/bus/tap"
)

// Options configure one API server.
type Options struct {
	EtcdServers []string
	// EtcdCAFile verifies the etcd members' serving certificates, and
	// EtcdCertFile and EtcdKeyFile are the client certificate they require
	// (upstream's --etcd-cafile, --etcd-certfile and --etcd-keyfile).
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// EtcdClient, when set, is an in-process client of an embedded member
	// (kubebus server's), used instead of dialling EtcdServers: its
	// requests do not leave the process.
	EtcdClient *clientv3.Client
	NATSURL    string
	// NATSCredentials are the API server's bus credentials. The bus lets
	// its identity (busauth.PublisherUser) publish and manage the streams.
	// Empty: the CA of PKIDir and a client certificate for
	// busauth.PublisherUser issued there (kept there without the CA key).
	NATSCredentials bus.Credentials
	// BindAddress and Port say where to listen (Port 0 picks a free port).
	BindAddress string
	Port        int
	// PKIDir holds the CA and serving certificate (created when missing).
	PKIDir string
	// Hosts are the names in the serving certificate.
	Hosts []string
	// Kubeconfig, when set, is written for the admin user.
	Kubeconfig string
	Logger     *slog.Logger
	// TokenFile, when set, authenticates bearer tokens listed in it
	// (token,user,uid[,"groups"] per line, as upstream's --token-auth-file).
	TokenFile string
	// Auth says who may do what (authentication, authorization,
	// admission, encryption at rest, the kubernetes Service).
	Auth AuthOptions
	// BusLimits bound the bus's history streams.
	BusLimits bus.StreamLimits
	// Limits bound what clients may hold and how long the bus may lag.
	Limits Limits
	// ReadyChecks are /readyz checks of the process's own parts (e.g. the
	// embedded NATS's store), by name, besides the API server's.
	ReadyChecks map[string]func(context.Context) error
	// WatchCacheBytes bounds the recent events the REST watch hubs keep,
	// every resource together (0: apiserver.DefaultWatchCacheBytes).
	WatchCacheBytes int64
	// StorageMediaType is how pods are written to etcd (see
	// apiserver.Config.StorageMediaType; empty: protobuf).
	StorageMediaType string
	// Listening, when set, receives the bound address once serving.
	Listening chan<- string
	// PodIndexers are indexes the API server's pods cache keeps besides
	// its own, and SharePods, when set, is handed that cache once it is
	// made, before the API server listens: kubebus server's components
	// read pods from it instead of from a bus consumer of their own, so
	// that each pod event is decoded and held once in the process. Nothing
	// may change the objects it holds.
	PodIndexers map[string]informer.IndexFunc[*corev1.Pod]
	SharePods   func(*informer.Informer[*corev1.Pod])
	// ServiceClusterIPRange and ServiceNodePortRange are where Services get
	// their cluster IPs and node ports (empty: 10.96.0.0/12, 30000-32767).
	ServiceClusterIPRange string
	ServiceNodePortRange  string
}

// Limits bound what one client may take of the API server, and say how
// long the bus may fall behind etcd before /readyz fails. Zero values are
// the defaults.
type Limits struct {
	// RequestBodyTimeout is how long a client may take to send a request
	// body (apiserver.DefaultRequestBodyTimeout; negative: no limit).
	RequestBodyTimeout time.Duration
	// MaxWatchesPerUser is how many watches one user may hold at once
	// (apiserver.DefaultMaxWatchesPerUser; negative: no limit).
	MaxWatchesPerUser int
	// BusStallWindow is how long an etcd revision may stay unpublished
	// before /readyz fails (publish.DefaultStallWindow).
	BusStallWindow time.Duration
}

func (o *Options) validate() error {
	if len(o.EtcdServers) == 0 {
		return errors.New("no etcd servers")
	}
	if o.PKIDir == "" {
		return errors.New("no PKI directory")
	}
	if o.BindAddress == "" {
		o.BindAddress = "127.0.0.1"
	}
	if len(o.Hosts) == 0 {
		o.Hosts = []string{"localhost", "127.0.0.1", "::1"}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// Run serves until ctx ends.
func Run(ctx context.Context, o Options) error {
	if err := o.validate(); err != nil {
		return fmt.Errorf("apiserver options: %w", err)
	}
	metrics := apiserver.NewMetrics()
	scfg := storage.Config{Endpoints: o.EtcdServers, Observe: metrics.ObserveEtcd,
		CAFile: o.EtcdCAFile, CertFile: o.EtcdCertFile, KeyFile: o.EtcdKeyFile, Client: o.EtcdClient}
	if o.Auth.EncryptionProviderConfig != "" {
		t, err := encryption.Load(o.Auth.EncryptionProviderConfig)
		if err != nil {
			return fmt.Errorf("--encryption-provider-config: %w", err)
		}
		scfg.Transformer = t
	}
	store, err := storage.New(scfg)
	if err != nil {
		return err
	}
	defer store.Close()
	bundle, err := pki.Ensure(pki.Config{Dir: o.PKIDir, Hosts: ServingHosts(o.Hosts, o.ServiceClusterIPRange, o.Auth.AdvertiseAddress)})
	if err != nil {
		return fmt.Errorf("preparing certificates: %w", err)
	}
	svcAlloc, err := servicealloc.New(servicealloc.Config{Store: store, ClusterIPRange: o.ServiceClusterIPRange, NodePortRange: o.ServiceNodePortRange})
	if err != nil {
		return err
	}
	resources := append(resource.Builtin(), apiserver.CRDRow())
	docs, err := openapi.Build(openAPIResources(resources))
	if err != nil {
		return fmt.Errorf("building openapi documents: %w", err)
	}
	instance := o.Auth.Instance
	if instance == "" {
		host, _ := os.Hostname()
		instance = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	checks := map[string]func(context.Context) error{}
	mounts := []func(chi.Router){docs.Register}
	var caches *authCaches
	var runCaches func(context.Context) error
	var js jetstream.JetStream
	if o.NATSURL != "" {
		url, creds := o.NATSURL, o.NATSCredentials
		if creds.CertFile == "" && len(creds.CertData) == 0 && creds.InProcess == nil {
			if creds, err = publisherCredentials(bundle, creds); err != nil {
				return err
			}
		}
		checks["nats"] = func(ctx context.Context) error { return bus.Ping(ctx, url, creds) }
		nc, j, err := bus.Connect(o.NATSURL, "kubebus-apiserver", creds)
		if err != nil {
			return err
		}
		js = j
		defer nc.Close()
		pub, err := publish.New(publish.Config{Source: storeSource{store}, Elector: newElector(store), JetStream: js, Limits: o.BusLimits,
			StallWindow: o.Limits.BusStallWindow,
			Logger:      o.Logger.With("component", "publisher"), Metrics: publish.NewMetrics(metrics.Registry)})
		if err != nil {
			return err
		}
		checks["bus-publisher"] = pub.Ready
		for name, check := range o.ReadyChecks {
			checks[name] = check
		}
		pctx, stopPub := context.WithCancel(ctx)
		pubDone := make(chan struct{})
		go func() { defer close(pubDone); _ = pub.Run(pctx) }()
		defer func() { stopPub(); <-pubDone }()
		if caches, err = newAuthCaches(js, instance, o.Logger.With("component", "apiserver-caches"), metrics.Registry, o.PodIndexers); err != nil {
			return err
		}
		if o.SharePods != nil {
			o.SharePods(caches.pods)
		}
		runCaches = caches.Run
		// The pod stage histograms, read from KUBE_HISTORY.
		sctx, stopStages := context.WithCancel(ctx)
		stagesDone := make(chan struct{})
		go func() {
			defer close(stagesDone)
			if err := stages.Run(sctx, stages.Config{JetStream: js, Registerer: metrics.Registry,
				Logger: o.Logger.With("component", "pod-stages")}); err != nil {
				o.Logger.Error("the pod stage metrics stopped", "err", err)
			}
		}()
		defer func() {
			stopStages()
			select { // it deletes its consumer on the way out; not for long when NATS is gone
			case <-stagesDone:
			case <-time.After(2 * time.Second):
			}
		}()
	}
	sec, err := newSecurity(o, bundle.CA, store, caches, metrics)
	if err != nil {
		return err
	}
	selfAuthorized := []string{}
	if caches != nil {
		tapHandler := authorizedTap(sec.authz, tap.Handler(js, o.Logger.With("component", "tap")))
		lagHandler := authorizedTapLag(sec.authz, tap.LagHandler(js, o.Logger.With("component", "tap")))
		mounts = append(mounts, func(r chi.Router) {
			r.Handle(tap.EndpointPath, tapHandler)
			r.Handle(tap.LagEndpointPath, lagHandler)
		})
		selfAuthorized = append(selfAuthorized, tap.EndpointPath, tap.LagEndpointPath)
	}
	mounts = append(mounts, sec.mounts...)
	if runCaches != nil {
		cctx, stopCaches := context.WithCancel(ctx)
		cachesDone := make(chan struct{})
		go func() {
			defer close(cachesDone)
			if err := runCaches(cctx); err != nil {
				o.Logger.Error("the API server's caches stopped", "err", err)
			}
		}()
		defer func() { stopCaches(); <-cachesDone }()
		checks["authorization-cache"] = func(context.Context) error {
			if !caches.HasSynced() {
				return errors.New("the authorization caches have not loaded")
			}
			return nil
		}
	}
	// pods/log dials kubelets with this client certificate and verifies
	// their serving certificates against the cluster CA.
	kubeletCert, kubeletKey, err := bundle.IssueClient(apiserver.KubeletClientUser, nil)
	if err != nil {
		return fmt.Errorf("kubelet client certificate: %w", err)
	}
	kubeletTLS, err := apiserver.KubeletClientTLS(kubeletCert, kubeletKey, bundle.CA)
	if err != nil {
		return err
	}
	srv, err := apiserver.New(apiserver.Config{
		Store: store, Resources: resources, Logger: o.Logger, Metrics: metrics,
		Authenticator:      sec.authn,
		Authorizer:         sec.authz,
		RuleResolver:       sec.rules,
		TokenReviewer:      sec.reviewer,
		TokenIssuer:        sec.issuer,
		RejectAnonymous:    !o.Auth.AnonymousAuth,
		Allocators:         map[schema.GroupResource]apiserver.Allocator{{Resource: "services"}: svcAlloc},
		Admission:          sec.admission,
		ReadyChecks:        checks,
		RequestBodyTimeout: o.Limits.RequestBodyTimeout,
		MaxWatchesPerUser:  o.Limits.MaxWatchesPerUser,
		Profiling:          o.Auth.Profiling,
		Mount:              mounts,
		OpenAPI:            docs,
		KubeletTLS:         kubeletTLS,
		WatchCacheBytes:    o.WatchCacheBytes,
		StorageMediaType:   o.StorageMediaType,
		SelfAuthorized:     selfAuthorized,
	})
	if err != nil {
		return err
	}
	sec.objects.srv.Store(srv)
	bctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = srv.Bootstrap(bctx)
	if err == nil {
		err = bootstrapPolicy(bctx, srv)
	}
	if err == nil {
		err = waitForPolicy(bctx, caches, o.Logger)
	}
	cancel()
	if err != nil {
		return fmt.Errorf("bootstrapping: %w", err)
	}
	if err := srv.StartCustomResources(ctx); err != nil {
		return fmt.Errorf("serving custom resources: %w", err)
	}
	tlsCfg, err := bundle.ServerTLSConfig()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.BindAddress, fmt.Sprint(o.Port)))
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	addr := ln.Addr().String()
	if o.Kubeconfig != "" {
		if err := pki.WriteKubeconfig(o.Kubeconfig, "https://"+addr, bundle, "", ""); err != nil {
			ln.Close()
			return fmt.Errorf("writing kubeconfig: %w", err)
		}
	}
	clusterIP, err := firstServiceIP(firstNonEmpty(o.ServiceClusterIPRange, servicealloc.DefaultClusterIPRange))
	if err != nil {
		ln.Close()
		return err
	}
	advAddr, advPort := advertised(o, addr)
	external := net.JoinHostPort(advAddr, strconv.Itoa(advPort))
	sec.external.Store(&external)
	kctx, stopK := context.WithCancel(ctx)
	kDone := make(chan struct{})
	go func() {
		defer close(kDone)
		_ = srv.RunKubernetesService(kctx, apiserver.KubernetesService{ClusterIP: clusterIP, AdvertiseAddress: advAddr, Port: advPort, ID: instance})
	}()
	go srv.RunKubeDNSService(kctx, firstNonEmpty(o.ServiceClusterIPRange, servicealloc.DefaultClusterIPRange)) //nolint:errcheck // it logs its own failures
	defer func() { stopK(); <-kDone }()
	hs := &http.Server{Handler: srv.Handler(), TLSConfig: tlsCfg, ReadHeaderTimeout: 30 * time.Second,
		ErrorLog: slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug)}
	errc := make(chan error, 1)
	go func() { errc <- hs.ServeTLS(ln, "", "") }()
	o.Logger.Info("api server serving", "address", "https://"+addr, "etcd", o.EtcdServers)
	if o.Listening != nil {
		o.Listening <- addr
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	return nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func openAPIResources(rs []*resource.Resource) []openapi.Resource {
	out := make([]openapi.Resource, 0, len(rs))
	for _, r := range rs {
		subs := make([]string, 0, len(r.Subresources))
		for _, s := range r.Subresources {
			subs = append(subs, string(s))
		}
		out = append(out, openapi.Resource{GVK: r.GVK, Plural: r.Plural, Namespaced: r.Namespaced, Subresources: subs, Object: r.New(), List: r.NewList()})
	}
	return out
}

// publisherCredentials completes creds (which name no client certificate)
// with the publisher's certificate from the bundle, issued when missing,
// and the bundle's CA unless creds name one.
func publisherCredentials(b *pki.Bundle, creds bus.Credentials) (bus.Credentials, error) {
	cert, key, err := b.IssueClient(busauth.PublisherUser, nil)
	if err != nil {
		return bus.Credentials{}, fmt.Errorf("the API server's bus certificate: %w", err)
	}
	creds.CertFile, creds.KeyFile = cert, key
	if creds.CAFile == "" && len(creds.CAData) == 0 {
		creds.CAFile = b.CAFile
	}
	return creds, nil
}
