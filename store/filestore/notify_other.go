//go:build !linux

package filestore

// notifier is Linux-only (inotify); elsewhere WaitChange polls.
type notifier struct{}

func newNotifier() *notifier { return nil }

func (n *notifier) watch(bucket, dir string) (<-chan struct{}, error) { return nil, nil }

func (n *notifier) close() error { return nil }
