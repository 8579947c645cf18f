package app

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubebus/kubebus/apiserver/pki"
	"github.com/kubebus/kubebus/apiserver/storage/embedded"
	"github.com/kubebus/kubebus/bus/natsserver"
)

// etcdOptions configure `kubebus etcd`: one member of an etcd cluster.
type etcdOptions struct {
	name, dataDir, pkiDir, host, initialCluster string
	hosts                                       []string
	clientPort, peerPort                        int
}

func newEtcdCmd(g *globals) *cobra.Command {
	var o etcdOptions
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Run one member of an etcd cluster, with client and peer TLS, for a split deployment",
		Long: `Run one etcd member (etcd's embed server, the same code kubebus server
embeds) for the API servers of a split deployment. Clients and peers
need certificates of the etcd CA, which is apart from the cluster CA:
only the API servers (whose client certificate kubebus certs makes) and
the other members reach etcd.

Copy the same etcd CA (DIR/etcd/ca.crt and ca.key) into every member's
--pki-dir before its first run; the member then makes its own serving and
peer certificates for 127.0.0.1, localhost and --hosts. Three members:

  kubebus etcd --name etcd-0 --host 172.20.0.10 --hosts etcd-0 \
      --initial-cluster etcd-0=https://172.20.0.10:2380,etcd-1=https://172.20.0.11:2380,etcd-2=https://172.20.0.12:2380

A member that already has data ignores --initial-cluster.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, log := cmd.Context(), g.logger().With("component", "etcd", "member", o.name)
			if o.host != "" {
				o.hosts = append(o.hosts, o.host)
			}
			b, err := pki.EnsureEtcd(pki.EtcdConfig{Dir: o.pkiDir, Hosts: o.hosts})
			if err != nil {
				return fmt.Errorf("etcd certificates: %w", err)
			}
			e, err := embedded.Start(ctx, embedded.Config{
				Dir: o.dataDir, Name: o.name, Host: o.host, ClientPort: o.clientPort, PeerPort: o.peerPort,
				InitialCluster: o.initialCluster,
				TLS: &embedded.TLS{
					CertFile: b.ServerCertFile, KeyFile: b.ServerKeyFile, ClientCAFile: b.CAFile,
					PeerCertFile: b.PeerCertFile, PeerKeyFile: b.PeerKeyFile,
					PeerClientCertFile: b.PeerClientCertFile, PeerClientKeyFile: b.PeerClientKeyFile,
					PeerCAFile: b.CAFile,
				},
			})
			if err != nil {
				return err
			}
			defer e.Close()
			log.Info("etcd member ready", "endpoint", e.Endpoint)
			<-ctx.Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.name, "name", embedded.DefaultName, "the member's name in the cluster")
	f.StringVar(&o.dataDir, "data-dir", "/var/lib/kubebus/etcd", "where the member keeps its data")
	f.StringVar(&o.pkiDir, "pki-dir", "/var/lib/kubebus/pki", "the PKI directory: the etcd CA in DIR/etcd, and the member's certificates, made there when missing")
	f.StringVar(&o.host, "host", "127.0.0.1", "the address the member listens on and advertises to clients and peers")
	f.StringSliceVar(&o.hosts, "hosts", nil, "further DNS names and addresses of the member's certificates")
	f.IntVar(&o.clientPort, "client-port", 2379, "client port")
	f.IntVar(&o.peerPort, "peer-port", 2380, "peer port")
	f.StringVar(&o.initialCluster, "initial-cluster", "", "the members of a new cluster, as name=https://host:peer-port,... (empty: this member alone)")
	return cmd
}

// natsOptions configure `kubebus nats`: one member of a NATS cluster.
type natsOptions struct {
	name, storeDir, host, clusterName string
	caFile, certFile, keyFile         string
	routeCertFile, routeKeyFile       string
	routes                            []string
	port, clusterPort                 int
	maxStore, maxMemory               int64
}

func newNATSCmd(g *globals) *cobra.Command {
	var o natsOptions
	cmd := &cobra.Command{
		Use:   "nats",
		Short: "Run one member of the bus: a NATS server with JetStream, mutual TLS and kubebus's permissions",
		Long: `Run one NATS server with JetStream (nats-server, the same code kubebus
server embeds) for a split deployment. Clients authenticate with client
certificates of the cluster CA (--ca-file) and get the permissions of their
identity on the bus, as on the embedded server. The member needs no CA key:

  kubebus certs serving --pki-dir DIR --name nats-0 --hosts nats-0,10.0.0.21
  kubebus certs client --pki-dir DIR --user system:kubebus:nats-route --out route-0

With --cluster-port and --routes it joins a NATS cluster, its routes
authenticated both ways with route certificates (identity
system:kubebus:nats-route); the API server then makes its streams with
--bus-replicas copies:

  kubebus nats --name nats-0 --host 0.0.0.0 --ca-file DIR/ca.crt \
      --cert-file DIR/serving-nats-0.crt --key-file DIR/serving-nats-0.key \
      --cluster-port 6222 --route-cert-file route-0.crt --route-key-file route-0.key \
      --routes nats-route://nats-1:6222,nats-route://nats-2:6222`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := g.logger().With("component", "nats", "member", o.name)
			serverTLS, err := natsserver.ServerTLS(o.caFile, o.certFile, o.keyFile)
			if err != nil {
				return fmt.Errorf("nats: %w", err)
			}
			cfg := natsserver.Config{Name: o.name, StoreDir: o.storeDir, Host: o.host, Port: o.port, MaxStore: o.maxStore,
				MaxMemory: o.maxMemory, TLS: serverTLS, Logger: log}
			if o.clusterPort != 0 {
				if o.routeCertFile == "" || o.routeKeyFile == "" {
					return errors.New("nats: a member of a cluster (--cluster-port) needs --route-cert-file and --route-key-file")
				}
				routeTLS, err := natsserver.RouteTLS(o.caFile, o.certFile, o.keyFile, o.routeCertFile, o.routeKeyFile)
				if err != nil {
					return fmt.Errorf("nats: %w", err)
				}
				cfg.Cluster = natsserver.ClusterConfig{Name: o.clusterName, Port: o.clusterPort, Routes: o.routes, TLS: routeTLS}
			}
			s, err := natsserver.Start(cfg)
			if err != nil {
				return err
			}
			defer s.Shutdown()
			log.Info("nats member ready", "url", s.URL(), "routes", s.NumRoutes())
			<-cmd.Context().Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.name, "name", "kubebus", "the server's name; members of a cluster need distinct names")
	f.StringVar(&o.storeDir, "store-dir", "/var/lib/kubebus/nats", "where JetStream keeps its streams")
	f.StringVar(&o.host, "host", "127.0.0.1", "the address clients (and routes) connect to")
	f.IntVar(&o.port, "port", 4222, "client port (-1 picks a free one)")
	f.Int64Var(&o.maxStore, "max-store", 0, "bytes JetStream may keep on disk (0: NATS's default)")
	f.Int64Var(&o.maxMemory, "max-memory", natsserver.DefaultMaxMemory, "bytes JetStream may keep in memory-backed streams (kubebus's streams on an external NATS are on disk)")
	f.StringVar(&o.caFile, "ca-file", "", "the cluster CA certificate: clients' and routes' certificates must chain to it")
	f.StringVar(&o.certFile, "cert-file", "", "the serving certificate (of the cluster CA), also shown to routes")
	f.StringVar(&o.keyFile, "key-file", "", "the key of --cert-file")
	f.StringVar(&o.clusterName, "cluster-name", "kubebus", "the NATS cluster's name, the same on every member")
	f.IntVar(&o.clusterPort, "cluster-port", 0, "route port (0: not clustered; -1 picks a free one)")
	f.StringSliceVar(&o.routes, "routes", nil, "the other members' route URLs, nats-route://host:port")
	f.StringVar(&o.routeCertFile, "route-cert-file", "", "the client certificate presented to routes, user system:kubebus:nats-route")
	f.StringVar(&o.routeKeyFile, "route-key-file", "", "the key of --route-cert-file")
	for _, name := range []string{"ca-file", "cert-file", "key-file"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}
