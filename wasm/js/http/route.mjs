// One protected route: Go's idemhttp middleware for node:http and Express.
//
//   const protect = newRoute(executor, fingerprints, { useCase: 'payments.create', principal: (req) => req.principal });
//   app.post('/payments', protect(async (req, res) => { ... }));
//
// A protected request is read as idemhttp reads it (the key, the caller,
// the media type, the body once, its fingerprint with the method and the
// target), then runs the handler at most once per (tenant, principal, use
// case, key) through the executor; retries get the stored response byte
// for byte with Idempotent-Replayed: true, and every refusal is the same
// RFC 9457 problem a Go service sends. See README.md, "HTTP".

import { NotExecutedError, FlowError } from '../flow.mjs';
import { IdemInputError } from '../idem.mjs';
import { keyOf, missingKey, validateKey, KeyError, validToken } from './keyheader.mjs';
import { mediaRanges, bodyMediaType, mediaTypeOf, noContentTypeError } from './mediatype.mjs';
import { Code, newProblem, problemOf, writeProblem } from './problem.mjs';
import { rawFingerprint, requestFingerprint, describeMismatch, goRequestURI } from './target.mjs';
import { Capture, bodyAllowed } from './capture.mjs';

export const KEY_HEADER_DEFAULT = 'Idempotency-Key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';
export const ANONYMOUS_PRINCIPAL = 'anonymous';
export const EXECUTION_TIMEOUT_DEFAULT_MS = 60_000;

const ALWAYS_REPLAYED = ['Content-Type', 'Location'];
const NEVER_REPLAYED = ['Connection', 'Content-Length', 'Date', 'Keep-Alive', 'Proxy-Connection', 'Te', 'Trailer', 'Transfer-Encoding', 'Upgrade', REPLAYED_HEADER];

/** The cause of a handler's signal when its execution timeout passes. */
export class ExecutionTimeoutError extends Error {
  constructor() { super('idemhttp: the handler ran past the route\'s execution timeout'); this.name = 'ExecutionTimeoutError'; }
}

// canonical is http.CanonicalHeaderKey for a token.
// The longest delay Node's timers keep (a longer one fires at once).
const TIMER_MS_MAX = 2 ** 31 - 1;
// core.ScopePartBytesMax: the longest tenant, principal or use case.
const SCOPE_PART_BYTES_MAX = 255;
// How long a handler whose signal aborted (a lost lease, its execution
// timeout) is still waited for to end its response, as Go's handler is
// waited for to return; then its outcome is unknown.
const ABORTED_HANDLER_WAIT_MS = 10_000;

// validChallenge is a WWW-Authenticate challenge: a scheme (a token), then
// optionally one space and parameters without control bytes or a space at
// either end.
function validChallenge(s) {
  if (typeof s !== 'string') return false;
  const sp = s.indexOf(' ');
  if (sp < 0) return validToken(s);
  const params = s.slice(sp + 1);
  return validToken(s.slice(0, sp)) && params !== '' && !/[\x00-\x08\x0a-\x1f\x7f]/.test(params) && params.trim() === params;
}

const canonical = (name) => name.toLowerCase().replace(/(^|-)([a-z])/g, (_, dash, c) => dash + c.toUpperCase());

/**
 * The middleware of one route (a use case) over executor (createExecutor's)
 * with fingerprints (fingerprint.mjs's loadFingerprint()): a function that
 * takes a handler (req, res, next) and returns the protected handler.
 * Throws a TypeError for a route that cannot be served.
 */
export function newRoute(executor, fingerprints, route, { underWay = null } = {}) {
  const c = configOf(executor, fingerprints, route);
  return function protect(handler) {
    if (typeof handler !== 'function') throw new TypeError(`idemhttp: route ${JSON.stringify(c.useCase)}: the handler is not a function`);
    // It returns a promise that settles once the request is answered and
    // its outcome recorded (a server that stops waits for it).
    return function protected_(req, res, next = defaultNext(res)) {
      const done = serve(executor, c, handler, req, res, next).catch(next);
      if (underWay !== null) {
        underWay.add(done);
        done.finally(() => underWay.delete(done));
      }
      return done;
    };
  };
}

// defaultNext answers an error of a plain node:http server (Express passes its own next).
const defaultNext = (res) => (err) => {
  if (err === undefined || res.headersSent) { if (err !== undefined) res.destroy(err); return; }
  res.statusCode = 500;
  res.end();
};

function configOf(executor, fingerprints, rt) {
  if (!executor || typeof executor.do !== 'function') throw new TypeError('idemhttp: newRoute: want an executor (createExecutor)');
  if (!rt || typeof rt.useCase !== 'string' || rt.useCase === '') throw new TypeError('idemhttp: route without a useCase: the use case is part of every key\'s scope');
  const where = `idemhttp: route ${JSON.stringify(rt.useCase)}`;
  if (rt.principal === undefined && !rt.anonymous) throw new TypeError(`${where} has no principal extractor: two users' requests with the same key would share a record (set anonymous if the route has no callers to tell apart)`);
  if (rt.principal !== undefined && rt.anonymous) throw new TypeError(`${where} has a principal extractor and is marked anonymous: choose one`);
  if (!/^[\x20-\x7e]+$/.test(rt.useCase) || rt.useCase.length > SCOPE_PART_BYTES_MAX) {
    throw new TypeError(`${where}: the use case must be 1..${SCOPE_PART_BYTES_MAX} bytes of printable ASCII (it is part of every scope)`);
  }
  if (rt.authChallenge !== undefined && !validChallenge(rt.authChallenge)) {
    throw new TypeError(`${where}: auth challenge ${JSON.stringify(rt.authChallenge)} is not an RFC 9110 challenge (a scheme, then a space and its parameters)`);
  }
  const policy = executor.policy;
  const c = {
    useCase: rt.useCase, keyHeader: KEY_HEADER_DEFAULT, keyOptional: !!rt.keyOptional, methods: ['POST', 'PATCH'],
    bodyBytesMax: Number(policy.requestBytesMax), keyBytesMax: Number(policy.keyBytesMax), responseBytesMax: Number(policy.responseBytesMax),
    principal: rt.principal ?? null, tenant: rt.tenant ?? null, challenge: rt.authChallenge ?? 'Bearer',
    replayed: [...ALWAYS_REPLAYED], executionTimeoutMs: rt.executionTimeoutMs ?? EXECUTION_TIMEOUT_DEFAULT_MS,
    logger: rt.logger ?? null, media: null, spec: null,
  };
  if (rt.keyHeader !== undefined) {
    if (!validToken(rt.keyHeader)) throw new TypeError(`${where}: key header ${JSON.stringify(rt.keyHeader)} is not an RFC 9110 field name`);
    c.keyHeader = canonical(rt.keyHeader);
  }
  if (rt.methods !== undefined) {
    if (!Array.isArray(rt.methods) || rt.methods.length === 0) throw new TypeError(`${where}: an empty methods protects nothing (leave it out for POST and PATCH)`);
    c.methods = rt.methods.map((m) => {
      if (!validToken(m)) throw new TypeError(`${where}: method ${JSON.stringify(m)} is not an RFC 9110 token`);
      return m.toUpperCase();
    });
  }
  if (!(Number.isFinite(c.executionTimeoutMs) && c.executionTimeoutMs > 0 && c.executionTimeoutMs <= TIMER_MS_MAX)) {
    throw new TypeError(`${where}: executionTimeoutMs must be a positive number of milliseconds, at most ${TIMER_MS_MAX} (Node's timers)`);
  }
  if (rt.bodyBytesMax !== undefined) {
    if (!(Number.isSafeInteger(rt.bodyBytesMax) && rt.bodyBytesMax > 0)) throw new TypeError(`${where}: bodyBytesMax must be a positive integer`);
    c.bodyBytesMax = rt.bodyBytesMax;
  }
  for (const h of rt.replayHeaders ?? []) {
    if (!validToken(h)) throw new TypeError(`${where}: replay header ${JSON.stringify(h)} is not an RFC 9110 field name`);
    const name = canonical(h);
    if (NEVER_REPLAYED.includes(name)) throw new TypeError(`${where}: header ${name} belongs to the connection or to one message and is never replayed`);
    if (!c.replayed.includes(name)) c.replayed.push(name);
  }
  try {
    c.media = mediaRanges(rt.mediaTypes);
  } catch (err) {
    throw new TypeError(`${where}: ${err.message}`);
  }
  c.spec = rt.fingerprint ?? fingerprints.newSpec(rt.useCase, 1, { exclude: rt.exclude, include: rt.include });
  return c;
}

// A client gone before its handler started: nothing ran.
const CLIENT_GONE = 'the client went away before the handler started';

async function serve(executor, c, handler, req, res, next) {
  if (!c.methods.includes(req.method)) return handler(req, res, next);
  let key;
  try {
    const k = keyOf(req.rawHeaders, c.keyHeader);
    if (!k.present) {
      if (c.keyOptional) return handler(req, res, next); // unprotected, as configured
      throw missingKey();
    }
    key = k.key;
    validateKey(key, c.keyBytesMax);
  } catch (err) {
    if (!(err instanceof KeyError)) throw err;
    return writeProblem(res, newProblem(Code.InvalidKey, 400, `${c.keyHeader}: ${err.message}`));
  }
  const scope = await scopeOf(c, req, res, key);
  if (scope === null) return undefined;
  const ct = req.headers['content-type'] ?? '';
  let isJSON;
  try {
    isJSON = bodyMediaType(c.media, ct);
  } catch (err) {
    return writeUnsupportedMediaType(res, c, err);
  }
  const body = await readBody(req, res, c);
  if (body === null) return undefined;
  let bodyFP;
  if (isJSON) {
    try {
      bodyFP = c.spec.of(body);
    } catch (err) {
      return writeProblem(res, newProblem(Code.InvalidRequest, 400, `the JSON body cannot be fingerprinted: ${err.message}`));
    }
  } else if (ct === '' && body.length > 0) {
    return writeUnsupportedMediaType(res, c, noContentTypeError(c.media));
  } else {
    bodyFP = rawFingerprint(c.useCase, mediaTypeOf(ct), body);
  }
  const target = goRequestURI(req.originalUrl ?? req.url);
  const request = { ...scope, fingerprint: requestFingerprint(bodyFP, req.method, target) };
  return run(executor, c, handler, req, res, next, { request, body, isJSON });
}

// scopeOf is the request's scope: the caller (401 without one) and the
// tenant (400 if it cannot be named); null once it has answered.
async function scopeOf(c, req, res, key) {
  const scope = { tenant: '', principal: ANONYMOUS_PRINCIPAL, useCase: c.useCase, key };
  if (c.principal !== null) {
    let p = '';
    try { p = await c.principal(req); } catch { p = ''; }
    if (typeof p !== 'string' || p === '') {
      res.setHeader('WWW-Authenticate', c.challenge);
      writeProblem(res, newProblem(Code.Unauthenticated, 401, 'the request names no caller'));
      return null;
    }
    scope.principal = p;
  }
  if (c.tenant !== null) {
    let tenant;
    try {
      tenant = await c.tenant(req);
      if (typeof tenant !== 'string') throw new Error('the tenant extractor gave no string');
    } catch (err) {
      writeProblem(res, newProblem(Code.InvalidRequest, 400, `tenant: ${err?.message ?? err}`));
      return null;
    }
    scope.tenant = tenant;
  }
  return scope;
}

function writeUnsupportedMediaType(res, c, err) {
  if (c.media.accept !== '') res.setHeader('Accept', c.media.accept);
  writeProblem(res, newProblem(Code.UnsupportedMediaType, 415, err.message));
}

// readBody reads the whole body, at most the route's limit; null once it
// has answered (413, or 400 for a body that could not be read).
async function readBody(req, res, c) {
  const tooLarge = () => {
    res.setHeader('Connection', 'close'); // the rest of the body is not read
    writeProblem(res, newProblem(Code.RequestTooLarge, 413, `the request body is over ${c.bodyBytesMax} bytes`));
    return null;
  };
  if (req.readableEnded && req.complete && req.body !== undefined) {
    throw new Error(`idemhttp: route ${JSON.stringify(c.useCase)}: the request body was read before the middleware (a body parser runs first): mount the parser inside the protected handler, or not on this route`);
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > c.bodyBytesMax) return tooLarge();
  const chunks = [];
  let size = 0;
  try {
    for await (const chunk of req) {
      size += chunk.length;
      if (size > c.bodyBytesMax) return tooLarge();
      chunks.push(chunk);
    }
  } catch {
    writeProblem(res, newProblem(Code.InvalidRequest, 400, 'the request body could not be read'));
    return null;
  }
  return Buffer.concat(chunks, size);
}

// run is the executor's do, the handler as its action, and the answer.
async function run(executor, c, handler, req, res, next, { request, body, isJSON }) {
  // Until the handler starts, the request is the client's: a client gone
  // cancels it. Once started, the handler's signal is its lease's and its
  // execution timeout's, never the client's.
  const client = new AbortController();
  let started = false;
  const onClose = () => { if (!started && !res.writableFinished) client.abort(new Error(CLIENT_GONE)); };
  res.once('close', onClose);
  const capture = { held: null, ran: false, failure: undefined };
  const action = async ({ signal: leaseSignal, attempt }) => {
    if (client.signal.aborted) throw new NotExecutedError(CLIENT_GONE);
    started = true;
    capture.ran = true;
    return runHandler(c, handler, req, res, capture, { leaseSignal, attempt, body, isJSON, next });
  };
  let result; let failure = null;
  try {
    result = await executor.do(request, action, { signal: client.signal });
  } catch (err) {
    failure = err;
  } finally {
    res.off('close', onClose);
  }
  if (failure === null && result.kind === 2) return writeReplay(res, c, result.response);
  if (capture.ran) {
    // Executed, recorded or not: this client gets what the handler wrote;
    // retries get what the record says. A handler that threw goes on to
    // the application's error handling once its outcome is recorded.
    if (capture.failure !== undefined) {
      capture.held.release();
      return next(capture.failure);
    }
    return capture.held.send();
  }
  if (failure === null) return answer(res, c, newProblem(Code.InvalidRequest, 500, 'the executor answered without running or replaying'));
  if (failure instanceof IdemInputError) {
    // A scope the module cannot even be given (a principal that is not
    // well-formed): the client's, as Go's 400 for a scope out of the rules.
    return writeProblem(res, newProblem(Code.InvalidRequest, 400, failure.message));
  }
  if (!client.signal.aborted && !(failure instanceof FlowError)) throw failure; // not the client's, not the store's: the application's error handling
  return answer(res, c, refusal(failure, request.fingerprint, client.signal.aborted), failure);
}

// runHandler is the action: the handler on its own signal, with what it
// wrote held, and its outcome for the executor.
async function runHandler(c, handler, req, res, capture, { leaseSignal, attempt, body, isJSON, next }) {
  const held = new Capture(res, c.replayed, c.responseBytesMax);
  capture.held = held;
  const execution = new AbortController();
  const timer = setTimeout(() => execution.abort(new ExecutionTimeoutError()), c.executionTimeoutMs);
  const signal = AbortSignal.any([leaseSignal, execution.signal]);
  req[ATTEMPT] = { attempt, signal, notExecuted: null, unknown: null };
  req.rawBody = body;
  if (isJSON) req.body = body.length > 0 ? JSON.parse(body.toString('utf8')) : undefined; // the fingerprint has proved it strict I-JSON
  else req.body = body;
  let rejected;
  const failed = new Promise((resolve) => { rejected = resolve; });
  let returned;
  const handlerReturned = new Promise((resolve) => { returned = resolve; });
  // next() (or next('route')) passes the request on, as in Express: the
  // response whoever answers it writes is held the same. next(err) is a
  // failure of the handler.
  const nextOfHandler = (err) => {
    if (err === undefined || err === null || err === 'route' || err === 'router') return next(err);
    return rejected({ err });
  };
  let gaveUp = null;
  try {
    Promise.resolve()
      .then(() => handler(req, res, nextOfHandler))
      .then(() => returned(), (err) => rejected({ err }));
    // A signal's abort does not end the wait: the handler may still answer
    // (NotExecuted, a response), as Go's handler returns after its context
    // ends. It is waited for until it has returned without answering, or
    // for ABORTED_HANDLER_WAIT_MS.
    const abandoned = abortOf(signal).then((outcome) => new Promise((resolve) => {
      gaveUp = setTimeout(() => resolve(outcome), ABORTED_HANDLER_WAIT_MS);
      handlerReturned.then(() => setImmediate(() => resolve(outcome)));
    }));
    const outcome = await Promise.race([held.ended.then(() => null), failed, abandoned]);
    if (outcome !== null) {
      capture.failure = outcome.err;
      throw outcome.err instanceof Error ? outcome.err : new Error(String(outcome.err));
    }
  } finally {
    clearTimeout(timer);
    clearTimeout(gaveUp);
  }
  const mark = req[ATTEMPT];
  if (mark.unknown !== null) throw mark.unknown;
  if (mark.notExecuted !== null) throw new NotExecutedError(mark.notExecuted.message ?? String(mark.notExecuted), { cause: mark.notExecuted });
  return held.response();
}

// abortOf settles when signal aborts (a lost lease, the execution timeout)
// before the handler ended its response: its outcome is unknown.
const abortOf = (signal) => new Promise((resolve) => {
  if (signal.aborted) resolve({ err: signal.reason });
  else signal.addEventListener('abort', () => resolve({ err: signal.reason }), { once: true });
});

// refusal is the problem for do's error when the handler did not run.
function refusal(err, fp, clientGone) {
  if (clientGone) {
    const p = newProblem(Code.RequestCancelled, 503, 'the request was cancelled before it ran: nothing was executed');
    p.retryAfterSeconds = 1;
    return p;
  }
  const p = problemOf(err);
  if (err.code === Code.KeyMisuse) p.detail = describeMismatch(err.storedFingerprint, fp);
  return p;
}

// answer sends a problem of the executor's, logged once if it is a 5xx.
function answer(res, c, p, cause) {
  if (p.status >= 500 && c.logger !== null) {
    const fields = { useCase: c.useCase, code: p.code, status: p.status, cause: cause?.message };
    if (p.status === 503) c.logger.warn('idemhttp: answered a 5xx', fields);
    else c.logger.error('idemhttp: answered a 5xx', fields);
  }
  writeProblem(res, p);
}

// writeReplay sends a stored response: its status, its body byte for byte,
// the stored headers the route replays, and Idempotent-Replayed.
function writeReplay(res, c, resp) {
  const status = Number(resp.statusCode);
  const body = resp.body ?? new Uint8Array(0);
  if (status < 200 || status > 599 || (!bodyAllowed(status) && body.length > 0)) {
    return answer(res, c, newProblem(Code.ResponseInvalid, 500, 'the stored response cannot be replayed over HTTP'));
  }
  for (const name of c.replayed) res.removeHeader(name); // an outer middleware's value must not mix with the stored one
  const values = new Map();
  for (const h of resp.headers ?? []) {
    const name = c.replayed.find((r) => r.toLowerCase() === h.name.toLowerCase());
    const value = Buffer.from(h.value, 'utf8').toString('latin1'); // the stored bytes, as Node writes a header
    if (name === undefined || /[\x00-\x08\x0a-\x1f\x7f]/.test(value)) continue;
    values.set(name, [...(values.get(name) ?? []), value]);
  }
  for (const [name, vs] of values) res.setHeader(name, vs.length === 1 ? vs[0] : vs);
  res.setHeader(REPLAYED_HEADER, 'true');
  if (bodyAllowed(status)) res.setHeader('Content-Length', String(body.length));
  res.writeHead(status);
  res.end(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
}

const ATTEMPT = Symbol('idem.attempt');

/** The attempt a protected handler runs as ({ attempt: {scope, token, lockedUntil}, signal }), or null outside the middleware. */
export function attemptOf(req) {
  const a = req?.[ATTEMPT];
  return a ? { ...a.attempt, signal: a.signal } : null;
}

/** Tells the middleware that the handler did nothing: its response goes to this client, not stored, and the key is free. False outside the middleware. */
export function notExecuted(req, cause = new Error('the handler reported that it did not execute')) {
  const a = req?.[ATTEMPT];
  if (!a) return false;
  a.notExecuted = cause;
  return true;
}

/** Tells the middleware that the handler's outcome is unknown: retries get 409 outcome_unknown until the reconciler settles it. Wins over notExecuted. */
export function outcomeUnknown(req, cause = new Error('the handler reported that its outcome is unknown')) {
  const a = req?.[ATTEMPT];
  if (!a) return false;
  a.unknown = cause;
  return true;
}
