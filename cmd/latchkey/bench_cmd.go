package main

import (
	"context"
	"errors"

	"github.com/latchkey/latchkey/cmd/internal/bench"
)

// runBenchCmd is latchkey bench, which lives in cmd/internal/bench; the
// bench's own worded failures keep their exit codes (2 for a bad command
// line, 1 otherwise).
func runBenchCmd(ctx context.Context, e *env, args []string) error {
	err := bench.Run(ctx, &bench.Env{Stdin: e.stdin, Stdout: e.stdout, Getenv: e.getenv, Environ: e.environ}, args)
	var be *bench.Error
	if !errors.As(err, &be) {
		return err
	}
	code := exitFail
	if be.Usage {
		code = exitUsage
	}
	return &exitError{code: code, msg: be.Msg}
}
