// Package filestore is a store.Store kept in a local directory, safe for
// concurrent use by goroutines and by separate processes on one machine.
// It is latchkey's default store: a lock taken through it works across
// processes with no server at all. Open("dir", nil) is what the store URL
// file:///dir means.
//
// It implements store.Transactor (multi-key, all or nothing, crash-safe)
// and store.Streamer (values are never held whole in memory by
// PutStream/GetStream). It implements store.Watcher by polling, so
// Capabilities.Watch is false.
//
// TODO: layout, locking, durability, limits.
package filestore
