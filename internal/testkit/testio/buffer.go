// Package testio has the I/O helpers tests share.
package testio

import (
	"bytes"
	"sync"
)

// Buffer collects what a server, a logger or a child process writes while the test reads it: its
// Write and String are safe to call at the same time.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
