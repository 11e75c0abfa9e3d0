package idemhttp

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/idemkit/idem"
)

// ProblemTypeBase starts every problem type URI this package sends: the type
// is ProblemTypeBase followed by the problem's code, and problems.md (beside
// this file) has one section per code, so each type is a link to its
// meaning. The URIs are stable: a client may compare them as strings.
const ProblemTypeBase = "https://github.com/idemkit/idem/blob/main/idemhttp/problems.md#"

// Codes of the answers that are the HTTP edge's, not the executor's. They are
// idem.Code values so that a client reads every problem's "code" the same way.
const (
	// CodeRequestTooLarge: the request body is over the route's limit. 413.
	CodeRequestTooLarge idem.Code = "request_too_large"
	// CodeUnauthenticated: the route's principal extractor found no caller. 401.
	CodeUnauthenticated idem.Code = "unauthenticated"
	// CodeUnsupportedMediaType: the request's Content-Type is not one the
	// route takes (Route.MediaTypes), or a body came without one. 415, with
	// Accept.
	CodeUnsupportedMediaType idem.Code = "unsupported_media_type"
	// CodeRequestCancelled: the request's context ended before anything ran
	// (the client went away, or the server is shutting down). Nothing was
	// reserved or executed, and no store error is counted. 503.
	CodeRequestCancelled idem.Code = "request_cancelled"
)

// Problem is an RFC 9457 problem details object, as this package sends it
// with Content-Type application/problem+json.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Code is the stable idem.Code (or one of this package's Code* values):
	// what a client should branch on, with Type. Every problem of this
	// package has one; an application's own may leave it out.
	Code idem.Code `json:"code,omitempty"`
	// RetryAfterSeconds repeats the Retry-After header, when there is one.
	RetryAfterSeconds int64 `json:"retryAfterSeconds,omitempty"`
}

// problemTitles are the fixed titles, one a code: RFC 9457 wants the title
// to stay the same for every occurrence of a type; what varies goes to Detail.
var problemTitles = map[idem.Code]string{
	idem.CodeInvalidKey:       "Idempotency-Key is missing or malformed",
	idem.CodeInvalidRequest:   "The request cannot be used for an idempotent operation",
	idem.CodeKeyMisuse:        "Idempotency-Key is already used for another request",
	idem.CodeInProgress:       "A request with this Idempotency-Key is in progress",
	idem.CodeOutcomeUnknown:   "The outcome of the request with this Idempotency-Key is not known yet",
	idem.CodeNotExecuted:      "The request was not executed",
	idem.CodeStoreUnavailable: "The idempotency store is unavailable",
	idem.CodeStoreRejected:    "The idempotency store rejected the request's record",
	idem.CodeResponseInvalid:  "The response cannot be stored for replay",
	CodeRequestTooLarge:       "The request body is too large",
	CodeUnauthenticated:       "The request is not authenticated",
	CodeUnsupportedMediaType:  "The request's media type is not accepted",
	CodeRequestCancelled:      "The request was cancelled before it ran",
}

// ProblemCodes lists every code this package can answer with, for
// documentation checks and clients that switch on them.
func ProblemCodes() []idem.Code {
	return []idem.Code{
		idem.CodeInvalidKey, idem.CodeInvalidRequest, idem.CodeKeyMisuse, idem.CodeInProgress,
		idem.CodeOutcomeUnknown, idem.CodeNotExecuted, idem.CodeStoreUnavailable, idem.CodeStoreRejected, idem.CodeResponseInvalid,
		CodeRequestTooLarge, CodeUnauthenticated, CodeUnsupportedMediaType, CodeRequestCancelled,
	}
}

// RetryAfterSeconds is d as a Retry-After value: whole seconds, rounded up
// (a client told 0 after 300 ms would come back at once and be refused
// again), and at least 1.
func RetryAfterSeconds(d time.Duration) int64 {
	if d <= time.Second {
		return 1
	}
	s := d / time.Second
	if d%time.Second != 0 {
		s++
	}
	return min(int64(s), math.MaxInt32) // a sane bound: no client waits 68 years
}

// NewProblem builds the problem for code with status and detail: its type
// is ProblemTypeBase + code and its title the code's own (the status's
// text for a code of another package). An application's own refusals (its
// authentication's 401) can so look like the middleware's.
func NewProblem(code idem.Code, status int, detail string) Problem {
	title, ok := problemTitles[code]
	if !ok {
		title = http.StatusText(status)
	}
	return Problem{Type: ProblemTypeBase + string(code), Title: title, Status: status, Detail: detail, Code: code}
}

// problemOf maps an executor error to its problem. The status is the one
// the executor chose (409, or 202 by policy, for in_progress); Retry-After is
// set whenever the client is told to come back. An error without a status
// HTTP can send as a final answer (an *idem.Error built by hand, with none)
// is answered 500, never passed to WriteHeader, which would panic.
func problemOf(e *idem.Error) Problem {
	status := e.Status
	if status < 200 || status > 599 {
		status = http.StatusInternalServerError
	}
	p := NewProblem(e.Code, status, detailOf(e))
	switch e.Code {
	case idem.CodeInProgress, idem.CodeOutcomeUnknown, idem.CodeStoreUnavailable:
		p.RetryAfterSeconds = RetryAfterSeconds(e.RetryAfter)
	}
	return p
}

// detailOf says what happened without exposing a store's or an action's
// error text to the client: those may carry hosts, SQL or personal data.
// Validation errors are the client's own input and are shown.
func detailOf(e *idem.Error) string {
	switch e.Code {
	case idem.CodeInvalidKey, idem.CodeInvalidRequest:
		if e.Err != nil {
			return e.Err.Error()
		}
	case idem.CodeKeyMisuse:
		return misuseDetailUnknown // the middleware names the parts when it can (describeMismatch)
	case idem.CodeInProgress:
		return "another request with this key is running: retry after Retry-After seconds"
	case idem.CodeOutcomeUnknown:
		return "an earlier attempt with this key may have executed; it is being reconciled and is never executed twice: retry after Retry-After seconds"
	case idem.CodeStoreUnavailable:
		return "nothing was executed: retry after Retry-After seconds"
	case idem.CodeStoreRejected:
		return "nothing was executed: the server's idempotency store rejected this request's record, and will reject it again until the server is fixed"
	}
	return ""
}

// WriteProblem sends p as application/problem+json, with Retry-After when
// p has one. The body is built before anything is written, so a failure to
// encode (which cannot happen for these fields) still sends a status.
func WriteProblem(w http.ResponseWriter, p Problem) {
	body, err := json.Marshal(p)
	if err != nil {
		body = []byte(`{"type":"about:blank","status":500}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	if p.RetryAfterSeconds > 0 {
		h.Set("Retry-After", strconv.FormatInt(p.RetryAfterSeconds, 10))
	}
	w.WriteHeader(p.Status)
	_, _ = w.Write(body) // the client may be gone: nothing left to tell it
}

// writeUnsupportedMediaType answers 415 with why (err) and, when the
// route's media types can be said so, Accept (RFC 9110 §15.5.16).
func writeUnsupportedMediaType(w http.ResponseWriter, c *config, err error) {
	if c.accept != "" {
		w.Header().Set("Accept", c.accept)
	}
	WriteProblem(w, NewProblem(CodeUnsupportedMediaType, http.StatusUnsupportedMediaType, err.Error()))
}

// asIdemError reports err as an *idem.Error.
func asIdemError(err error) (*idem.Error, bool) {
	var e *idem.Error
	ok := errors.As(err, &e)
	return e, ok
}
