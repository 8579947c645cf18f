package storage

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Leadership is a won election. Done closes when it is lost (the session's
// lease expired or was revoked); Resign gives it up.
type Leadership struct {
	Done   <-chan struct{}
	Resign func(context.Context) error
}

// Campaign blocks until this process (id) leads the election named name, or
// ctx ends. ttlSeconds bounds how long a dead leader keeps the role. The
// election lives under /kubebus/elections/, outside /registry, so the bus
// never republishes it.
func (s *Store) Campaign(ctx context.Context, name, id string, ttlSeconds int) (*Leadership, error) {
	sess, err := concurrency.NewSession(s.cli, concurrency.WithTTL(ttlSeconds), concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		return nil, fmt.Errorf("opening election session: %w", err)
	}
	el := concurrency.NewElection(sess, "/kubebus/elections/"+name)
	if err := el.Campaign(ctx, id); err != nil {
		sess.Close()
		return nil, fmt.Errorf("campaigning for %s: %w", name, err)
	}
	return &Leadership{
		Done: sess.Done(),
		Resign: func(ctx context.Context) error {
			defer sess.Close()
			return el.Resign(ctx)
		},
	}, nil
}

// IsRegistryKey reports whether a key holds an object (and so is published).
func IsRegistryKey(key string) bool {
	return len(key) > len(RegistryPrefix) && key[:len(RegistryPrefix)] == RegistryPrefix
}

// RegistryPrefix is the prefix of every object key.
const RegistryPrefix = "/registry/"

var _ = clientv3.WithPrefix
