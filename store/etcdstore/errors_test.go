package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/latchkey/latchkey/store"
)

func TestKindOf(t *testing.T) {
	grpcTooBig := status.Error(codes.ResourceExhausted, "trying to send message larger than max (3145799 vs. 2097152)")
	cases := []struct {
		name  string
		write bool
		err   error
		want  error
	}{
		{"read, context canceled", false, context.Canceled, store.ErrTransient},
		{"write, context canceled", true, context.Canceled, store.ErrUnknownOutcome},
		{"read, deadline exceeded", false, context.DeadlineExceeded, store.ErrTransient},
		{"write, deadline exceeded", true, context.DeadlineExceeded, store.ErrUnknownOutcome},
		{"write, wrapped deadline", true, fmt.Errorf("x: %w", context.DeadlineExceeded), store.ErrUnknownOutcome},
		{"write, gRPC DeadlineExceeded from the server", true, rpctypes.ErrGRPCDeadlineExceeded, store.ErrUnknownOutcome},
		{"write, too many requests (client form)", true, rpctypes.ErrTooManyRequests, store.ErrTransient},
		{"write, too many requests (status form)", true, rpctypes.ErrGRPCRequestTooManyRequests, store.ErrTransient},
		{"write, no leader", true, rpctypes.ErrNoLeader, store.ErrTransient},
		{"write, not capable", true, rpctypes.ErrNotCapable, store.ErrTransient},
		{"write, learner", true, rpctypes.ErrGRPCNotSupportedForLearner, store.ErrTransient},
		{"write, no space (quota alarm)", true, rpctypes.ErrNoSpace, store.ErrTransient},
		{"read, compacted", false, rpctypes.ErrCompacted, store.ErrTransient},
		{"read, future revision", false, rpctypes.ErrFutureRev, store.ErrTransient},
		{"write, request too large", true, rpctypes.ErrRequestTooLarge, store.ErrUnsupported},
		{"write, gRPC message too large", true, grpcTooBig, store.ErrUnsupported},
		{"write, too many ops", true, rpctypes.ErrTooManyOps, store.ErrUnsupported},
		{"write, duplicate key", true, rpctypes.ErrDuplicateKey, store.ErrUnsupported},
		{"read, permission denied", false, rpctypes.ErrPermissionDenied, store.ErrUnsupported},
		{"write, permission denied (status form)", true, rpctypes.ErrGRPCPermissionDenied, store.ErrUnsupported},
		{"read, auth failed", false, rpctypes.ErrAuthFailed, store.ErrUnsupported},
		{"read, invalid auth token", false, rpctypes.ErrInvalidAuthToken, store.ErrUnsupported},
		{"write, request timed out", true, rpctypes.ErrTimeout, store.ErrUnknownOutcome},
		{"read, request timed out", false, rpctypes.ErrTimeout, store.ErrTransient},
		{"write, timeout due to leader fail", true, rpctypes.ErrTimeoutDueToLeaderFail, store.ErrUnknownOutcome},
		{"write, timeout due to connection lost", true, rpctypes.ErrTimeoutDueToConnectionLost, store.ErrUnknownOutcome},
		{"write, leader changed", true, rpctypes.ErrLeaderChanged, store.ErrUnknownOutcome},
		{"read, leader changed", false, rpctypes.ErrLeaderChanged, store.ErrTransient},
		{"write, server stopped", true, rpctypes.ErrStopped, store.ErrUnknownOutcome},
		{"write, unavailable (connection)", true, status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing\""), store.ErrUnknownOutcome},
		{"read, unavailable (connection)", false, status.Error(codes.Unavailable, "connection reset"), store.ErrTransient},
		{"write, unexpected EOF", true, io.ErrUnexpectedEOF, store.ErrUnknownOutcome},
		{"read, unexpected EOF", false, io.ErrUnexpectedEOF, store.ErrTransient},
		{"write, other invalid argument", true, status.Error(codes.InvalidArgument, "etcdserver: something new"), store.ErrUnsupported},
	}
	for _, c := range cases {
		if got := kindOf(c.write, c.err); got != c.want {
			t.Errorf("%s: kindOf(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

func TestCause(t *testing.T) {
	for _, err := range []error{rpctypes.ErrRequestTooLarge, rpctypes.ErrGRPCRequestTooLarge,
		status.Error(codes.ResourceExhausted, "grpc: received message larger than max")} {
		if c := cause(err); !errors.Is(c, ErrTooLarge) || !errors.Is(c, err) {
			t.Errorf("cause(%v) = %v, want ErrTooLarge and the original", err, c)
		}
	}
	for _, err := range []error{rpctypes.ErrPermissionDenied, rpctypes.ErrAuthFailed, rpctypes.ErrGRPCInvalidAuthToken} {
		if c := cause(err); !errors.Is(c, ErrPermissionDenied) {
			t.Errorf("cause(%v) = %v, want ErrPermissionDenied", err, c)
		}
	}
	for _, err := range []error{rpctypes.ErrTooManyRequests, rpctypes.ErrNoSpace, rpctypes.ErrTimeout} {
		if c := cause(err); errors.Is(c, ErrTooLarge) || errors.Is(c, ErrPermissionDenied) || c != err {
			t.Errorf("cause(%v) = %v, want it unchanged", err, c)
		}
	}
}
