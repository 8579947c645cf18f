package storage

import (
	"errors"

	etcdserverpb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrClaimed says a key a write meant to claim already exists. The error
// returned is a *ClaimError naming the key.
var ErrClaimed = errors.New("storage: key already claimed")

// ClaimError names the claim key that made a write fail.
type ClaimError struct{ Key string }

func (e *ClaimError) Error() string { return "storage: " + e.Key + " is already claimed" }

// Is makes errors.Is(err, ErrClaimed) true.
func (e *ClaimError) Is(target error) bool { return target == ErrClaimed }

// KeyValue is one key and its value.
type KeyValue struct {
	Key   string
	Value []byte
}

// Side is what a write does to keys other than the object's own, in the
// same etcd transaction: either the object write and every side effect
// commit, or none does. Keep keys outside RegistryPrefix: the bus publishes
// every key under it as an object.
type Side struct {
	// Claim creates each key, which must not exist. If one does, the write
	// fails with a *ClaimError and nothing is written.
	Claim []KeyValue
	// Release deletes each key whose value is still the one given; a key
	// that is gone or holds another value is left alone.
	Release []KeyValue
}

// Empty reports whether s does nothing.
func (s Side) Empty() bool { return len(s.Claim) == 0 && len(s.Release) == 0 }

// cmps are the conditions the claims add to a write.
func (s Side) cmps() []clientv3.Cmp {
	out := make([]clientv3.Cmp, 0, len(s.Claim))
	for _, c := range s.Claim {
		out = append(out, clientv3.Compare(clientv3.CreateRevision(c.Key), "=", 0))
	}
	return out
}

// ops are the side writes that go with the object write.
func (s Side) ops() []clientv3.Op {
	out := make([]clientv3.Op, 0, len(s.Claim)+len(s.Release))
	for _, c := range s.Claim {
		out = append(out, clientv3.OpPut(c.Key, string(c.Value)))
	}
	for _, r := range s.Release {
		out = append(out, clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.Value(r.Key), "=", string(r.Value))},
			[]clientv3.Op{clientv3.OpDelete(r.Key)}, nil))
	}
	return out
}

// checks read the claim keys when a write fails, to say which was taken.
func (s Side) checks() []clientv3.Op {
	out := make([]clientv3.Op, 0, len(s.Claim))
	for _, c := range s.Claim {
		out = append(out, clientv3.OpGet(c.Key, clientv3.WithCountOnly()))
	}
	return out
}

// taken returns the ClaimError for the first claim key the failed write's
// checks (the responses from index from on) found, or nil.
func (s Side) taken(resps []*etcdserverpb.ResponseOp, from int) error {
	for i, c := range s.Claim {
		if from+i < len(resps) && resps[from+i].GetResponseRange().Count > 0 {
			return &ClaimError{Key: c.Key}
		}
	}
	return nil
}
