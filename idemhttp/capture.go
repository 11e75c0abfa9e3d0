package idemhttp

import (
	"fmt"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idemkit/idem"
)

// capture is the ResponseWriter the protected handler writes to. It keeps
// the status, the headers and the body until the handler returns, so that
// the response is recorded before this client or any retry sees it.
//
//   - Header is the client's own header map: what the handler sets there is
//     what this client gets; only the route's replayed headers are stored.
//   - Past the stored-response limit it stops buffering: what it holds and
//     everything after is sent straight to the client (over), and the
//     response is not stored (see the package documentation).
//   - Flush does nothing while buffering; after the limit it flushes.
//   - It has no Hijack and no Unwrap, so http.ResponseController.Hijack
//     answers http.ErrNotSupported: a hijacked connection leaves nothing to
//     record or replay. SetReadDeadline, SetWriteDeadline and
//     EnableFullDuplex reach the client's connection.
type capture struct {
	w   http.ResponseWriter
	cfg *config

	status     int  // 0 until the handler writes a header or a body
	over       bool // past the limit: the response went to the client directly
	sent       bool // the response was sent (send, or over)
	bodyMax    int  // room left for the body once the headers are counted
	body       []byte
	overStored []idem.Header // the stored headers when the limit was passed
}

// bodyPooledMax bounds the buffers kept for reuse: a 1 MiB response now and
// then must not pin 1 MiB per idle buffer.
const bodyPooledMax = 64 << 10

var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

func (c *capture) init(w http.ResponseWriter, cfg *config) { c.w, c.cfg = w, cfg }

// grow takes a pooled buffer for the first bytes of the body.
func (c *capture) grow() {
	if c.body == nil {
		c.body = (*bodyPool.Get().(*[]byte))[:0]
	}
}

// release returns the body buffer. The store has copied what it keeps (the
// store contract), and the response has been sent.
func (c *capture) release() {
	if c.body != nil && cap(c.body) <= bodyPooledMax {
		b := c.body[:0]
		bodyPool.Put(&b)
	}
	c.body = nil
}

func (c *capture) Header() http.Header { return c.w.Header() }

// WriteHeader fixes the status. Informational statuses (1xx) are not sent:
// the final response is held until it is recorded, and a hint sent before
// it could not be replayed. A status net/http would refuse panics as
// net/http's does: that is the handler's bug, recorded as unknown.
func (c *capture) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if c.status != 0 || code < 200 {
		return // superfluous, as net/http treats it; or informational
	}
	c.status = code
	c.bodyMax = c.cfg.responseBytesMax - storedBytes(c.cfg, c.w.Header())
}

func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(c.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if c.over {
		return c.w.Write(p)
	}
	if len(c.body)+len(p) <= c.bodyMax {
		c.grow()
		c.body = append(c.body, p...)
		return len(p), nil
	}
	return c.overflow(p)
}

// WriteString spares a handler's io.WriteString a copy into a []byte.
func (c *capture) WriteString(s string) (int, error) {
	if c.status != 0 && !c.over && bodyAllowed(c.status) && len(c.body)+len(s) <= c.bodyMax {
		c.grow()
		c.body = append(c.body, s...)
		return len(s), nil
	}
	return c.Write([]byte(s))
}

// overflow sends what is held and p to the client, and from now on every
// write goes through. The stored response is made one byte longer than the
// limit allows, so the core refuses it (response_too_large) and the
// executor leaves the key unknown: it executed, and cannot be replayed.
func (c *capture) overflow(p []byte) (int, error) {
	c.sniff(p)
	c.overStored = storedHeaders(c.cfg, c.w.Header())
	c.over, c.sent = true, true
	c.w.WriteHeader(c.status)
	if _, err := c.w.Write(c.body); err != nil {
		return 0, err
	}
	if keep := c.bodyMax + 1 - len(c.body); keep > 0 {
		c.body = append(c.body, p[:keep]...)
	}
	return c.w.Write(p)
}

// sniff sets Content-Type as net/http would, from the first bytes of the
// body, so that the stored header is the one this client got.
func (c *capture) sniff(next []byte) {
	h := c.w.Header()
	if _, set := h["Content-Type"]; set || !bodyAllowed(c.status) {
		return
	}
	b := c.body
	if len(b) < 512 && len(next) > 0 {
		b = append(b[:len(b):len(b)], next[:min(len(next), 512-len(b))]...)
	}
	if len(b) > 0 {
		h.Set("Content-Type", http.DetectContentType(b))
	}
}

// response is what the handler answered, for the executor to store. A
// response past the limit comes back over it: see overflow.
func (c *capture) response() idem.Response {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK) // a handler that wrote nothing answered 200, as net/http does
	}
	if c.over {
		r := idem.Response{StatusCode: c.status, Headers: c.overStored, Body: c.body}
		if short := c.cfg.responseBytesMax + 1 - r.Bytes(); short > 0 {
			// The handler removed headers between WriteHeader and the write
			// that overflowed: pad, so that the core still refuses it and
			// no cut body is ever stored. The padding is never sent.
			r.Body = append(r.Body, make([]byte, short)...)
		}
		return r
	}
	c.sniff(nil)
	return idem.Response{StatusCode: c.status, Headers: storedHeaders(c.cfg, c.w.Header()), Body: c.body}
}

// send writes the held response to the client, with a Content-Length (the
// length is known: no chunking, as a replay sends it).
func (c *capture) send() {
	if c.sent {
		return
	}
	c.sent = true
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	h := c.w.Header()
	if bodyAllowed(c.status) && h.Get("Content-Length") == "" {
		h.Set("Content-Length", strconv.Itoa(len(c.body)))
	}
	c.w.WriteHeader(c.status)
	_, _ = c.w.Write(c.body) // the client may be gone: the outcome is recorded
}

// FlushError does nothing while the response is held: it is sent whole,
// once recorded. Past the limit, it flushes the client's connection.
func (c *capture) FlushError() error {
	if c.over {
		return http.NewResponseController(c.w).Flush()
	}
	return nil
}

// Flush is FlushError for http.Flusher.
func (c *capture) Flush() { _ = c.FlushError() }

func (c *capture) SetReadDeadline(t time.Time) error {
	return http.NewResponseController(c.w).SetReadDeadline(t)
}

func (c *capture) SetWriteDeadline(t time.Time) error {
	return http.NewResponseController(c.w).SetWriteDeadline(t)
}

func (c *capture) EnableFullDuplex() error {
	return http.NewResponseController(c.w).EnableFullDuplex()
}

// storedHeaders lists the replayed headers set in h, in the route's order
// and each value in h's order. net/http writes a CR or LF in a value as a
// space and trims spaces and tabs at either end (net/http's Header.Write);
// the stored value is written the same way, so a replay sends what this
// client got.
func storedHeaders(c *config, h http.Header) []idem.Header {
	var out []idem.Header
	for _, name := range c.replayed {
		for _, v := range h[name] {
			if out == nil {
				out = make([]idem.Header, 0, len(c.replayed))
			}
			out = append(out, idem.Header{Name: name, Value: asWritten(v)})
		}
	}
	return out
}

// storedBytes is what storedHeaders would count against the limit
// (idem.Response.Bytes), without building them.
func storedBytes(c *config, h http.Header) int {
	n := 0
	for _, name := range c.replayed {
		for _, v := range h[name] {
			n += len(name) + len(asWritten(v))
		}
	}
	return n
}

var newlinesToSpaces = strings.NewReplacer("\r", " ", "\n", " ")

// asWritten is v as net/http puts it on the wire.
func asWritten(v string) string {
	if strings.ContainsAny(v, "\r\n") {
		v = newlinesToSpaces.Replace(v)
	}
	return textproto.TrimString(v)
}

// bodyAllowed reports whether a response with status may have a body
// (RFC 9110: not 204 or 304; 1xx never reach here).
func bodyAllowed(status int) bool {
	return status != http.StatusNoContent && status != http.StatusNotModified
}
