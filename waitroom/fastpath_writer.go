package waitroom

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// leanWriter is the http.ResponseWriter of a request the lean loop serves. It frames the answer
// as net/http's server does: the handler's Content-Length when it set one (a shorter body closes
// the connection, a longer one is cut), else a length counted from a body that ended within the
// first 2 KiB, else chunked; Date added when missing; Content-Type sniffed from the first bytes
// when missing; 1xx answers written at once; no body for HEAD, 1xx, 204 and 304; the trailers
// the header announced (or named with http.TrailerPrefix) after a chunked body. Unlike net/http
// it keeps no copy of the header: the header is written once, when the first body bytes or the
// end make it final, so the fields set after WriteHeader and before that (which net/http would
// drop) go with it; the room's proxy sets none there.
type leanWriter struct {
	out    *bufio.Writer
	conn   *leanConn
	header http.Header
	head   bool // a HEAD request: no body

	status      int   // 0 until WriteHeader(>= 200)
	wroteHeader bool  // the header is in out
	chunked     bool  // the body goes chunked
	length      int64 // the declared or counted length; -1: chunked
	written     int64 // body bytes written after the header
	pending     []byte
	trailers    []string // the trailer names the header announced
	closeAfter  bool     // the connection ends after this answer
}

// pendingBody is how much body the writer holds back before the header goes (net/http's
// bufferBeforeChunkingSize): a body that ends within it gets a Content-Length.
const pendingBody = 2 << 10

var _ http.ResponseWriter = (*leanWriter)(nil)

func (w *leanWriter) reset(out *bufio.Writer, conn *leanConn, head bool) {
	clear(w.header)
	*w = leanWriter{out: out, conn: conn, header: w.header, head: head, pending: w.pending[:0], trailers: w.trailers[:0]}
}

func (w *leanWriter) Header() http.Header { return w.header }

func (w *leanWriter) WriteHeader(code int) {
	if w.status != 0 {
		return // superfluous, as net/http (which logs it)
	}
	if code < 100 || code > 999 {
		panic("invalid WriteHeader code " + strconv.Itoa(code)) // as net/http
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		w.writeInformational(code)
		return
	}
	w.status = code
}

// writeInformational sends a 1xx answer with the header as it is now, at once.
func (w *leanWriter) writeInformational(code int) {
	writeStatusLine(w.out, code)
	for k, vv := range w.header {
		if k == "Content-Length" || k == "Transfer-Encoding" || !validFieldName(k) {
			continue
		}
		for _, v := range vv {
			writeHeaderLine(w.out, k, v)
		}
	}
	_, _ = w.out.WriteString("\r\n")
	_ = w.out.Flush()
}

// bodyAllowed reports whether the status allows a body (RFC 9110 6.4.1).
func (w *leanWriter) bodyAllowed() bool {
	return w.status != http.StatusNoContent && w.status != http.StatusNotModified && w.status >= 200
}

func (w *leanWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.bodyAllowed() {
		return 0, http.ErrBodyNotAllowed
	}
	if w.head {
		return len(b), nil
	}
	if !w.wroteHeader {
		if len(w.pending)+len(b) <= pendingBody {
			w.pending = append(w.pending, b...)
			return len(b), nil
		}
		w.writeHeader(false)
	}
	return w.writeBody(b)
}

// writeBody writes b after the header: chunked, or within the declared length.
func (w *leanWriter) writeBody(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if w.chunked {
		_, _ = w.out.Write(strconv.AppendInt(w.out.AvailableBuffer(), int64(len(b)), 16))
		_, _ = w.out.WriteString("\r\n")
		_, _ = w.out.Write(b)
		_, err := w.out.WriteString("\r\n")
		return len(b), err
	}
	if w.length >= 0 && w.written+int64(len(b)) > w.length {
		b = b[:w.length-w.written]
		n, _ := w.out.Write(b)
		w.written += int64(n)
		return n, http.ErrContentLength
	}
	n, err := w.out.Write(b)
	w.written += int64(n)
	return n, err
}

// FlushError sends the header and what is buffered (http.ResponseController.Flush).
func (w *leanWriter) FlushError() error {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.wroteHeader {
		w.writeHeader(false)
	}
	w.conn.watchClient() // a streamed answer: stop it when the client leaves
	return w.out.Flush()
}

// Flush is http.Flusher's.
func (w *leanWriter) Flush() { _ = w.FlushError() }

// SetReadDeadline and SetWriteDeadline are http.ResponseController's.
func (w *leanWriter) SetReadDeadline(t time.Time) error {
	w.conn.setReadDeadline(t)
	return nil
}

// SetWriteDeadline is http.ResponseController's (a deadline barely later than the one set is
// left as it is: fastpath_deadline.go).
func (w *leanWriter) SetWriteDeadline(t time.Time) error {
	w.conn.setWriteDeadline(t)
	return nil
}

// writeHeader writes the status line and header, and the body held back. final: the handler has
// ended, so a held-back body is the whole body.
func (w *leanWriter) writeHeader(final bool) {
	w.wroteHeader = true
	h := w.header
	delete(h, "Transfer-Encoding")
	w.length = -1
	body := w.bodyAllowed()
	if cl := h["Content-Length"]; len(cl) > 0 {
		if n, err := strconv.ParseInt(cl[0], 10, 64); err == nil && n >= 0 && len(cl) == 1 {
			w.length = n
		} else {
			delete(h, "Content-Length") // as net/http: an unusable one is dropped
		}
	}
	if _, typed := h["Content-Type"]; !typed && body && !w.head && len(w.pending) > 0 {
		h["Content-Type"] = []string{http.DetectContentType(w.pending)}
	}
	if w.conn.closing() || headerHasToken(h["Connection"], "close") {
		w.closeAfter = true
	}
	writeStatusLine(w.out, w.status)
	for k, vv := range h {
		if !validFieldName(k) || strings.HasPrefix(k, http.TrailerPrefix) {
			continue
		}
		for _, v := range vv {
			writeHeaderLine(w.out, k, v)
		}
	}
	if _, dated := h["Date"]; !dated {
		_, _ = w.out.WriteString("Date: ")
		_, _ = w.out.WriteString(w.conn.date())
		_, _ = w.out.WriteString("\r\n")
	}
	switch {
	case !body || w.length >= 0:
	case final && (len(w.pending) > 0 || !w.head):
		w.length = int64(len(w.pending))
		_, _ = w.out.WriteString("Content-Length: ")
		_, _ = w.out.Write(strconv.AppendInt(w.out.AvailableBuffer(), w.length, 10))
		_, _ = w.out.WriteString("\r\n")
	case w.head:
	default:
		w.chunked = true
		_, _ = w.out.WriteString("Transfer-Encoding: chunked\r\n")
		for _, v := range h["Trailer"] {
			for name := range strings.SplitSeq(v, ",") {
				if name = strings.TrimSpace(name); name != "" {
					w.trailers = append(w.trailers, http.CanonicalHeaderKey(name))
				}
			}
		}
	}
	if w.closeAfter {
		if _, said := h["Connection"]; !said {
			_, _ = w.out.WriteString("Connection: close\r\n")
		}
	}
	_, _ = w.out.WriteString("\r\n")
	if len(w.pending) > 0 {
		p := w.pending
		w.pending = w.pending[:0]
		_, _ = w.writeBody(p)
	}
}

// finish ends the answer (the chunked body's last chunk and trailers) and flushes it. It reports
// whether the connection can serve another request: the body matched its framing and nothing
// asked to close.
func (w *leanWriter) finish() (keepAlive bool) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.wroteHeader {
		w.writeHeader(true)
	}
	if w.chunked {
		_, _ = w.out.WriteString("0\r\n")
		for _, k := range w.trailers {
			for _, v := range w.header[k] {
				writeHeaderLine(w.out, k, v)
			}
		}
		for k, vv := range w.header {
			if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok && validFieldName(name) {
				for _, v := range vv {
					writeHeaderLine(w.out, name, v)
				}
			}
		}
		_, _ = w.out.WriteString("\r\n")
	}
	if w.bodyAllowed() && !w.head && w.length >= 0 && w.written != w.length {
		w.closeAfter = true // the client reads a short body, then the end of the connection
	}
	if err := w.out.Flush(); err != nil {
		return false
	}
	return !w.closeAfter
}

// writeStatusLine writes "HTTP/1.1 <code> <text>" as net/http does.
func writeStatusLine(out *bufio.Writer, code int) {
	_, _ = out.WriteString("HTTP/1.1 ")
	_, _ = out.Write(strconv.AppendInt(out.AvailableBuffer(), int64(code), 10))
	_ = out.WriteByte(' ')
	if text := http.StatusText(code); text != "" {
		_, _ = out.WriteString(text)
	} else {
		_, _ = out.WriteString("status code ")
		_, _ = out.Write(strconv.AppendInt(out.AvailableBuffer(), int64(code), 10))
	}
	_, _ = out.WriteString("\r\n")
}
