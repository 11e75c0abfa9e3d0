package idemhttp

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/fingerprint"
)

// KeyHeaderDefault is the request header that carries the key, as the IETF
// draft names it.
const KeyHeaderDefault = "Idempotency-Key"

// ReplayedHeader is added, with the value "true", to every replayed
// response: the stored response is otherwise sent as it was.
const ReplayedHeader = "Idempotent-Replayed"

// AuthChallengeDefault is a route's WWW-Authenticate on a 401 unless it
// names its own: the bearer token scheme (RFC 6750), which most APIs take.
const AuthChallengeDefault = "Bearer"

// AnonymousPrincipal is the principal of every request on a route marked
// Anonymous: all its callers share one key space, so keys must be
// unguessable (the core's 16-byte minimum is the floor, a UUID is better).
const AnonymousPrincipal = "anonymous"

// Route is how one route (one use case) is protected. Only UseCase and
// either Principal or Anonymous are required; every other field has a
// default.
type Route struct {
	// UseCase names the operation ("payments.create"). It is part of every
	// record's scope: the same key under two use cases is two records.
	UseCase string
	// KeyHeader carries the key; KeyHeaderDefault if empty.
	KeyHeader string
	// KeyOptional lets a request without the key header through to the
	// handler unprotected. By default such a request is refused with 400.
	// A key that is present but malformed is refused either way.
	KeyOptional bool
	// Methods are the protected methods; POST and PATCH if nil. A request
	// with another method passes through untouched.
	Methods []string
	// BodyBytesMax bounds the request body, which is read whole to be
	// fingerprinted (413 beyond it); the executor policy's RequestBytesMax
	// if 0.
	BodyBytesMax int64
	// MediaTypes are the request media types (Content-Type, parameters
	// aside) the route takes: type/subtype, type/*, */*, or type/*+suffix
	// (*/*+json: any +json type). A request of another type, or with a body
	// and no Content-Type, is answered 415 before its body is read; a
	// request without a body needs no Content-Type. A JSON type
	// (application/json or +json) is fingerprinted by Fingerprint and must
	// be UTF-8 (a charset other than utf-8 is refused); any other type, as
	// its media type and raw bytes (see RawDomainTag). MediaTypesDefault
	// (JSON only) if nil: a handler that parses JSON never gets a body that
	// skipped the canonical form and its duplicate-member check. Name the
	// types of a route that takes others; []string{"*/*"} takes any.
	MediaTypes []string
	// Fingerprint computes the fingerprint of JSON bodies, with its JSON
	// Pointer Include/Exclude selection and schema version. If nil,
	// fingerprint.NewSpec(UseCase, 1): the whole body, canonicalized.
	// Either way the request's method and target (path and query) count
	// too (see TargetDomainTag): the same key and body sent to
	// /accounts/a/payments and /accounts/b/payments are two requests, and
	// the second is answered 422.
	Fingerprint *fingerprint.Spec
	// Principal names the caller, from the request as your authentication
	// left it. An error or an empty name is answered 401: without a
	// principal, two users' requests with the same key would share a record.
	Principal func(*http.Request) (string, error)
	// Anonymous protects a route that has no callers to tell apart: every
	// request's principal is AnonymousPrincipal. New refuses a Route with
	// neither Principal nor Anonymous, and one with both.
	Anonymous bool
	// AuthChallenge is the WWW-Authenticate value of the 401 answered when
	// Principal names no caller (RFC 9110 §11.6.1 wants a challenge on
	// every 401): the scheme your authentication takes, with its
	// parameters (Basic realm="api"). AuthChallengeDefault if empty.
	AuthChallenge string
	// Tenant names the caller's tenant; none if nil. An error is answered
	// 400.
	Tenant func(*http.Request) (string, error)
	// ExecutionTimeout bounds the handler's run: its context's deadline is
	// this long after it starts (the cause is ErrExecutionTimeout).
	// ExecutionTimeoutDefault if 0. The handler's context is not cancelled
	// when its client goes away (see the package documentation): this
	// timeout, and a lost lease, are what end it.
	ExecutionTimeout time.Duration
	// Logger is where the middleware logs each 5xx it answers, once: a 503
	// (the store is down, a client gone before anything ran) at WARN, any
	// other at ERROR, with the use case and the code, never the key, the
	// principal or the tenant. slog.Default() (when it logs) if nil.
	Logger *slog.Logger
	// ReplayHeaders are response headers stored and replayed besides
	// Content-Type and Location (which always are). Headers the connection
	// or the server owns (Content-Length, Transfer-Encoding, Connection,
	// Date, ...) and Idempotent-Replayed are refused.
	ReplayHeaders []string
}

// alwaysReplayed are stored and replayed on every route.
var alwaysReplayed = []string{"Content-Type", "Location"}

// neverReplayed are headers that describe the connection or this one
// message, not the outcome: a replay must compute its own.
var neverReplayed = []string{
	"Connection", "Content-Length", "Date", "Keep-Alive", "Proxy-Connection",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", ReplayedHeader,
}

// config is a Route checked and with its defaults filled in. It never
// changes after New, so every request reads it without a lock.
type config struct {
	useCase      string
	keyHeader    string // canonical
	keyOptional  bool
	methods      []string
	bodyBytesMax int64
	spec         *fingerprint.Spec
	principal    func(*http.Request) (string, error)
	tenant       func(*http.Request) (string, error)
	challenge    string   // WWW-Authenticate of a 401
	replayed     []string // canonical
	mediaTypes   []mediaRange
	mediaList    string // the media types, for a 415's detail
	accept       string // the Accept header of a 415; "" if none can be said
	keyBytesMax  int
	logger       *slog.Logger // nil: slog.Default()
	// executionTimeout bounds the handler's context.
	executionTimeout time.Duration
	// responseBytesMax is the policy's stored-response limit: the capture
	// stops buffering past it.
	responseBytesMax int
}

// New returns the middleware that protects a handler as rt says, over ex.
// Build ex once, at start-up, and share it between routes: each route is a
// use case over the same store.
//
//	protect, err := idemhttp.New(ex, idemhttp.Route{UseCase: "payments.create", Principal: userOf})
//	mux.Handle("POST /payments", protect(http.HandlerFunc(createPayment)))
//
// The returned function panics if given a nil handler, as http.Handle does:
// that is a start-up bug, not a request's.
func New(ex *idem.Executor, rt Route) (func(http.Handler) http.Handler, error) {
	c, err := newConfig(ex, rt)
	if err != nil {
		return nil, err
	}
	return func(next http.Handler) http.Handler {
		if next == nil {
			panic("idemhttp: nil handler for use case " + c.useCase)
		}
		return &handler{ex: ex, next: next, cfg: c}
	}, nil
}

func newConfig(ex *idem.Executor, rt Route) (*config, error) {
	if ex == nil {
		return nil, errors.New("idemhttp: New: nil executor")
	}
	where := fmt.Sprintf("idemhttp: route %q", rt.UseCase)
	if rt.UseCase == "" {
		return nil, errors.New("idemhttp: route without a UseCase: the use case is part of every key's scope")
	}
	// The use case goes into every scope: check it now with the core's own
	// rules rather than refuse every request later.
	probe := core.Scope{Principal: AnonymousPrincipal, UseCase: rt.UseCase, Key: strings.Repeat("k", core.KeyBytesMin)}
	if err := probe.Validate(core.KeyBytesMax); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	switch {
	case rt.Principal == nil && !rt.Anonymous:
		return nil, fmt.Errorf("%s has no Principal extractor: two users' requests with the same key would share a record "+
			"(set Route.Anonymous if the route has no callers to tell apart)", where)
	case rt.Principal != nil && rt.Anonymous:
		return nil, fmt.Errorf("%s has a Principal extractor and is marked Anonymous: choose one", where)
	}
	p := ex.Policy()
	c := &config{
		useCase: rt.UseCase, keyHeader: KeyHeaderDefault, keyOptional: rt.KeyOptional,
		methods: []string{http.MethodPost, http.MethodPatch}, bodyBytesMax: int64(p.RequestBytesMax),
		spec: rt.Fingerprint, principal: rt.Principal, tenant: rt.Tenant, challenge: AuthChallengeDefault, logger: rt.Logger,
		replayed: slices.Clone(alwaysReplayed), keyBytesMax: p.KeyBytesMax, responseBytesMax: p.ResponseBytesMax,
	}
	if err := c.setRequestRules(rt); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if err := c.setReplayHeaders(rt.ReplayHeaders); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return c, nil
}

// setRequestRules checks and keeps what rt says of the requests it takes:
// the key header, the 401's challenge, the methods, the media types, the
// execution timeout, the body limit and the fingerprint.
func (c *config) setRequestRules(rt Route) error {
	if rt.KeyHeader != "" {
		if !validToken(rt.KeyHeader) {
			return fmt.Errorf("key header %q is not an RFC 9110 field name", rt.KeyHeader)
		}
		c.keyHeader = http.CanonicalHeaderKey(rt.KeyHeader)
	}
	if rt.AuthChallenge != "" {
		if !validChallenge(rt.AuthChallenge) {
			return fmt.Errorf("auth challenge %q is not an RFC 9110 challenge (a scheme, then a space and its parameters)", rt.AuthChallenge)
		}
		c.challenge = rt.AuthChallenge
	}
	if rt.Methods != nil {
		if len(rt.Methods) == 0 {
			return errors.New("an empty Methods protects nothing (nil means POST and PATCH)")
		}
		c.methods = nil
		for _, m := range rt.Methods {
			if !validToken(m) {
				return fmt.Errorf("method %q is not an RFC 9110 token", m)
			}
			c.methods = append(c.methods, strings.ToUpper(m))
		}
	}
	if err := c.setMediaTypes(rt.MediaTypes); err != nil {
		return err
	}
	switch {
	case rt.ExecutionTimeout < 0:
		return fmt.Errorf("execution timeout %v must not be negative", rt.ExecutionTimeout)
	case rt.ExecutionTimeout == 0:
		c.executionTimeout = ExecutionTimeoutDefault
	default:
		c.executionTimeout = rt.ExecutionTimeout
	}
	switch {
	case rt.BodyBytesMax < 0:
		return fmt.Errorf("body limit %d bytes must not be negative", rt.BodyBytesMax)
	case rt.BodyBytesMax > 0:
		c.bodyBytesMax = rt.BodyBytesMax
	}
	if c.spec == nil {
		spec, err := fingerprint.NewSpec(rt.UseCase, 1)
		if err != nil {
			return err
		}
		c.spec = spec
	}
	return nil
}

// setReplayHeaders adds the route's own replayed headers to those always
// replayed.
func (c *config) setReplayHeaders(headers []string) error {
	for _, h := range headers {
		if !validToken(h) {
			return fmt.Errorf("replay header %q is not an RFC 9110 field name", h)
		}
		name := http.CanonicalHeaderKey(h)
		if slices.Contains(neverReplayed, name) {
			return fmt.Errorf("header %s belongs to the connection or to one message and is never replayed", name)
		}
		if !slices.Contains(c.replayed, name) {
			c.replayed = append(c.replayed, name)
		}
	}
	return nil
}

// protects reports whether requests with method m are protected.
func (c *config) protects(m string) bool { return slices.Contains(c.methods, m) }

// replayedName returns the configured spelling of name if it is stored and
// replayed, comparing without regard to case and without allocating.
func (c *config) replayedName(name string) (string, bool) {
	for _, r := range c.replayed {
		if strings.EqualFold(r, name) {
			return r, true
		}
	}
	return "", false
}

// validChallenge reports whether s is a challenge as WWW-Authenticate holds
// it: an auth-scheme (a token), then optionally one space and parameters
// without control bytes or a space at either end.
func validChallenge(s string) bool {
	scheme, params, hasParams := strings.Cut(s, " ")
	if !hasParams {
		return validToken(scheme)
	}
	return validToken(scheme) && params != "" && validValue(params) && strings.TrimSpace(params) == params
}

// validToken reports whether s is an RFC 9110 token (a field name, a method).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTchar(s[i]) {
			return false
		}
	}
	return true
}
