package engine

import (
	"errors"
	"fmt"
)

// Mode is how the engine makes a commit durable before Update returns.
type Mode string

const (
	// ModeLog: each group commit's record is appended to the write-ahead
	// log and fdatasynced; bbolt commits without a sync and is made
	// durable by background checkpoints (wal.go, checkpoint.go).
	ModeLog Mode = "wal"
	// ModeFsync: bbolt fsyncs every commit itself (twice: its pages,
	// then its meta page). The engine uses it once latchkey.db is larger
	// than half of the log's memory map (see Engine.leaveLog), at Open or
	// when the file grows past that while open.
	ModeFsync Mode = "bbolt-fsync"
	// ModeNoSync: Options.NoSync; nothing is fsynced (tests only).
	ModeNoSync Mode = "nosync"
)

// Mode reports how commits are made durable now. It changes at most once
// in an engine's life, from ModeLog to ModeFsync; Options.Logger is told.
func (e *Engine) Mode() Mode {
	m, _ := e.mode.Load().(Mode)
	return m
}

// errModeLost: the engine's state would acknowledge writes without any
// fsync while durability was asked for.
var errModeLost = errors.New("engine: durability mode lost")

// setMode records m after checking that the engine's state carries it
// out: with the log there is a log, without it bbolt syncs itself unless
// Options.NoSync. A mismatch is a bug that would acknowledge writes with
// no fsync; the engine refuses to run rather than lose durability
// silently.
func (e *Engine) setMode(m Mode) error {
	var ok bool
	switch m {
	case ModeLog:
		ok = e.log != nil && !e.opts.NoSync
	case ModeFsync:
		ok = e.log == nil && !e.db.NoSync && !e.opts.NoSync
	case ModeNoSync:
		ok = e.opts.NoSync
	}
	if !ok {
		return fmt.Errorf("%w: mode %s with log=%t, bbolt NoSync=%t, Options.NoSync=%t",
			errModeLost, m, e.log != nil, e.db.NoSync, e.opts.NoSync)
	}
	prev := e.Mode()
	e.mode.Store(m)
	if prev != "" && prev != m {
		e.opts.Logger.Warn("engine: durability mode changed", "from", prev, "to", m, "dir", e.dir)
	}
	return nil
}
