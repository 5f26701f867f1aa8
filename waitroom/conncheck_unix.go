//go:build unix

package waitroom

import (
	"errors"
	"net"
	"syscall"
)

// connAlive reports whether an idle connection is still open: a non-blocking peek finds nothing
// to read. End of stream (the peer closed it), an error or bytes nobody asked for all mean it
// must not be used.
func connAlive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK)
		return true // done: never wait
	})
	return err == nil && alive
}
