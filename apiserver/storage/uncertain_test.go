package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

func TestWriteErrorsSayWhetherTheWriteMayHaveLanded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err       error
		uncertain bool
	}{
		{rpctypes.ErrTimeout, true},
		{rpctypes.ErrTimeoutDueToLeaderFail, true},
		{rpctypes.ErrTimeoutDueToConnectionLost, true},
		{rpctypes.ErrLeaderChanged, true},
		{context.DeadlineExceeded, true},
		{io.ErrUnexpectedEOF, true},
		{fmt.Errorf("rpc error: %w", rpctypes.ErrTimeout), true},
		{rpctypes.ErrNoLeader, false},
		{rpctypes.ErrTooManyRequests, false},
		{rpctypes.ErrNoSpace, true},
		{rpctypes.ErrPermissionDenied, false},
		{rpctypes.ErrRequestTooLarge, false},
	} {
		err := fmt.Errorf("creating /registry/pods/ns/p: %w", wrapWriteErr(tc.err))
		if got := errors.Is(err, ErrUncertain); got != tc.uncertain {
			t.Errorf("%v: uncertain %v, want %v", tc.err, got, tc.uncertain)
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("%v: the cause is lost in %v", tc.err, err)
		}
	}
	if err := wrapWriteErr(rpctypes.ErrCompacted); !errors.Is(err, ErrCompacted) {
		t.Errorf("a compacted revision gives %v, want ErrCompacted", err)
	}
}
