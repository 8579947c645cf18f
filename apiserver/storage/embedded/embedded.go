// Package embedded runs an etcd member inside the kubebus process for the
// all-in-one cluster. It listens on loopback only.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Config says where the member keeps its data and which loopback ports it uses.
type Config struct {
	Dir        string // data directory
	ClientPort int    // 0 picks a free port
	PeerPort   int    // 0 picks a free port
	// ProgressNotifyInterval makes etcd send progress marks on idle watches.
	ProgressNotifyInterval time.Duration
	// CompactionRetention is etcd's periodic compaction window ("5m" when
	// empty, "0" to keep all history).
	CompactionRetention string
}

// Etcd is a running embedded member.
type Etcd struct {
	e        *embed.Etcd
	Endpoint string // client URL, e.g. http://127.0.0.1:2379
}

// Start starts the member and waits until it serves.
func Start(ctx context.Context, cfg Config) (*Etcd, error) {
	if cfg.Dir == "" {
		return nil, errors.New("embedded etcd: no data directory")
	}
	ec := embed.NewConfig()
	ec.Name = "kubebus"
	ec.Dir = cfg.Dir
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	ec.LogLevel = "error"
	cu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", cfg.ClientPort))
	pu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", cfg.PeerPort))
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	ec.AutoCompactionMode = "periodic"
	ec.AutoCompactionRetention = cfg.CompactionRetention
	if ec.AutoCompactionRetention == "" {
		ec.AutoCompactionRetention = "5m"
	}
	ec.QuotaBackendBytes = 8 << 30
	if cfg.ProgressNotifyInterval > 0 {
		ec.WatchProgressNotifyInterval = cfg.ProgressNotifyInterval
	}
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("starting embedded etcd in %s: %w", cfg.Dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd failed: %w", err)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, errors.New("embedded etcd: not ready after 60s")
	}
	return &Etcd{e: e, Endpoint: "http://" + e.Clients[0].Addr().String()}, nil
}

// Close stops the member.
func (e *Etcd) Close() { e.e.Close() }
