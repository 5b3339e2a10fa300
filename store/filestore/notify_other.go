//go:build !linux

package filestore

// inotifySupported: inotify is Linux-only; elsewhere WaitChange polls.
const inotifySupported = false

type notifier struct{}

func newNotifier() *notifier { return nil }

func (n *notifier) watch(bucket, dir string) (<-chan struct{}, error) { return nil, nil }

func (n *notifier) close() error { return nil }
