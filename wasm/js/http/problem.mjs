// RFC 9457 problems, as idemhttp sends them (problem.go): the same type
// URIs, titles, codes, statuses and bodies (encoding/json's bytes), so that
// a client of a Go and of a Node service reads every refusal one way.

import { goJSON } from './goformat.mjs';

export const PROBLEM_TYPE_BASE = 'https://github.com/idemkit/idem/blob/main/idemhttp/problems.md#';

export const Code = Object.freeze({
  InvalidKey: 'invalid_key', InvalidRequest: 'invalid_request', KeyMisuse: 'key_misuse', InProgress: 'in_progress',
  OutcomeUnknown: 'outcome_unknown', NotExecuted: 'not_executed', StoreUnavailable: 'idempotency_store_unavailable',
  StoreRejected: 'idempotency_store_rejected', ResponseInvalid: 'response_invalid',
  RequestTooLarge: 'request_too_large', Unauthenticated: 'unauthenticated',
  UnsupportedMediaType: 'unsupported_media_type', RequestCancelled: 'request_cancelled',
});

const TITLES = {
  invalid_key: 'Idempotency-Key is missing or malformed',
  invalid_request: 'The request cannot be used for an idempotent operation',
  key_misuse: 'Idempotency-Key is already used for another request',
  in_progress: 'A request with this Idempotency-Key is in progress',
  outcome_unknown: 'The outcome of the request with this Idempotency-Key is not known yet',
  not_executed: 'The request was not executed',
  idempotency_store_unavailable: 'The idempotency store is unavailable',
  idempotency_store_rejected: "The idempotency store rejected the request's record",
  response_invalid: 'The response cannot be stored for replay',
  request_too_large: 'The request body is too large',
  unauthenticated: 'The request is not authenticated',
  unsupported_media_type: "The request's media type is not accepted",
  request_cancelled: 'The request was cancelled before it ran',
};

export const MISUSE_DETAIL_UNKNOWN = 'this key was already used for another request (its method, path, query or body differ): use a new key for a new request';

/** Retry-After of a nanosecond duration: whole seconds, rounded up, at least 1. */
export function retryAfterSeconds(ns) {
  const NANOS = 1_000_000_000n;
  if (ns <= NANOS) return 1;
  let s = ns / NANOS;
  if (ns % NANOS !== 0n) s++;
  return Number(s > 2147483647n ? 2147483647n : s);
}

/** A problem of code with status and detail; its type and title are the code's. */
export function newProblem(code, status, detail = '') {
  return { type: PROBLEM_TYPE_BASE + code, title: TITLES[code] ?? '', status, detail, code, retryAfterSeconds: 0 };
}

/** The problem for an executor's FlowError (flow.mjs): its status, and Retry-After when the client should come back. */
export function problemOf(err) {
  let status = err.status;
  if (!(status >= 200 && status <= 599)) status = 500;
  const p = newProblem(err.code, status, detailOf(err));
  if (err.code === Code.InProgress || err.code === Code.OutcomeUnknown || err.code === Code.StoreUnavailable) {
    p.retryAfterSeconds = retryAfterSeconds(err.retryAfter ?? 0n);
  }
  return p;
}

// detailOf says what happened without a store's or an action's error text.
function detailOf(err) {
  switch (err.code) {
    case Code.InvalidKey: case Code.InvalidRequest: return err.cause?.message ?? '';
    case Code.KeyMisuse: return MISUSE_DETAIL_UNKNOWN;
    case Code.InProgress: return 'another request with this key is running: retry after Retry-After seconds';
    case Code.OutcomeUnknown: return 'an earlier attempt with this key may have executed; it is being reconciled and is never executed twice: retry after Retry-After seconds';
    case Code.StoreUnavailable: return 'nothing was executed: retry after Retry-After seconds';
    case Code.StoreRejected: return "nothing was executed: the server's idempotency store rejected this request's record, and will reject it again until the server is fixed";
    default: return '';
  }
}

/** The body of p as Go's json.Marshal writes a Problem (empty detail, code and retryAfterSeconds left out). */
export function problemBody(p) {
  const o = { type: p.type, title: p.title, status: p.status };
  if (p.detail) o.detail = p.detail;
  if (p.code) o.code = p.code;
  if (p.retryAfterSeconds > 0) o.retryAfterSeconds = p.retryAfterSeconds;
  return goJSON(o);
}

/** Sends p on a node:http ServerResponse as application/problem+json. */
export function writeProblem(res, p) {
  const body = Buffer.from(problemBody(p));
  res.setHeader('Content-Type', 'application/problem+json');
  res.setHeader('Content-Length', String(body.length));
  res.setHeader('Cache-Control', 'no-store');
  if (p.retryAfterSeconds > 0) res.setHeader('Retry-After', String(p.retryAfterSeconds));
  res.writeHead(p.status);
  res.end(body);
}
