package etcdstore

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/latchkey/latchkey/store"
)

const backend = "etcdstore"

// ErrPermissionDenied is the cause of an authentication or authorization
// failure: wrong Username/Password, or a user whose roles do not cover the
// key range. It comes wrapped in an *store.OpError of kind ErrUnsupported.
var ErrPermissionDenied = errors.New("permission denied by etcd auth (check Options.Username/Password and the user's roles)")

// ErrTooLarge is the cause when etcd refuses a request as larger than its
// --max-request-bytes (default 1.5 MiB), or the client refuses to send it.
// It comes wrapped in an *store.OpError of kind ErrUnsupported.
var ErrTooLarge = errors.New("request too large for etcd (--max-request-bytes, default 1.5 MiB)")

// errRequestTimeout is the cause of a request's context when
// Options.RequestTimeout ends it.
var errRequestTimeout = errors.New("no answer from etcd within Options.RequestTimeout")

// errAttemptTimeout is the cause of an attempt's context when
// Options.AttemptTimeout ends it.
var errAttemptTimeout = errors.New("no answer from the etcd member within Options.AttemptTimeout")

// kindOf maps one failed request to etcd onto the store error set. write
// says whether the request could have changed state.
//
//	context canceled / deadline exceeded      read: ErrTransient, write: ErrUnknownOutcome
//	too many requests (refused before raft)   ErrTransient
//	no leader, not capable, learner (refused) ErrTransient
//	no space (quota alarm; nothing applied)   ErrTransient
//	compacted, future revision                ErrTransient (re-read)
//	request too large, gRPC message too large ErrUnsupported (cause ErrTooLarge)
//	auth failed, permission denied, bad token ErrUnsupported (cause ErrPermissionDenied)
//	other invalid argument / precondition     ErrUnsupported
//	timeout, leader changed, stopped, any
//	other Unavailable or unknown failure      read: ErrTransient, write: ErrUnknownOutcome
func kindOf(write bool, err error) error {
	unknown := store.ErrTransient
	if write {
		unknown = store.ErrUnknownOutcome
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return unknown
	case isAny(err, rpctypes.ErrTooManyRequests, rpctypes.ErrNoLeader, rpctypes.ErrNotCapable,
		rpctypes.ErrNoSpace, rpctypes.ErrCompacted, rpctypes.ErrFutureRev, rpctypes.ErrGRPCNotSupportedForLearner):
		return store.ErrTransient
	case isTooLarge(err), isPermission(err):
		return store.ErrUnsupported
	case isAny(err, rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail, rpctypes.ErrTimeoutDueToConnectionLost,
		rpctypes.ErrTimeoutWaitAppliedIndex, rpctypes.ErrLeaderChanged, rpctypes.ErrStopped, rpctypes.ErrUnhealthy):
		return unknown
	}
	switch code(err) {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange, codes.Unimplemented:
		return store.ErrUnsupported
	}
	return unknown
}

// cause returns the error to keep in an *store.OpError: ours for a size
// or permission failure, joined with etcd's, else etcd's.
func cause(err error) error {
	switch {
	case isTooLarge(err):
		return errors.Join(ErrTooLarge, err)
	case isPermission(err):
		return errors.Join(ErrPermissionDenied, err)
	}
	return err
}

func isTooLarge(err error) bool {
	if isAny(err, rpctypes.ErrRequestTooLarge) {
		return true
	}
	// The client's MaxCallSendMsgSize or the server's gRPC receive limit.
	return code(err) == codes.ResourceExhausted && !isAny(err, rpctypes.ErrTooManyRequests, rpctypes.ErrNoSpace)
}

func isPermission(err error) bool {
	switch code(err) {
	case codes.PermissionDenied, codes.Unauthenticated:
		return true
	}
	return isAny(err, rpctypes.ErrAuthFailed, rpctypes.ErrUserEmpty, rpctypes.ErrUserNotFound,
		rpctypes.ErrPermissionNotGranted, rpctypes.ErrRoleNotGranted, rpctypes.ErrAuthOldRevision)
}

// isAny reports whether err is one of etcd's errors, whichever form it
// comes in: the client's rpctypes.EtcdError or the server's gRPC status.
func isAny(err error, targets ...error) bool {
	desc := ""
	if code(err) != codes.OK {
		desc = rpctypes.ErrorDesc(err)
	}
	for _, t := range targets {
		if errors.Is(err, t) || (desc != "" && desc == rpctypes.ErrorDesc(t)) {
			return true
		}
	}
	return false
}

// code returns the gRPC code of err: an rpctypes.EtcdError's, a status
// error's, or OK when err carries none.
func code(err error) codes.Code {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code()
	}
	if st, ok := status.FromError(err); ok {
		return st.Code()
	}
	return codes.OK
}

// opError wraps a failed request as an *store.OpError. ctx is the
// caller's context and rctx the request's last attempt's (bounded by
// AttemptTimeout within RequestTimeout). A
// done caller's context wins: the failure is then reported with its error
// as the cause. A read cut off by Close is ErrClosed; a write, whose
// outcome is then unknown, ErrUnknownOutcome.
func (s *Store) opError(ctx, rctx context.Context, op, key string, write bool, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return store.NewOpError(backend, op, key, kindOf(write, cerr), cerr)
	}
	if s.closed.Load() {
		if write { // it may have been applied before the connection closed
			return store.NewOpError(backend, op, key, store.ErrUnknownOutcome, errors.New("store closed while the write was in flight"))
		}
		return store.NewOpError(backend, op, key, store.ErrClosed, nil)
	}
	if rctx != nil && errors.Is(context.Cause(rctx), errRequestTimeout) {
		return store.NewOpError(backend, op, key, kindOf(write, context.DeadlineExceeded),
			fmt.Errorf("%w (%v)", errRequestTimeout, s.opts.RequestTimeout))
	}
	if rctx != nil && errors.Is(context.Cause(rctx), errAttemptTimeout) {
		return store.NewOpError(backend, op, key, kindOf(write, context.DeadlineExceeded),
			fmt.Errorf("%w (%v)", errAttemptTimeout, s.opts.AttemptTimeout))
	}
	oe := &store.OpError{Op: op, Key: key, Backend: backend, Kind: kindOf(write, err), Err: cause(err)}
	if c := code(err); c != codes.OK {
		oe.Code = c.String()
	}
	return oe
}
