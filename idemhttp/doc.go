// Package idemhttp protects net/http handlers with idempotency keys: the
// Idempotency-Key header of the IETF draft "The Idempotency-Key HTTP Header
// Field", over an idem.Executor.
//
// Build one executor at start-up, then one middleware per route (a use case):
//
//	ex, err := idem.New(store)
//	protect, err := idemhttp.New(ex, idemhttp.Route{UseCase: "payments.create", Principal: userOf})
//	mux.Handle("POST /payments", protect(http.HandlerFunc(createPayment)))
//
// The middleware is a func(http.Handler) http.Handler: it works with
// http.ServeMux method and path patterns and with any router that takes such
// middleware. Routes without it are untouched.
//
// # A protected request
//
// For a protected method (POST and PATCH unless configured), the middleware
// reads the key (400 if missing, unless the route makes it optional, empty,
// sent twice, a list, or malformed: keys are 16 to 255 bytes of printable
// ASCII, see core.ValidateKey, bare or as an RFC 9651 String with strict
// parameters), the principal (401 without one, with the route's
// WWW-Authenticate challenge) and the tenant, then the Content-Type (415
// for a media type the route does not take: JSON only unless it names its
// own, see Route.MediaTypes), then the body, once, up to the route's limit
// (413). It fingerprints the body (a fingerprint.Spec for JSON; the media
// type and the raw bytes otherwise), with the method and the request
// target (so that one key sent to two paths of a pattern is two requests),
// and hands the handler the same bytes. The handler then runs at most once
// per (tenant, principal, use case, key):
//
//   - the first request runs it and gets its response;
//   - a retry after it finished gets the stored status, body byte for byte,
//     the stored headers the route replays (Content-Type, Location and
//     Route.ReplayHeaders), and Idempotent-Replayed: true;
//   - a request while it runs waits for the policy's InFlightWait, then is
//     replayed or answered 409 (or 202 by policy) with Retry-After;
//   - the same key with another request (another body, method, path or
//     query) is answered 422, whose detail names the parts that differ when
//     the executor hands over the record's fingerprint;
//   - a key whose outcome is unknown is answered 409 outcome_unknown with
//     Retry-After until the reconciler settles it;
//   - a store failure is answered 503 with Retry-After, and the handler does
//     not run; a store that rejects the record for good (store.ErrRejected)
//     is answered 500 idempotency_store_rejected, without Retry-After.
//
// Every refusal is an RFC 9457 application/problem+json body whose type is
// ProblemTypeBase + code (problems.md documents each) and whose "code" is the
// idem.Code. Retry-After is whole seconds, rounded up, at least 1. Each 5xx
// the middleware answers is logged once to Route.Logger (slog.Default if
// nil): a 503 at WARN, any other at ERROR, with the use case, the code and
// the store method that failed, never the key, the principal or the tenant.
//
// # The response
//
// The handler writes to a buffer, and the response reaches the client once
// the executor has recorded it, so a retry never sees a response that was
// not stored. The buffer holds the status, the headers and the body up to
// the policy's ResponseBytesMax (body and stored headers together).
//
//   - Over the limit, what is held and everything after it goes straight to
//     this client: it gets the whole response. The response cannot be
//     stored, so the executor leaves the key unknown (code response_invalid):
//     it is never executed again, and retries get 409 outcome_unknown until
//     the reconciler's Check settles it (with a response small enough to
//     store). Keep responses of protected routes under the limit.
//   - Flush (http.Flusher, http.ResponseController.Flush) does nothing while
//     the response is held, and flushes once it goes through (over the
//     limit). Streaming does not fit a replayable response; put streaming
//     routes outside the middleware, where they work as usual. A request
//     the middleware does not protect (a method it does not cover, no key
//     on a route where the key is optional) gets the server's own writer:
//     Flush, Hijack and the rest behave as without the middleware.
//   - Hijack is not supported: the writer is not an http.Hijacker, and
//     http.ResponseController.Hijack returns an error that matches
//     http.ErrNotSupported. A hijacked connection leaves nothing to replay.
//   - SetReadDeadline, SetWriteDeadline and EnableFullDuplex through
//     http.ResponseController reach the client's connection.
//   - Informational (1xx) statuses are not sent; a handler that writes
//     nothing answers 200, and Content-Type is sniffed as net/http does, so
//     the stored header is the one this client got.
//
// # What a retry gets when the handler ran
//
// This client always gets what the handler wrote. The record decides what
// retries get: the replay of a stored response; 409 outcome_unknown after a
// response over the limit, a response HTTP cannot replay, a handler that
// called OutcomeUnknown, or a store failure while recording (until the
// reconciler settles the key); a new execution after NotExecuted.
//
// A handler panic is recorded as unknown (never executed again on a guess),
// then raised again with its own value, so net/http's recovery and
// http.ErrAbortHandler behave as without the middleware.
//
// # A client that goes away
//
// A client's disconnect does not decide the outcome (as Stripe's API
// does it): a client that times out during a charge, then retries, gets
// the charge replayed, not 409 outcome_unknown until the reconciler can
// tell (the lease and its backoff: minutes), and never a second charge.
//
//   - Until the handler starts, the request is the client's: a client gone
//     while the key is read, reserved or waited for cancels it, and
//     nothing runs (503 request_cancelled, to nobody). A client gone once
//     the key is reserved but before the handler starts leaves the key
//     free at once, as NotExecuted does.
//   - Once the handler has started, its context is not cancelled when the
//     client goes away: it carries the client's values, and ends only at
//     the route's ExecutionTimeout (ExecutionTimeoutDefault, a minute;
//     context.Cause is ErrExecutionTimeout) or when the attempt loses its
//     lease (context.Cause is idem.ErrLeaseLost, even after the client has
//     gone). The outcome is recorded as if the client were there, and the
//     response goes to a connection that may be closed.
//   - A handler whose downstream call ends with its context cannot know
//     whether it happened: it calls OutcomeUnknown. One that learns that
//     nothing happened (refused before sending) calls NotExecuted, and the
//     key is free at once.
//
// AttemptOf gives the attempt's fencing token and lease end, to pass
// downstream.
package idemhttp
