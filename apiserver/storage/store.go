package storage

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
)

// Sentinel errors; callers branch on them with errors.Is.
var (
	ErrNotFound  = errors.New("storage: key not found")
	ErrExists    = errors.New("storage: key already exists")
	ErrConflict  = errors.New("storage: revision conflict")
	ErrCompacted = errors.New("storage: revision compacted")
	ErrNoParent  = errors.New("storage: parent key not found")
	// ErrUncertain marks a failed write whose outcome etcd did not report:
	// it may have been committed. Repeating it is not safe for a create
	// whose name the server picks.
	ErrUncertain = errors.New("storage: the write may have been committed")
)

// KV is one stored value with its revisions.
type KV struct {
	Key            string
	Value          []byte
	ModRevision    int64
	CreateRevision int64
	// Stale says the value was decrypted with a key that is no longer the
	// first of its resource: an update should write it even if unchanged,
	// so that it is encrypted again with the current key.
	Stale bool
}

// Config says which etcd to use.
type Config struct {
	Endpoints   []string
	DialTimeout time.Duration
	// Observe, when set, is called after every etcd request with its
	// operation and duration (for metrics).
	Observe func(op string, d time.Duration)
	// Transformer, when set, encrypts values of /registry keys on every
	// write and decrypts them on every read (see package encryption).
	// Values of Side keys are stored as given.
	Transformer Transformer
	// CAFile verifies the members' serving certificates (the system roots
	// when empty); CertFile and KeyFile are the client certificate the
	// members require. Any of them makes every endpoint need https.
	CAFile, CertFile, KeyFile string
	// Client, when set, is the client to use (the embedded member's
	// in-process client), instead of one dialled to Endpoints; the Store
	// closes it.
	Client *clientv3.Client
}

func (c *Config) validate() error {
	if c.Client != nil {
		return nil
	}
	if len(c.Endpoints) == 0 {
		return errors.New("storage: no etcd endpoints")
	}
	if c.CAFile != "" || c.CertFile != "" || c.KeyFile != "" {
		for _, ep := range c.Endpoints {
			if !strings.HasPrefix(ep, "https://") {
				return fmt.Errorf("storage: etcd endpoint %s is not https, but TLS files are given", ep)
			}
		}
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 5 * time.Second
	}
	return nil
}

// Store reads and writes keys in etcd.
type Store struct {
	cli     *clientv3.Client
	observe func(op string, d time.Duration)
	tr      Transformer
}

// New connects to etcd.
func New(cfg Config) (*Store, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cli := cfg.Client
	if cli == nil {
		tlsCfg, err := cfg.tlsConfig()
		if err != nil {
			return nil, err
		}
		cli, err = clientv3.New(clientv3.Config{
			Endpoints:          cfg.Endpoints,
			DialTimeout:        cfg.DialTimeout,
			TLS:                tlsCfg,
			Logger:             zap.NewNop(),
			MaxCallSendMsgSize: 8 << 20,
			MaxCallRecvMsgSize: 1 << 30,
		})
		if err != nil {
			return nil, fmt.Errorf("connecting to etcd %v: %w", cfg.Endpoints, err)
		}
	}
	obs := cfg.Observe
	if obs == nil {
		obs = func(string, time.Duration) {}
	}
	return &Store{cli: cli, observe: obs, tr: cfg.Transformer}, nil
}

// tlsConfig loads the TLS files; nil when none is given.
func (c *Config) tlsConfig() (*tls.Config, error) {
	if c.CAFile == "" && c.CertFile == "" && c.KeyFile == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("storage: reading etcd CA file: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("storage: etcd CA file %s holds no PEM certificate", c.CAFile)
		}
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, errors.New("storage: an etcd client certificate needs both a certificate and a key file")
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("storage: loading etcd client certificate %s with key %s: %w", c.CertFile, c.KeyFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Close releases the connection.
func (s *Store) Close() error { return s.cli.Close() }

func (s *Store) timed(op string) func() {
	start := time.Now()
	return func() { s.observe(op, time.Since(start)) }
}

// Get reads one key.
func (s *Store) Get(ctx context.Context, key string) (KV, error) {
	defer s.timed("get")()
	resp, err := s.cli.Get(ctx, key)
	if err != nil {
		return KV{}, fmt.Errorf("reading %s: %w", key, wrapErr(err))
	}
	if len(resp.Kvs) == 0 {
		return KV{}, ErrNotFound
	}
	return s.fromStorage(ctx, resp.Kvs[0])
}

// GetSerializable reads one key from the local member without a quorum round
// trip; it may be slightly stale.
func (s *Store) GetSerializable(ctx context.Context, key string) (KV, error) {
	defer s.timed("get")()
	resp, err := s.cli.Get(ctx, key, clientv3.WithSerializable())
	if err != nil {
		return KV{}, fmt.Errorf("reading %s: %w", key, wrapErr(err))
	}
	if len(resp.Kvs) == 0 {
		return KV{}, ErrNotFound
	}
	return s.fromStorage(ctx, resp.Kvs[0])
}

// Page is one page of a range read.
type Page struct {
	KVs      []KV
	Revision int64 // the revision the page was read at
	More     bool  // keys remain after the last one returned
}

// List reads keys with the given prefix, starting at startKey (inclusive;
// empty means the prefix itself), at revision rev (0 means the newest), at
// most limit keys (0 means all).
func (s *Store) List(ctx context.Context, prefix, startKey string, rev, limit int64) (Page, error) {
	defer s.timed("list")()
	if startKey == "" {
		startKey = prefix
	}
	if !strings.HasPrefix(startKey, prefix) {
		return Page{}, fmt.Errorf("storage: start key %q outside prefix %q", startKey, prefix)
	}
	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix))}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	if limit > 0 {
		opts = append(opts, clientv3.WithLimit(limit))
	}
	resp, err := s.cli.Get(ctx, startKey, opts...)
	if err != nil {
		return Page{}, fmt.Errorf("listing %s: %w", prefix, wrapErr(err))
	}
	p := Page{Revision: resp.Header.Revision, More: resp.More, KVs: make([]KV, 0, len(resp.Kvs))}
	if rev > 0 {
		p.Revision = rev
	}
	for _, kv := range resp.Kvs {
		v, err := s.fromStorage(ctx, kv)
		if err != nil {
			return Page{}, err
		}
		p.KVs = append(p.KVs, v)
	}
	return p, nil
}

// ListSerializable reads every key with the given prefix from the local
// member without a quorum round trip. On the embedded single-member etcd it
// sees every write that was acknowledged; with several members it may be
// slightly stale.
func (s *Store) ListSerializable(ctx context.Context, prefix string) (Page, error) {
	defer s.timed("list")()
	resp, err := s.cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithSerializable())
	if err != nil {
		return Page{}, fmt.Errorf("listing %s: %w", prefix, wrapErr(err))
	}
	p := Page{Revision: resp.Header.Revision, More: resp.More, KVs: make([]KV, 0, len(resp.Kvs))}
	for _, kv := range resp.Kvs {
		v, err := s.fromStorage(ctx, kv)
		if err != nil {
			return Page{}, err
		}
		p.KVs = append(p.KVs, v)
	}
	return p, nil
}

// Count returns how many keys have the prefix.
func (s *Store) Count(ctx context.Context, prefix string) (int64, error) {
	defer s.timed("count")()
	resp, err := s.cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("counting %s: %w", prefix, wrapErr(err))
	}
	return resp.Count, nil
}

// Create writes key only if it does not exist. When parent is not empty the
// write also requires the parent key to exist (a namespace for a namespaced
// object), checked in the same transaction. It returns the new revision.
func (s *Store) Create(ctx context.Context, key string, value []byte, parent string) (int64, error) {
	return s.CreateWith(ctx, key, value, parent, Side{})
}

// CreateWith is Create with side effects committed in the same transaction.
// A taken claim key fails it with a *ClaimError (errors.Is ErrClaimed).
func (s *Store) CreateWith(ctx context.Context, key string, value []byte, parent string, side Side) (int64, error) {
	defer s.timed("create")()
	stored, err := s.toStorage(ctx, key, value)
	if err != nil {
		return 0, err
	}
	conds := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)}
	checks := []clientv3.Op{clientv3.OpGet(key, clientv3.WithCountOnly())}
	if parent != "" {
		conds = append(conds, clientv3.Compare(clientv3.CreateRevision(parent), ">", 0))
		checks = append(checks, clientv3.OpGet(parent, clientv3.WithCountOnly()))
	}
	resp, err := s.cli.Txn(ctx).If(append(conds, side.cmps()...)...).
		Then(append([]clientv3.Op{clientv3.OpPut(key, stored)}, side.ops()...)...).
		Else(append(checks, side.checks()...)...).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("creating %s: %w", key, wrapWriteErr(err))
	}
	if !resp.Succeeded {
		switch {
		case resp.Responses[0].GetResponseRange().Count > 0:
			return 0, ErrExists
		case parent != "" && resp.Responses[1].GetResponseRange().Count == 0:
			return 0, ErrNoParent
		}
		if err := side.taken(resp.Responses, len(checks)); err != nil {
			return 0, err
		}
		return 0, ErrClaimed
	}
	return resp.Header.Revision, nil
}

// Update replaces key if its mod revision is still rev. On a conflict it
// returns ErrConflict and the current value (or ErrNotFound if it is gone).
func (s *Store) Update(ctx context.Context, key string, value []byte, rev int64) (int64, KV, error) {
	return s.UpdateWith(ctx, key, value, rev, Side{})
}

// UpdateWith is Update with side effects committed in the same transaction.
// A taken claim key fails it with a *ClaimError (errors.Is ErrClaimed).
func (s *Store) UpdateWith(ctx context.Context, key string, value []byte, rev int64, side Side) (int64, KV, error) {
	defer s.timed("update")()
	stored, err := s.toStorage(ctx, key, value)
	if err != nil {
		return 0, KV{}, err
	}
	return s.casWith(ctx, "updating", key, rev, clientv3.OpPut(key, stored), side)
}

// Delete removes key if its mod revision is still rev. On a conflict it
// returns ErrConflict and the current value.
func (s *Store) Delete(ctx context.Context, key string, rev int64) (int64, KV, error) {
	return s.DeleteWith(ctx, key, rev, Side{})
}

// DeleteWith is Delete with side effects committed in the same transaction.
// A taken claim key fails it with a *ClaimError (errors.Is ErrClaimed).
func (s *Store) DeleteWith(ctx context.Context, key string, rev int64, side Side) (int64, KV, error) {
	defer s.timed("delete")()
	return s.casWith(ctx, "deleting", key, rev, clientv3.OpDelete(key), side)
}

// casWith runs op on key if its mod revision is still rev, with side.
func (s *Store) casWith(ctx context.Context, verb, key string, rev int64, op clientv3.Op, side Side) (int64, KV, error) {
	resp, err := s.cli.Txn(ctx).If(append([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", rev)}, side.cmps()...)...).
		Then(append([]clientv3.Op{op}, side.ops()...)...).
		Else(append([]clientv3.Op{clientv3.OpGet(key)}, side.checks()...)...).
		Commit()
	if err != nil {
		return 0, KV{}, fmt.Errorf("%s %s: %w", verb, key, wrapWriteErr(err))
	}
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return 0, KV{}, ErrNotFound
		}
		if kvs[0].ModRevision == rev {
			if err := side.taken(resp.Responses, 1); err != nil {
				return 0, KV{}, err
			}
		}
		cur, err := s.fromStorage(ctx, kvs[0])
		if err != nil {
			return 0, KV{}, err
		}
		return 0, cur, ErrConflict
	}
	return resp.Header.Revision, KV{}, nil
}

// Revision returns etcd's current revision (a linearizable read).
func (s *Store) Revision(ctx context.Context) (int64, error) {
	defer s.timed("revision")()
	resp, err := s.cli.Get(ctx, "/registry/\x00revision-probe", clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("reading revision: %w", wrapErr(err))
	}
	return resp.Header.Revision, nil
}

// Compact discards history before rev (tests and maintenance use it).
func (s *Store) Compact(ctx context.Context, rev int64) error {
	_, err := s.cli.Compact(ctx, rev, clientv3.WithCompactPhysical())
	if err != nil {
		return fmt.Errorf("compacting to %d: %w", rev, wrapErr(err))
	}
	return nil
}

func kvOf(kv interface {
	GetKey() []byte
	GetValue() []byte
	GetModRevision() int64
	GetCreateRevision() int64
}) KV {
	return KV{Key: string(kv.GetKey()), Value: kv.GetValue(), ModRevision: kv.GetModRevision(), CreateRevision: kv.GetCreateRevision()}
}

func wrapErr(err error) error {
	if errors.Is(err, rpctypes.ErrCompacted) {
		return ErrCompacted
	}
	return err
}

// wrapWriteErr marks err, the failure of a write transaction, with
// ErrUncertain unless etcd refused the write before proposing it.
func wrapWriteErr(err error) error {
	if refused(err) {
		return wrapErr(err)
	}
	return uncertainError{err}
}

// refused reports whether err says etcd did not take the write in: a
// request it could not accept, too many requests in flight, or no leader
// (for a request that requires one). A timeout, a lost leader or
// connection, a dropped proposal or a cut stream may come after the
// commit, and so may "database space exceeded": etcd applies the write
// before it checks its quota.
func refused(err error) bool {
	if errors.Is(err, rpctypes.ErrTooManyRequests) || errors.Is(err, rpctypes.ErrNoLeader) {
		return true
	}
	var ee rpctypes.EtcdError
	if !errors.As(err, &ee) {
		return false
	}
	switch ee.Code() {
	case codes.InvalidArgument, codes.PermissionDenied, codes.Unauthenticated,
		codes.FailedPrecondition, codes.OutOfRange, codes.Unimplemented:
		return true
	}
	return false
}

type uncertainError struct{ err error }

func (e uncertainError) Error() string   { return e.err.Error() + " (the write may have been committed)" }
func (e uncertainError) Unwrap() []error { return []error{e.err, ErrUncertain} }
