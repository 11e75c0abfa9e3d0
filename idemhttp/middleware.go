package idemhttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// handler is one protected route.
type handler struct {
	ex   *idem.Executor
	next http.Handler
	cfg  *config
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := h.cfg
	if !c.protects(r.Method) {
		h.next.ServeHTTP(w, r)
		return
	}
	// The key first: a request refused for its key costs no body read.
	key, present, err := keyOf(r.Header, c.keyHeader)
	if !present {
		if c.keyOptional {
			h.next.ServeHTTP(w, r) // unprotected, as configured
			return
		}
		err = errKeyMissing
	}
	if err == nil {
		err = core.ValidateKey(key, c.keyBytesMax)
	}
	if err != nil {
		WriteProblem(w, NewProblem(idem.CodeInvalidKey, http.StatusBadRequest, c.keyHeader+": "+err.Error()))
		return
	}
	scope, ok := c.scopeOf(w, r, key)
	if !ok {
		return
	}
	// The media type before the body: a type the route does not take costs
	// no body read.
	ct := r.Header.Get("Content-Type")
	isJSON, err := c.bodyMediaType(ct)
	if err != nil {
		writeUnsupportedMediaType(w, c, err)
		return
	}
	// The attempt holds the request's state, its capture and the body's
	// buffer in one allocation, pooled while the handler does not run.
	run := attemptPool.Get().(*attempt)
	defer run.done()
	bodyFP, ok := c.bodyFingerprint(w, r, ct, isJSON, run)
	if !ok {
		return
	}
	req := idem.Request{Scope: scope, Fingerprint: requestFingerprint(bodyFP, r.Method, r.URL.RequestURI())}

	run.next, run.r, run.executionTimeout = h.next, r, c.executionTimeout
	run.body.Reset(run.bodyBuf) // the handler reads the same bytes, as if the middleware were not there
	run.cw.init(w, c)           // the capture takes a buffer only if the handler runs and writes
	cw := &run.cw
	run.doCtx.init(r.Context())
	res, err := h.ex.Do(&run.doCtx, req, run.action) // a panic of the handler comes back out of Do, recorded
	switch {
	case err == nil && res.Kind == idem.ResultReplayed:
		writeReplay(w, c, &res.Response)
	case run.ran:
		// Executed, recorded or not (a store failure, a response that
		// cannot be stored, a handler that said NotExecuted or
		// OutcomeUnknown): this client gets what the handler wrote.
		// Retries get what the record says (see the package doc).
		cw.send()
	case err == nil:
		c.answer(w, NewProblem(idem.CodeInvalidRequest, http.StatusInternalServerError, "the executor answered without running or replaying"), nil)
	default:
		c.answer(w, refusal(err, req.Fingerprint), err)
	}
}

// scopeOf is the request's scope for key: the caller (401 without one) and
// the tenant (400 if it cannot be named). ok is false once it has answered.
func (c *config) scopeOf(w http.ResponseWriter, r *http.Request, key string) (scope idem.Scope, ok bool) {
	scope = idem.Scope{UseCase: c.useCase, Key: key, Principal: AnonymousPrincipal}
	if c.principal != nil {
		p, err := c.principal(r)
		if err != nil || p == "" {
			w.Header().Set("WWW-Authenticate", c.challenge)
			WriteProblem(w, NewProblem(CodeUnauthenticated, http.StatusUnauthorized, "the request names no caller"))
			return scope, false
		}
		scope.Principal = p
	}
	if c.tenant != nil {
		t, err := c.tenant(r)
		if err != nil {
			WriteProblem(w, NewProblem(idem.CodeInvalidRequest, http.StatusBadRequest, "tenant: "+err.Error()))
			return scope, false
		}
		scope.Tenant = t
	}
	return scope, true
}

// bodyFingerprint reads the body into run, once, and fingerprints it: as
// JSON, or as its media type ct and raw bytes. ok is false once it has
// answered (413, 415 for a body without a Content-Type, 400).
func (c *config) bodyFingerprint(w http.ResponseWriter, r *http.Request, ct string, isJSON bool, run *attempt) (fp idem.Fingerprint, ok bool) {
	body, err := readBody(w, r, c.bodyBytesMax, run.bodyBuf[:0])
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			WriteProblem(w, NewProblem(CodeRequestTooLarge, http.StatusRequestEntityTooLarge,
				"the request body is over "+strconv.FormatInt(c.bodyBytesMax, 10)+" bytes"))
			return fp, false
		}
		WriteProblem(w, NewProblem(idem.CodeInvalidRequest, http.StatusBadRequest, "the request body could not be read"))
		return fp, false
	}
	run.bodyBuf = body
	switch {
	case isJSON:
		if fp, err = c.spec.Of(body); err != nil {
			WriteProblem(w, NewProblem(idem.CodeInvalidRequest, http.StatusBadRequest, "the JSON body cannot be fingerprinted: "+err.Error()))
			return fp, false
		}
		return fp, true
	case ct == "" && len(body) > 0:
		writeUnsupportedMediaType(w, c, c.errNoContentType())
		return fp, false
	}
	return rawFingerprint(c.useCase, mediaTypeOf(ct), body), true
}

// answer sends a problem of the executor's, logged if it is a 5xx.
func (c *config) answer(w http.ResponseWriter, p Problem, cause error) {
	c.logServerProblem(&p, cause)
	WriteProblem(w, p)
}

// refusal is the problem for Do's error when the handler did not run.
func refusal(err error, fp idem.Fingerprint) Problem {
	e, ok := asIdemError(err)
	// A context done before anything ran comes back as it is: nothing was
	// reserved, and it is not the store's failure. A client gone once the
	// key was reserved, before the handler started, released the key.
	if !ok || errors.Is(err, errClientGone) {
		p := NewProblem(CodeRequestCancelled, http.StatusServiceUnavailable, "the request was cancelled before it ran: nothing was executed")
		p.RetryAfterSeconds = 1
		return p
	}
	p := problemOf(e)
	if e.Code == idem.CodeKeyMisuse {
		p.Detail = describeMismatch(e, fp)
	}
	return p
}

// attempt is one request's run of the handler as an idem.Action.
type attempt struct {
	next    http.Handler
	r       *http.Request
	bodyBuf []byte   // what readBody read into
	body    heldBody // bodyBuf, for the handler
	cw      capture

	executionTimeout time.Duration
	doCtx            doContext // Do's: the client's, until the handler starts

	ran         bool
	at          idem.Attempt
	unknown     error // OutcomeUnknown's cause
	notExecuted error // NotExecuted's cause
}

type attemptKey struct{}

var attemptPool = sync.Pool{New: func() any { return new(attempt) }}

// done ends the watch over the client and releases what the request held.
// While the handler has not run (a replay, a refusal), nothing waited on
// the context Do ran on, and the watch's callback never started, nothing
// else can hold the attempt or the body it read, so both go back to the
// pool. A handler may keep its request (the attempt in its context, the
// body) past its return, a callback may still be running, and a context
// made from Do's (the in-flight wait's timer, a driver's) may still call
// its Done as it is cancelled, after Do returned: then they are left to
// the collector.
func (a *attempt) done() {
	a.doCtx.end()
	a.cw.release()
	if a.ran || a.doCtx.fired || a.doCtx.armed.Load() {
		return
	}
	buf := a.bodyBuf[:0]
	if cap(buf) > bodyPooledMax {
		buf = nil // a rare large body must not stay pinned in the pool
	}
	*a = attempt{bodyBuf: buf}
	attemptPool.Put(a)
}

// heldBody is the request body the middleware read, as the handler's
// r.Body: a bytes.Reader (with its WriterTo) that closes as a no-op.
type heldBody struct{ bytes.Reader }

func (*heldBody) Close() error { return nil }

// action runs the handler on its own context (see handlerContext: its
// client's going away does not cancel it), and returns what it wrote. The
// handler's request is a copy of the client's with the body the middleware
// read: the client's request is not modified. A client gone before the
// handler started leaves nothing run, and says so.
func (a *attempt) action(ctx context.Context, at idem.Attempt) (idem.Response, error) {
	if !a.doCtx.start() {
		return idem.Response{}, idem.NotExecuted(errClientGone)
	}
	a.ran, a.at = true, at
	hctx, cancel := a.handlerContext(ctx)
	defer cancel()
	r := a.r.WithContext(context.WithValue(hctx, attemptKey{}, a))
	r.Body, r.ContentLength = &a.body, a.body.Size()
	a.next.ServeHTTP(&a.cw, r)
	switch {
	case a.unknown != nil:
		return idem.Response{}, a.unknown
	case a.notExecuted != nil:
		return idem.Response{}, idem.NotExecuted(a.notExecuted)
	}
	return a.cw.response(), nil
}

// ErrUnprotected is what NotExecuted and OutcomeUnknown return for a request
// that is not running under the middleware (another method, no key on an
// optional route, or no middleware at all): there is no attempt to mark.
var ErrUnprotected = errors.New("idemhttp: the request is not running as a protected attempt")

// Causes used when the handler gives none.
var (
	errNotExecuted    = errors.New("the handler reported that it did not execute")
	errOutcomeUnknown = errors.New("the handler reported that its outcome is unknown")
)

func attemptOf(r *http.Request) *attempt {
	a, _ := r.Context().Value(attemptKey{}).(*attempt)
	return a
}

// AttemptOf is the attempt the protected handler runs as: its scope, its
// fencing token (pass it downstream, as a payment gateway's own idempotency
// key) and the end of its lease (LockedUntil: a deadline downstream, so that
// the reconciler can conclude). ok is false outside the middleware.
func AttemptOf(r *http.Request) (at idem.Attempt, ok bool) {
	if a := attemptOf(r); a != nil {
		return a.at, true
	}
	return idem.Attempt{}, false
}

// NotExecuted tells the middleware that the handler's attempt definitely had
// no side effect (it failed before any request left the process). Its
// response goes to this client but is not stored, and the key is released:
// a retry executes again. When in doubt, call OutcomeUnknown instead. Call it
// from the handler before it returns.
func NotExecuted(r *http.Request, cause error) error {
	a := attemptOf(r)
	if a == nil {
		return ErrUnprotected
	}
	if cause == nil {
		cause = errNotExecuted
	}
	a.notExecuted = cause
	return nil
}

// OutcomeUnknown tells the middleware that the handler's attempt may or may
// not have had its side effect (a downstream timeout). Its response goes to
// this client but is not stored; the key becomes unknown, so retries get 409
// outcome_unknown until the reconciler settles it, and it never executes
// twice on a guess. It wins over NotExecuted. Call it from the handler
// before it returns.
func OutcomeUnknown(r *http.Request, cause error) error {
	a := attemptOf(r)
	if a == nil {
		return ErrUnprotected
	}
	if cause == nil {
		cause = errOutcomeUnknown
	}
	a.unknown = cause
	return nil
}

// readBody reads the whole body, at most bodyMax bytes, into buf (grown if
// it is short). A declared length over the limit is refused before reading
// a byte.
func readBody(w http.ResponseWriter, r *http.Request, bodyMax int64, buf []byte) ([]byte, error) {
	if r.ContentLength > bodyMax {
		return nil, &http.MaxBytesError{Limit: bodyMax}
	}
	if r.Body == nil || r.Body == http.NoBody {
		return buf[:0], nil
	}
	rd := http.MaxBytesReader(w, r.Body, bodyMax) // also tells net/http to close the connection past it
	size := 512
	if r.ContentLength >= 0 {
		size = int(r.ContentLength) + 1 // one more: the read that finds EOF needs no growth
	}
	if cap(buf) < size {
		buf = make([]byte, 0, size)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// writeReplay sends a stored response: its status, its body byte for byte,
// and its headers that the route replays, plus Idempotent-Replayed. A stored
// header is checked again here, whatever wrote the record (another version,
// another route's config): only the route's names are sent, and a value
// with a control byte is dropped, so a record can never inject a header.
// The status is checked too: one HTTP cannot send as a final answer
// (outside 200..599: net/http panics on some, sends a 1xx as a hint then a
// 200 for others), or a body with 204 or 304, is answered 500
// response_invalid rather than replayed as something else.
func writeReplay(w http.ResponseWriter, c *config, resp *idem.Response) {
	if err := core.CheckStatus(resp.StatusCode, len(resp.Body)); err != nil {
		c.answer(w, NewProblem(idem.CodeResponseInvalid, http.StatusInternalServerError,
			"the stored response cannot be replayed over HTTP"), err)
		return
	}
	h := w.Header()
	for _, name := range c.replayed {
		delete(h, name) // an outer middleware's value must not mix with the stored one
	}
	// One backing array for every value set here, each name's slice capped
	// at its own values, so that an append to one copies and never
	// overwrites the next.
	vals := make([]string, 0, len(resp.Headers)+2)
	set := func(name, v string) {
		vals = append(vals, v)
		h[name] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	for _, sh := range resp.Headers {
		name, ok := c.replayedName(sh.Name)
		switch {
		case !ok || !validValue(sh.Value):
		case len(h[name]) > 0: // a second value of a name: rare, not worth the array
			h[name] = append(h[name], sh.Value)
		default:
			set(name, sh.Value)
		}
	}
	set(ReplayedHeader, "true")
	if bodyAllowed(resp.StatusCode) {
		set("Content-Length", strconv.Itoa(len(resp.Body)))
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(resp.Body)
}

// validValue reports whether v is a header value that cannot end a field:
// no control byte but tab.
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
