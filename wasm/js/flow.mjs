// The executor's protocol (Go package flow) run in the module, for Node.js:
// a request's Flow says what to do next (apply an event to the store, run
// the action, wait for another attempt, answer) and is told what happened,
// as Go's Executor.Do hosts it. ../ABI.md ("Flow") is the layout; Go's
// wasmcore.Flow is the other host of it, and the tests hold this one to the
// native Flow's answers (testdata/flows.json).
//
// Values are idem.mjs's: 64-bit integers are bigints, durations and times
// nanoseconds (times since the Unix epoch, null for none).

import { _abi, ERROR_CODES, IdemError, IdemInputError, MalformedAnswerError, TrapError } from './idem.mjs';

const { Writer, Reader, object, responseFields, scopeFields, refusal, NANOS } = _abi;
const RAN_RESPONSE = responseFields('response');
const REQUEST_SCOPE = scopeFields('request');

/** What a Flow asks of its host (Effect.kind). */
export const EffectKind = Object.freeze({ Apply: 1, Run: 2, Wait: 3, Answer: 4 });
/** How a request was answered with a response (Result.kind). */
export const ResultKind = Object.freeze({ Executed: 1, Replayed: 2 });

// The flow calls (ABI.md, "Flow").
const CALL = { begin: 1, applied: 2, ran: 3, waited: 4, gone: 5, lease: 6, beaten: 7, lost: 8, beatTimeout: 9, end: 10 };
// Error kinds.
const KIND = { other: 0, canceled: 1, deadline: 2, panic: 3, flow: 4 };

/**
 * An action's proof that it did nothing: its key is released for a retry.
 * `code` is stored as the record's last error code ('not_executed' if
 * empty).
 */
export class NotExecutedError extends Error {
  constructor(message, { code = '', cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'NotExecutedError';
    this.code = code;
  }
}

/**
 * A store's definite refusal of a write (Go's store.ErrRejected): not an
 * outage, and retrying it would be refused again.
 */
export class StoreRejectedError extends Error {
  constructor(message, options) { super(message, options); this.name = 'StoreRejectedError'; }
}

/**
 * The executor's answer when it is not a response (Go's *idem.Error):
 * `code` is stable ('in_progress', 'key_misuse', ...), `status` the HTTP
 * status to answer, `retryAfter` nanoseconds.
 */
export class FlowError extends Error {
  constructor(code, status, retryAfter, cause) {
    super(cause === undefined ? `idem: ${code}` : `idem: ${code}: ${cause.message}`, cause === undefined ? undefined : { cause });
    this.name = 'FlowError';
    this.code = code;
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

// kindOf is an error's kind as the ABI names it: a caller gone (an abort)
// or a deadline (a timeout), else other.
function kindOf(err) {
  const name = err?.name;
  if (name === 'AbortError') return KIND.canceled;
  if (name === 'TimeoutError') return KIND.deadline;
  return KIND.other;
}

function messageOf(err) { return String(err?.message ?? err); }

// text writes an error as the guest rebuilds it: its kind, the core
// sentinel it carries (an IdemError the core raised), whether it is the
// store's rejection, and its text.
function text(w, err, kind = kindOf(err)) {
  const sentinel = err instanceof IdemError ? ERROR_CODES.indexOf(err.code) : -1;
  w.u8(kind); w.u8(sentinel < 0 ? 255 : sentinel); w.u8(err instanceof StoreRejectedError ? 1 : 0);
  w.str(messageOf(err), 'error.message');
}

function transition(w, t) {
  object(t, 'applied.transition');
  w.u8(t.decision.kind, 'applied.transition.decision.kind'); w.u64(t.decision.token, 'applied.transition.decision.token');
  w.i64(t.decision.retryAfter, 'applied.transition.decision.retryAfter');
  w.u8(t.write.kind, 'applied.transition.write.kind'); w.u64(t.write.expectVersion, 'applied.transition.write.expectVersion');
  w.u64(t.write.expectToken, 'applied.transition.write.expectToken');
}

// applied writes a store call's outcome: what it applied, or its error.
function applied(w, a, err) {
  if (err !== null && err !== undefined) { w.u8(1); text(w, err); return; }
  object(a, 'applied');
  w.u8(0); w.u8(a.before, 'applied.before');
  w.record(a.record); transition(w, a.transition); w.time(a.now, 'applied.now');
}

// A flow error's cause (ABI.md, "flow error").
const CAUSE = Object.freeze({ none: 0, text: 1, keyMisuse: 2 });

// readText reads an error the guest wrote (ABI.md, "flow error").
function readError(r) {
  const kind = r.u8();
  if (kind !== KIND.flow) return errorOf(kind, r);
  const code = r.str();
  const status = Number(r.i64());
  const retryAfter = r.i64();
  let cause;
  let stored;
  switch (r.u8()) {
    case CAUSE.none: break;
    case CAUSE.text: cause = errorOf(r.u8(), r); break;
    case CAUSE.keyMisuse:
      stored = r.raw(32); // a copy: raw slices
      cause = new Error("the key's record holds the fingerprint of another request");
      break;
    default: throw new MalformedAnswerError('idem/wasm: unknown flow error cause');
  }
  const err = new FlowError(code, status, retryAfter, cause);
  if (stored !== undefined) err.storedFingerprint = stored; // key_misuse: the fingerprint the key's record holds
  return err;
}

function errorOf(kind, r) {
  const sentinel = r.u8();
  const rejected = r.u8() !== 0;
  const message = r.str();
  if (sentinel < ERROR_CODES.length) return new IdemError(ERROR_CODES[sentinel], message);
  if (rejected) return new StoreRejectedError(message);
  const err = new Error(message);
  if (kind === KIND.canceled) err.name = 'AbortError';
  if (kind === KIND.deadline) err.name = 'TimeoutError';
  return err;
}

// readEffect decodes an effect answer into the flow's state.
function readEffect(bytes) {
  const r = new Reader(bytes);
  const status = r.u8();
  if (status === 1) throw refusal(r);
  if (status === 2) { const err = readError(r); r.end(); return { handle: -1, refused: err }; }
  if (status !== 0) throw new MalformedAnswerError(`status ${status}`);
  const handle = r.u32();
  const kind = r.u8();
  const effect = { kind };
  switch (kind) {
    case EffectKind.Apply:
      effect.event = {
        kind: r.u8(), now: r.time(), fingerprint: r.raw(32), token: r.u64(), response: r.response(),
        errorCode: r.str(), verdict: r.u8(),
      };
      effect.held = r.u8() !== 0;
      effect.detached = r.u8() !== 0;
      effect.timeout = r.i64();
      break;
    case EffectKind.Run:
      effect.attempt = { token: r.u64(), lockedUntil: r.time() };
      break;
    case EffectKind.Wait:
      effect.version = r.u64(); effect.token = r.u64(); effect.wait = r.i64();
      break;
    case EffectKind.Answer:
      effect.panicked = r.u8() !== 0;
      if (r.u8() !== 0) effect.error = readError(r);
      else effect.result = { kind: r.u8(), response: r.response(), token: r.u64(), recorded: r.u8() !== 0 };
      break;
    default:
      throw new MalformedAnswerError(`effect kind ${kind}`);
  }
  r.end();
  return { handle, effect };
}

const writers = new WeakMap();

/**
 * Begins request's Flow under config ({policy, outcomeTimeout?,
 * heartbeatInterval?}, durations in nanoseconds, 0 or absent for the
 * defaults) in core's module. Throws the Flow's refusal of an invalid
 * request (a FlowError: invalid_key, invalid_request) or policy (an
 * IdemError). Close the flow when done with it.
 */
export function beginFlow(core, config, request) {
  object(config, 'config'); object(request, 'request');
  // One writer per core, shared by its flows: every call encodes and sends
  // at once, with no await between, so flows never interleave in it.
  let w = writers.get(core);
  if (w === undefined) writers.set(core, (w = new Writer()));
  w.reset();
  w.u8(CALL.begin);
  w.policy(config.policy);
  w.i64(config.outcomeTimeout ?? 0n, 'config.outcomeTimeout');
  w.i64(config.heartbeatInterval ?? 0n, 'config.heartbeatInterval');
  w.scope(request, REQUEST_SCOPE, request.tenant ?? '');
  w.fingerprint(request.fingerprint, 'request.fingerprint');
  const { answer, generation, call } = core._flow(w);
  const got = readEffect(answer);
  if (got.refused) throw got.refused;
  const f = new Flow(core, w, got.handle, generation, request, got.effect);
  f.answered(answer, call);
  return f;
}

/**
 * A request's Flow in the module, with Go's flow.Flow's calls: `next` is
 * what to do, and each report (applied, ran, waited, gone) moves it on;
 * `done` says it is over, and `result()` returns the response or throws
 * the answer's error.
 */
export class Flow {
  constructor(core, writer, handle, generation, request, effect) {
    this.core = core; this.w = writer; this.handle = handle; this.generation = generation;
    this.scope = { tenant: request.tenant ?? '', principal: request.principal, useCase: request.useCase, key: request.key };
    this.reported = null; this.heldRecord = null; this.goneReason = null;
    this.ended = false;
    this.answer = null; this.answerCall = -1; // the module's last answer, for raw
    this.set(effect);
  }

  // answered keeps the module's last answer where it lies, for raw: a copy
  // of every answer cost the host more than its decoding.
  answered(answer, call) { this.answer = answer; this.answerCall = call; }

  /** The module's last answer, as bytes (for tests): read it before the module's next call. */
  get raw() {
    if (this.answer === null) return null;
    if (this.answerCall !== this.core._calls) throw new Error('idem: Flow.raw read after another call of its module');
    return this.answer.slice();
  }

  set(effect) {
    if (effect.kind === EffectKind.Run) {
      this.heldRecord = this.reported;
      effect.attempt.scope = this.scope;
    }
    if (effect.kind === EffectKind.Apply) effect.held = effect.held ? this.heldRecord : null;
    if (effect.kind === EffectKind.Answer && effect.error && this.goneReason !== null) {
      // The caller's own reason, not its text: the answer to a caller that
      // went away before anything ran is its reason itself (Go: ctx.Err()),
      // and an in_progress answer wraps it.
      const reason = this.goneReason;
      if (effect.error instanceof FlowError) {
        if (effect.error.cause?.message === messageOf(reason)) effect.error.cause = reason;
      } else if (effect.error.message === messageOf(reason)) effect.error = reason;
    }
    this.next = effect;
  }

  get done() { return this.next.kind === EffectKind.Answer; }

  /** The response once done (`{kind, response, token, recorded}`), or throws the answer's error. */
  result() {
    if (!this.done) throw new Error('idem: Flow.result before the flow is done');
    if (this.next.error) throw this.next.error;
    return this.next.result;
  }

  // call sends the report that write appends and takes the next effect; a
  // module that trapped (or was replaced) ends the flow with that error.
  call(write) {
    if (this.ended) return;
    const w = this.w;
    w.reset();
    write(w);
    let got;
    try {
      const { answer, generation, call } = this.core._flow(w);
      if (generation !== this.generation) throw new TrapError('idem/wasm: the module this flow ran in trapped and was replaced');
      got = readEffect(answer);
      this.answered(answer, call);
    } catch (err) {
      if (err instanceof IdemInputError) throw err; // the caller's value, refused before it reached the module
      this.ended = true;
      this.next = { kind: EffectKind.Answer, panicked: false, error: err };
      return;
    }
    this.set(got.effect);
  }

  /** Reports how an Apply went: what the store applied ({before, record, transition, now}), or its error. */
  applied(a, err = null) {
    if (err === null || err === undefined) this.reported = a.record;
    this.call((w) => { w.u8(CALL.applied); w.u32(this.handle); applied(w, a, err); });
  }

  /**
   * Reports what the action returned: a response, or what it threw (a
   * NotExecutedError when it did nothing; any other error leaves its
   * outcome unknown).
   */
  ran(response, err = null) {
    this.call((w) => {
      w.u8(CALL.ran); w.u32(this.handle);
      if (err === null || err === undefined) { w.u8(0); w.response(response, RAN_RESPONSE); return; }
      if (err instanceof NotExecutedError) { w.u8(1); w.str(err.code, 'error.code'); w.str(messageOf(err), 'error.message'); return; }
      w.u8(2); text(w, err);
    });
  }

  /** Reports that a Wait ended after elapsed nanoseconds. */
  waited(elapsed) { this.call((w) => { w.u8(CALL.waited); w.u32(this.handle); w.i64(elapsed, 'elapsed'); }); }

  /** Reports that the caller went away (err: its abort reason) during an Apply or a Wait. */
  gone(err) {
    this.goneReason = err;
    this.call((w) => { w.u8(CALL.gone); w.u32(this.handle); text(w, err); });
  }

  /** Starts the running attempt's lease, granted by the reserve the host sent at sent. */
  lease(sent) { return new Lease(this, sent); }

  /** Ends the flow in the module. */
  close() {
    if (this.ended) return;
    this.ended = true;
    const w = this.w;
    w.reset(); w.u8(CALL.end); w.u32(this.handle);
    try {
      const { generation } = this.core._flow(w);
      if (generation !== this.generation) return;
    } catch { /* a module that trapped took the flow with it */ }
  }
}

/**
 * A running attempt's lease, kept in the module (Go's flow.Lease): the
 * host keeps the timers. `event` is the heartbeat, due every `interval`;
 * the action must be told by `tellBy` that its lease is lost unless a
 * heartbeat extended it. A module that fails takes the lease as lost.
 */
export class Lease {
  constructor(flow, sent) {
    this.flow = flow;
    this.failed = null;
    this.state((w) => { w.u8(CALL.lease); w.u32(flow.handle); w.time(sent, 'sent'); });
  }

  get event() { return { kind: 5, now: null, token: this.token }; }

  // call sends the call write appends and reads its answer with read; a
  // failure of the module (not a value the caller gave, which is thrown)
  // is kept, the lease counts as lost from then on, and fallback(err) is
  // the answer.
  call(write, read, fallback) {
    try {
      if (this.failed) throw this.failed;
      const f = this.flow;
      const w = f.w;
      w.reset(); write(w);
      const { answer, generation } = f.core._flow(w);
      if (generation !== f.generation) throw new TrapError('idem/wasm: the module this lease ran in trapped and was replaced');
      const r = new Reader(answer);
      const status = r.u8();
      if (status === 1) throw refusal(r);
      if (status !== 0) throw new MalformedAnswerError(`status ${status}`);
      const v = read(r);
      r.end();
      return v;
    } catch (err) {
      if (err instanceof IdemInputError) throw err;
      this.failed = err;
      return fallback(err);
    }
  }

  // state sends a call answered with the lease's state, keeps it, and
  // returns when the next heartbeat is due (0n: no more).
  state(write) {
    return this.call(write, (r) => {
      const next = r.i64();
      this.token = r.u64(); this.interval = r.i64(); this.tellBy = r.time();
      return next;
    }, () => 0n);
  }

  /** Reports a heartbeat sent at sent and heard at now; returns when the next is due (0n: no more). */
  beaten(sent, now, a, err = null) {
    return this.state((w) => {
      w.u8(CALL.beaten); w.u32(this.flow.handle); applied(w, a, err); w.time(sent, 'sent'); w.time(now, 'now');
    });
  }

  /** Whether the action must be told now that its lease is lost: `{lost, cause}`. */
  lost(now) {
    return this.call((w) => { w.u8(CALL.lost); w.u32(this.flow.handle); w.time(now, 'now'); },
      (r) => (r.u8() === 0 ? { lost: false, cause: null } : { lost: true, cause: errorOf(r.u8(), r) }),
      (err) => ({ lost: true, cause: err }));
  }

  /** How long a heartbeat sent at now may take, in nanoseconds. */
  beatTimeout(now) {
    return this.call((w) => { w.u8(CALL.beatTimeout); w.u32(this.flow.handle); w.time(now, 'now'); },
      (r) => r.i64(), () => NANOS / 1000n);
  }
}
