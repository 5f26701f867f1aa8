package waitroom

import "time"

// The lean loop's deadlines. Moving a connection's deadline costs a runtime timer update, and a
// keep-alive connection would pay four a request done as net/http does them (the idle wait's,
// the header's, the header's end, the answer's write). So each is set only when it matters:
//   - the idle deadline stays in place from one request to the next, and is moved only when the
//     one set is more than a sixteenth of IdleTimeout short of the bound a new wait asks for
//     (each wait still gets at least 15/16 of it);
//   - the header's deadline is set only when the header did not come whole with the first read:
//     a header already read needs no bound on its arrival;
//   - a write deadline asked for (the answer's, or a handler's through http.ResponseController)
//     is not moved when the one set is short of it by less than a sixteenth of the time to it.
// The idle deadline then stays set while a request is served; a handler's read of the connection
// (watchClient, for a streamed answer) clears it first.

// setIdleDeadline bounds the wait for the next request by IdleTimeout (ReadTimeout when unset).
func (lc *leanConn) setIdleDeadline() {
	idle := lc.s.idleTimeout
	if idle <= 0 {
		if !lc.readDeadline.IsZero() {
			lc.setReadDeadline(time.Time{})
		}
		return
	}
	want := time.Now().Add(idle)
	if lc.idleDeadline && !lc.readDeadline.After(want) && want.Sub(lc.readDeadline) < idle/16 {
		return
	}
	lc.setReadDeadline(want)
	lc.idleDeadline = true
}

// setReadDeadline sets the connection's read deadline to t (zero: none).
func (lc *leanConn) setReadDeadline(t time.Time) {
	lc.readDeadline, lc.idleDeadline = t, false
	_ = lc.c.SetReadDeadline(t)
}

// setWriteDeadline sets the connection's write deadline to t, or leaves the one set when it is
// earlier than t by less than a sixteenth of the time it gave when it was set (the callers ask
// for a deadline a fixed time ahead, so that is a sixteenth of the time to t, without reading
// the clock again).
func (lc *leanConn) setWriteDeadline(t time.Time) {
	if cur := lc.writeDeadline; !t.IsZero() && !cur.IsZero() && !cur.After(t) && t.Sub(cur) < lc.writeSpan/16 {
		return
	}
	lc.writeDeadline = t
	if !t.IsZero() {
		lc.writeSpan = time.Until(t)
	}
	_ = lc.c.SetWriteDeadline(t)
}
