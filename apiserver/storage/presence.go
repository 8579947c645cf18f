package storage

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// presencePrefix holds the keys API servers announce themselves under,
// outside /registry so the bus never republishes them (upstream keeps its
// master leases under /masterleases/ for the same purpose).
const presencePrefix = "/kubebus/presence/"

// Announce keeps key group/id = value in etcd while ctx lasts and the
// process is alive: the key is bound to a lease of ttlSeconds that a
// session keeps alive, so a crashed process's key goes away by itself.
// Done closes when the announcement is lost (the lease expired).
func (s *Store) Announce(ctx context.Context, group, id, value string, ttlSeconds int) (done <-chan struct{}, err error) {
	sess, err := concurrency.NewSession(s.cli, concurrency.WithTTL(ttlSeconds), concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		return nil, fmt.Errorf("opening presence session: %w", err)
	}
	if _, err := s.cli.Put(ctx, presencePrefix+group+"/"+id, value, clientv3.WithLease(sess.Lease())); err != nil {
		sess.Close()
		return nil, fmt.Errorf("announcing %s/%s: %w", group, id, err)
	}
	go func() {
		<-ctx.Done()
		sess.Close() // revokes the lease: the key goes at once on a clean stop
	}()
	return sess.Done(), nil
}

// Announced returns the values announced in group, by id.
func (s *Store) Announced(ctx context.Context, group string) (map[string]string, error) {
	prefix := presencePrefix + group + "/"
	resp, err := s.cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("reading %s announcements: %w", group, err)
	}
	out := make(map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), prefix)] = string(kv.Value)
	}
	return out, nil
}
