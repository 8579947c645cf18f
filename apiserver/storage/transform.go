package storage

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Transformer changes values on their way into and out of etcd: it
// encrypts them at rest (apiserver/storage/encryption implements it). Both
// methods take the value's key, which picks the resource's providers and is
// the ciphertext's authenticated data; a key it does not transform comes
// back as the same bytes.
type Transformer interface {
	TransformToStorage(ctx context.Context, key string, data []byte) ([]byte, error)
	// TransformFromStorage reports stale when the value should be written
	// again (it was encrypted with a key that is no longer the first).
	TransformFromStorage(ctx context.Context, key string, data []byte) (out []byte, stale bool, err error)
}

// TransformError says a value could not be transformed on its way into or
// out of etcd (it does not decrypt with any configured key, or encryption
// failed). The API server answers it with an internal error, as upstream.
type TransformError struct {
	Key string
	Err error
}

func (e *TransformError) Error() string {
	return fmt.Sprintf("unable to transform key %q: %v", e.Key, e.Err)
}

func (e *TransformError) Unwrap() error { return e.Err }

// toStorage is the value stored for data under key.
func (s *Store) toStorage(ctx context.Context, key string, data []byte) (string, error) {
	if s.tr == nil {
		return string(data), nil
	}
	out, err := s.tr.TransformToStorage(ctx, key, data)
	if err != nil {
		return "", &TransformError{Key: key, Err: err}
	}
	return string(out), nil
}

// fromStorage is the KV read from etcd as callers see it: its value
// decrypted. A value that cannot be is an error naming the key, never an
// empty value; a deleted key (no value) has nothing to decrypt.
func (s *Store) fromStorage(ctx context.Context, kv *mvccpb.KeyValue) (KV, error) {
	out := kvOf(kv)
	if s.tr == nil || len(out.Value) == 0 {
		return out, nil
	}
	v, stale, err := s.tr.TransformFromStorage(ctx, out.Key, out.Value)
	if err != nil {
		return KV{}, &TransformError{Key: out.Key, Err: err}
	}
	out.Value, out.Stale = v, stale
	return out, nil
}
