package app

import (
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/publish"

	"github.com/kubebus/kubebus/apiserver"
	"github.com/kubebus/kubebus/apiserver/admission"
	"github.com/kubebus/kubebus/apiserver/serve"
	"github.com/kubebus/kubebus/apiserver/serviceaccount"
	"github.com/kubebus/kubebus/apiserver/servicealloc"
)

func newAPIServerCmd(g *globals) *cobra.Command {
	var (
		o  serve.Options
		nf natsFlags
	)
	cmd := &cobra.Command{
		Use:   "apiserver",
		Short: "Run the API server alone against external etcd and NATS",
		Long: `Run one API server against an existing etcd cluster and NATS server.
Several API servers may share one etcd; they are stateless.

On the bus (NATS, mutual TLS) the API server is the publisher, identity
system:kubebus:publisher: by default with a client certificate for it in
--pki-dir (issued there when the directory holds the CA key; kubebus certs
makes it otherwise) and the CA there; --nats-* flags override them.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Logger = g.logger()
			if (nf.certFile == "") != (nf.keyFile == "") {
				return errors.New("--nats-cert-file and --nats-key-file go together")
			}
			o.NATSCredentials = bus.Credentials{CAFile: nf.caFile, CertFile: nf.certFile, KeyFile: nf.keyFile}
			return serve.Run(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.EtcdServers, "etcd-servers", nil, "etcd client URLs, comma separated")
	f.StringVar(&o.EtcdCAFile, "etcd-cafile", "", "CA file that verifies the etcd members' serving certificates")
	f.StringVar(&o.EtcdCertFile, "etcd-certfile", "", "client certificate file presented to etcd")
	f.StringVar(&o.EtcdKeyFile, "etcd-keyfile", "", "key file of --etcd-certfile")
	f.StringVar(&o.NATSURL, "nats-url", "", "NATS server URL")
	f.StringVar(&nf.caFile, "nats-ca-file", "", "CA certificate (PEM) that signs the NATS server's certificate (default --pki-dir's CA)")
	f.StringVar(&nf.certFile, "nats-cert-file", "", "client certificate (PEM) for NATS, CN system:kubebus:publisher (default one in --pki-dir)")
	f.StringVar(&nf.keyFile, "nats-key-file", "", "key of --nats-cert-file")
	f.StringVar(&o.BindAddress, "bind-address", "127.0.0.1", "address to listen on")
	f.IntVar(&o.Port, "secure-port", 6443, "HTTPS port")
	f.StringVar(&o.PKIDir, "pki-dir", "", "directory holding (or receiving) the CA and serving certificate")
	f.StringVar(&o.Kubeconfig, "write-kubeconfig", "", "write an admin kubeconfig here")
	f.StringSliceVar(&o.Hosts, "tls-hosts", []string{"localhost", "127.0.0.1", "::1"}, "names in the serving certificate")
	f.StringVar(&o.TokenFile, "token-auth-file", "", "static bearer tokens: token,user,uid[,\"groups\"] per line")
	f.StringVar(&o.ServiceClusterIPRange, "service-cluster-ip-range", servicealloc.DefaultClusterIPRange, "CIDR Services get their cluster IPs from")
	f.StringVar(&o.ServiceNodePortRange, "service-node-port-range", servicealloc.DefaultNodePortRange, "ports Services of type NodePort and LoadBalancer get their node ports from")
	addBusFlags(f, &o.BusLimits)
	addWatchCacheFlag(f, &o.WatchCacheBytes)
	addStorageMediaTypeFlag(f, &o.StorageMediaType)
	addLimitFlags(f, &o.Limits)
	addAuthFlags(f, &o.Auth)
	f.StringVar(&o.Auth.Instance, "instance", "", "name of this API server among others, for its bus consumers (default host and process id)")
	_ = cmd.MarkFlagRequired("etcd-servers")
	_ = cmd.MarkFlagRequired("pki-dir")
	return cmd
}

// addAuthFlags registers who may do what, with upstream's flag names.
func addAuthFlags(f *pflag.FlagSet, a *serve.AuthOptions) {
	f.BoolVar(&a.AnonymousAuth, "anonymous-auth", true, "let requests without a credential in as system:anonymous (RBAC grants them health and version only); false answers them 401")
	f.StringSliceVar(&a.AuthorizationModes, "authorization-mode", []string{"Node", "RBAC"}, "authorizers after system:masters, in order: Node, RBAC, or AlwaysAllow alone (every request allowed: for measurements only)")
	f.BoolVar(&a.Profiling, "profiling", false, "serve /debug/pprof (to users RBAC lets read it)")
	f.StringVar(&a.EncryptionProviderConfig, "encryption-provider-config", "", "EncryptionConfiguration file: which resources are encrypted at rest in etcd, and how")
	f.StringSliceVar(&a.EnableAdmissionPlugins, "enable-admission-plugins", nil, "admission plugins to run besides the defaults ("+strings.Join(admission.DefaultPlugins(), ", ")+")")
	f.StringSliceVar(&a.DisableAdmissionPlugins, "disable-admission-plugins", nil, "default admission plugins not to run")
	f.StringVar(&a.ServiceAccountIssuer, "service-account-issuer", serviceaccount.DefaultIssuer, "the issuer (iss) of ServiceAccount tokens, and of the OIDC discovery document")
	f.StringVar(&a.ServiceAccountJWKSURI, "service-account-jwks-uri", "", "the jwks_uri of the OIDC discovery document, where relying parties fetch the token keys (default https://<advertised address>/openid/v1/jwks)")
	f.DurationVar(&a.ServiceAccountMaxTokenExpiration, "service-account-max-token-expiration", 0, "the longest lifetime the TokenRequest API gives a token, between 1h and 2^32 s (0: as long as asked)")
	f.StringVar(&a.AdvertiseAddress, "advertise-address", "", "the address pods reach this API server at (the kubernetes Service's endpoints; default the bind address)")
}

// addLimitFlags registers what one client may take and how long the bus
// may lag.
func addLimitFlags(f *pflag.FlagSet, l *serve.Limits) {
	f.DurationVar(&l.RequestBodyTimeout, "request-body-timeout", apiserver.DefaultRequestBodyTimeout, "how long a client may take to send a request body (negative: no limit)")
	f.IntVar(&l.MaxWatchesPerUser, "max-watches-per-user", apiserver.DefaultMaxWatchesPerUser, "most concurrent watches one user may hold; system:masters is exempt (negative: no limit)")
	f.DurationVar(&l.BusStallWindow, "bus-publisher-stall-window", publish.DefaultStallWindow, "how long an etcd revision may stay unpublished on the bus before /readyz fails")
}

// addStorageMediaTypeFlag registers how pods are written to etcd, with
// upstream's flag name.
func addStorageMediaTypeFlag(f *pflag.FlagSet, s *string) {
	f.StringVar(s, "storage-media-type", apiserver.StorageProtobuf,
		"how pods are written to etcd: "+apiserver.StorageProtobuf+" (upstream's encoding) or "+apiserver.StorageJSON+
			" (while kubebus components older than the protobuf encoding still run; every kind is read in either)")
}

// addWatchCacheFlag registers the bound of the REST watch hubs' history.
func addWatchCacheFlag(f *pflag.FlagSet, n *int64) {
	f.Int64Var(n, "watch-cache-bytes", apiserver.DefaultWatchCacheBytes,
		"bytes of recent events the REST watches keep in memory, all resources together; watches resuming from older revisions are served from etcd")
}

// addBusFlags registers the bus stream limits.
func addBusFlags(f *pflag.FlagSet, l *bus.StreamLimits) {
	f.DurationVar(&l.MaxAge, "bus-history-max-age", 24*time.Hour, "how long the bus keeps history")
	f.Int64Var(&l.MaxBytes, "bus-history-max-bytes", 1<<30, "how many bytes of history the bus keeps")
	f.Int64Var(&l.NodeMaxBytes, "bus-nodepods-max-bytes", bus.DefaultNodeMaxBytes, "kubebus server: how many bytes of per-node pod events the bus keeps in the embedded NATS's memory (a kubelet that falls further behind rebuilds from the latest-state stream); with an external NATS they are on disk, within --bus-history-max-bytes")
	f.Int64Var(&l.StateMaxBytes, "bus-state-max-bytes", 0, "how many bytes the bus's latest-state stream may hold (0: as --bus-history-max-bytes); when full, the publisher stalls and /readyz says so")
	f.DurationVar(&l.Duplicates, "bus-dedupe-window", bus.DefaultDuplicates, "how long the bus remembers message IDs to drop a retried publish (held in memory)")
	f.IntVar(&l.Replicas, "bus-replicas", 1, "copies the bus keeps of each stream: 3 on a NATS cluster of three (kubebus nats), so the bus survives the loss of a member")
}
