// The idem core (../idem.wasm, built by `make wasm`) for Node.js, over
// node:wasi. It speaks the ABI of ../ABI.md; the Go host (package wasmcore)
// is the other implementation of that ABI, and the tests hold this one to
// the Go core's answers (testdata/steps.json) and to the Go host's decoding
// of answers (testdata/answers.json). README.md is its guide.
//
// Types are in idem.d.ts. 64-bit values (tokens, versions, durations and
// times) are bigints: durations in nanoseconds, times in Unix nanoseconds,
// the zero time (no time) as null. The host refuses a value outside its
// field's range with an IdemInputError before anything reaches the guest.

import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

/** The ABI version this host speaks (ABI.md). */
export const ABI_VERSION = 5;

/** Names of the core's error sentinels, by ABI error code (ABI.md). */
export const ERROR_CODES = Object.freeze([
  'ErrInvalidScope', 'ErrInvalidKey', 'ErrFingerprintLength', 'ErrFingerprintMissing',
  'ErrTimeMissing', 'ErrTokenMissing', 'ErrTokenNotFresh', 'ErrResponseInvalid',
  'ErrResponseTooLarge', 'ErrUnknownEvent', 'ErrUnknownVerdict', 'ErrInvalidRecord',
  'ErrInvalidPolicy', 'ErrInvalidErrorCode',
]);

// The core's enums, with its numbers (core.Status, core.EventKind, ...).

/** core.Status: where a record stands. */
export const Status = Object.freeze({ Absent: 0, InProgress: 1, Completed: 2, FailedRetryable: 3, Unknown: 4, Expired: 5 });
/** core.EventKind: what happens to a record. */
export const EventKind = Object.freeze({ Invalid: 0, Reserve: 1, Complete: 2, Fail: 3, MarkUnknown: 4, Heartbeat: 5, Resolve: 6, Sweep: 7, Evict: 8 });
/** core.Verdict: the reconciler's finding (a Resolve event's verdict). */
export const Verdict = Object.freeze({ Invalid: 0, Executed: 1, NotExecuted: 2, StillUnknown: 3 });
/** core.DecisionKind: what Step tells its caller to do. */
export const DecisionKind = Object.freeze({
  Invalid: 0, Execute: 1, Replay: 2, Mismatch: 3, InFlight: 4, Reconciling: 5,
  Completed: 6, Acknowledged: 7, Failed: 8, MarkedUnknown: 9, Extended: 10, Stale: 11, Conflict: 12,
  Resolved: 13, Rescheduled: 14, Abandoned: 15, NotApplicable: 16,
  LeaseExpired: 17, Expired: 18, NothingDue: 19, Pruned: 20, Evicted: 21,
});
/** core.WriteKind: the store write that makes a step durable. */
export const WriteKind = Object.freeze({ None: 0, Insert: 1, Update: 2, Delete: 3 });
/** core.InFlightAnswer: 409 or 202 for a key being executed. */
export const InFlightAnswer = Object.freeze({ Conflict: 0, Accepted: 1 });
/** core.ExpiryMode: what a sweep does to a settled record past its TTL. */
export const ExpiryMode = Object.freeze({ Soft: 0, Hard: 1 });
/** core.FailMode: what Fail does to the record. */
export const FailMode = Object.freeze({ Keep: 0, Evict: 1 });

/** An event the core refused: `code` names the Go sentinel, `message` is the Go error's text. */
export class IdemError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'IdemError';
    this.code = code;
  }
}

/**
 * A value the host refuses before it reaches the core: out of its field's
 * range, of the wrong type, or missing. `field` names it
 * ('event.response.headers[0].name'), `value` is what was given.
 */
export class IdemInputError extends RangeError {
  constructor(field, value, want) {
    super(value === undefined ? `idem: ${field} is missing; want ${want}` : `idem: ${field}: ${show(value)} is not ${want}`);
    this.name = 'IdemInputError';
    this.field = field;
    this.value = value;
  }
}

/** The module speaks another ABI version, or none, or lacks an export of the ABI. */
export class AbiVersionError extends Error {
  constructor(message) { super(message); this.name = 'AbiVersionError'; }
}

/** The module trapped; the instance was discarded and the next step uses a fresh one. */
export class TrapError extends Error {
  constructor(message, options) { super(message, options); this.name = 'TrapError'; }
}

/** The guest answered bytes the host cannot decode (Go: ErrMalformedAnswer). The record is unchanged. */
export class MalformedAnswerError extends Error {
  constructor(detail) { super(`idem/wasm: malformed answer from the guest: ${detail}`); this.name = 'MalformedAnswerError'; }
}

function show(v) {
  switch (typeof v) {
    case 'bigint': return `${v}n`;
    case 'string': return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v);
    case 'number': case 'boolean': return String(v);
    case 'object':
      if (v === null) return 'null';
      if (Array.isArray(v)) return `an array of ${v.length}`;
      if (ArrayBuffer.isView(v)) return `a ${v.constructor.name} of ${v.length} elements`;
      return 'an object';
  }
  return `a ${typeof v}`;
}

const NANOS = 1_000_000_000n;
const U64_MAX = (1n << 64n) - 1n;
const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;
// A time is Unix nanoseconds whose seconds fit the ABI's i64.
const TIME_MIN = I64_MIN * NANOS;
const TIME_MAX = I64_MAX * NANOS + NANOS - 1n;
const NIL = 0xffffffff; // the length of a nil slice; a real one is shorter

const WANT = {
  u8: 'an integer 0..255 (u8)',
  u32: 'an integer 0..4294967295 (u32)',
  u64: 'a bigint 0..2^64-1, or a safe integer >= 0 (u64)',
  i64: 'a bigint -2^63..2^63-1, or a safe integer (i64)',
  time: 'null or a bigint of Unix nanoseconds whose seconds fit an i64',
  str: 'a well-formed string',
  bytes: 'null or a Uint8Array shorter than 2^32-1 bytes',
  fingerprint: 'a Uint8Array of 32 bytes',
  headers: 'null or an array of fewer than 2^32-1 headers',
  header: 'a header, {name, value}',
  object: 'an object',
};

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false });

/** The defaults of the Go core's PolicyDefault. */
export function policyDefault() {
  return {
    leaseDuration: 5n * 60n * NANOS,
    ttl: 24n * 3600n * NANOS,
    inFlightWait: 200_000_000n,
    inFlightAnswer: InFlightAnswer.Conflict,
    retryAfter: NANOS,
    expiry: ExpiryMode.Soft,
    fail: FailMode.Keep,
    reconcileBackoffBase: NANOS,
    reconcileBackoffMax: 5n * 60n * NANOS,
    reconcileAttemptsMax: 20,
    tombstoneRetention: 24n * 3600n * NANOS,
    keyBytesMax: 255,
    requestBytesMax: 1 << 20,
    responseBytesMax: 1 << 20,
  };
}

const zeroResponse = () => ({ statusCode: 0, headers: null, body: null, schemaVersion: 0 });
// What an event's left-out fingerprint and response are; only ever read.
const ZERO_FINGERPRINT = new Uint8Array(32);
const ZERO_RESPONSE = Object.freeze(zeroResponse());

/** The absent record of a scope: what a driver steps when its store has none. */
export function absentRecord(scope) {
  return {
    tenant: scope.tenant ?? '', principal: scope.principal, useCase: scope.useCase, key: scope.key,
    status: Status.Absent, fingerprint: new Uint8Array(32), token: 0n, version: 0n,
    response: zeroResponse(), lastErrorCode: '', lockedUntil: null, reconcileAfter: null, reconcileAttempts: 0,
    createdAt: null, completedAt: null, expiresAt: null,
  };
}

// The names of a response's fields, per response, so that the encoder
// builds no string on its way.
const responseFields = (prefix) => ({
  self: prefix, statusCode: `${prefix}.statusCode`, schemaVersion: `${prefix}.schemaVersion`,
  headers: `${prefix}.headers`, body: `${prefix}.body`,
});
const RECORD_RESPONSE = responseFields('record.response');
// The names of a scope's fields, as responseFields.
const scopeFields = (prefix) => ({
  tenant: `${prefix}.tenant`, principal: `${prefix}.principal`, useCase: `${prefix}.useCase`, key: `${prefix}.key`,
});
const RECORD_SCOPE = scopeFields('record');
const EVENT_RESPONSE = responseFields('event.response');

function object(v, field) {
  if (typeof v !== 'object' || v === null) throw new IdemInputError(field, v, WANT.object);
  return v;
}

// Writer encodes a request (ABI.md, "Request"), reusing its buffer, and
// refuses every value outside its field's range (IdemInputError).
class Writer {
  constructor() { this.grow(4096); }
  grow(size) {
    const buf = new Uint8Array(size);
    if (this.buf) buf.set(this.buf.subarray(0, this.n));
    this.buf = buf;
    this.view = new DataView(buf.buffer);
  }
  reset() { this.n = 0; }
  ensure(k) { if (this.n + k > this.buf.length) this.grow(Math.max(this.buf.length * 2, this.n + k)); }
  u8(v, field) {
    if (typeof v !== 'number' || !(v >= 0 && v <= 0xff) || !Number.isInteger(v)) throw new IdemInputError(field, v, WANT.u8);
    this.ensure(1); this.buf[this.n++] = v;
  }
  u32(v, field) {
    if (typeof v !== 'number' || !(v >= 0 && v <= 0xffffffff) || !Number.isInteger(v)) throw new IdemInputError(field, v, WANT.u32);
    this.ensure(4); this.view.setUint32(this.n, v, true); this.n += 4;
  }
  u64(v, field) {
    if (typeof v === 'bigint') {
      if (v < 0n || v > U64_MAX) throw new IdemInputError(field, v, WANT.u64);
    } else if (!Number.isSafeInteger(v) || v < 0) throw new IdemInputError(field, v, WANT.u64);
    this.ensure(8); this.view.setBigUint64(this.n, BigInt(v), true); this.n += 8;
  }
  i64(v, field) {
    if (typeof v === 'bigint') {
      if (v < I64_MIN || v > I64_MAX) throw new IdemInputError(field, v, WANT.i64);
    } else if (!Number.isSafeInteger(v)) throw new IdemInputError(field, v, WANT.i64);
    this.ensure(8); this.view.setBigInt64(this.n, BigInt(v), true); this.n += 8;
  }
  raw(b) { this.ensure(b.length); this.buf.set(b, this.n); this.n += b.length; }
  // str writes a string as UTF-8, refusing one that has none: a lone
  // surrogate, for which TextEncoder would write U+FFFD, a key or a header
  // the caller did not give.
  str(s, field) {
    if (typeof s !== 'string' || !this.utf8(s)) throw new IdemInputError(field, s, WANT.str);
  }
  // utf8 writes s's length and UTF-8 bytes, or reports false for a string
  // that is not well-formed. ASCII, what keys and codes are, is copied
  // without a call; the rest is TextEncoder's, straight into the buffer.
  utf8(s) {
    const len = s.length;
    this.ensure(4 + 3 * len);
    const buf = this.buf;
    let o = this.n + 4;
    let i = 0;
    for (; i < len; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) break;
      buf[o++] = c;
    }
    if (i < len) {
      if (!s.isWellFormed()) return false;
      o += encoder.encodeInto(i === 0 ? s : s.slice(i), buf.subarray(o)).written;
    }
    this.view.setUint32(this.n, o - this.n - 4, true);
    this.n = o;
    return true;
  }
  fingerprint(f, field) {
    if (!(f instanceof Uint8Array) || f.length !== 32) throw new IdemInputError(field, f, WANT.fingerprint);
    this.raw(f);
  }
  time(t, field) {
    if (t === null) { this.u8(0); return; }
    if (typeof t !== 'bigint' || t < TIME_MIN || t > TIME_MAX) throw new IdemInputError(field, t, WANT.time);
    let sec = t / NANOS;
    let nsec = t % NANOS;
    if (nsec < 0n) { nsec += NANOS; sec -= 1n; } // floor division
    this.ensure(13);
    this.buf[this.n] = 1;
    this.view.setBigInt64(this.n + 1, sec, true);
    this.view.setUint32(this.n + 9, Number(nsec), true);
    this.n += 13;
  }
  // response encodes r, whose headers, body and schema version may be left
  // out (nil, nil, 0); names are its fields' (RECORD_RESPONSE, EVENT_RESPONSE).
  response(r, names) {
    object(r, names.self);
    this.i64(r.statusCode, names.statusCode);
    this.u32(r.schemaVersion === undefined ? 0 : r.schemaVersion, names.schemaVersion);
    const hs = r.headers;
    if (hs === null || hs === undefined) this.u32(NIL);
    else {
      if (!Array.isArray(hs) || hs.length >= NIL) throw new IdemInputError(names.headers, hs, WANT.headers);
      this.u32(hs.length);
      for (let i = 0; i < hs.length; i++) {
        const h = hs[i];
        if (typeof h !== 'object' || h === null) throw new IdemInputError(`${names.headers}[${i}]`, h, WANT.header);
        if (typeof h.name !== 'string' || !this.utf8(h.name)) throw new IdemInputError(`${names.headers}[${i}].name`, h.name, WANT.str);
        if (typeof h.value !== 'string' || !this.utf8(h.value)) throw new IdemInputError(`${names.headers}[${i}].value`, h.value, WANT.str);
      }
    }
    const b = r.body;
    if (b === null || b === undefined) this.u32(NIL);
    else {
      if (!(b instanceof Uint8Array) || b.length >= NIL) throw new IdemInputError(names.body, b, WANT.bytes);
      this.u32(b.length); this.raw(b);
    }
  }
  policy(p) {
    object(p, 'policy');
    this.i64(p.leaseDuration, 'policy.leaseDuration'); this.i64(p.ttl, 'policy.ttl');
    this.i64(p.inFlightWait, 'policy.inFlightWait'); this.u8(p.inFlightAnswer, 'policy.inFlightAnswer');
    this.i64(p.retryAfter, 'policy.retryAfter'); this.u8(p.expiry, 'policy.expiry'); this.u8(p.fail, 'policy.fail');
    this.i64(p.reconcileBackoffBase, 'policy.reconcileBackoffBase'); this.i64(p.reconcileBackoffMax, 'policy.reconcileBackoffMax');
    this.u32(p.reconcileAttemptsMax, 'policy.reconcileAttemptsMax'); this.i64(p.tombstoneRetention, 'policy.tombstoneRetention');
    this.i64(p.keyBytesMax, 'policy.keyBytesMax'); this.i64(p.requestBytesMax, 'policy.requestBytesMax');
    this.i64(p.responseBytesMax, 'policy.responseBytesMax');
  }
  // scope writes a scope's four strings; names are their fields' (scopeFields).
  scope(r, names, tenant = r.tenant) {
    this.str(tenant, names.tenant); this.str(r.principal, names.principal);
    this.str(r.useCase, names.useCase); this.str(r.key, names.key);
  }
  record(r) {
    object(r, 'record');
    this.scope(r, RECORD_SCOPE);
    this.u8(r.status, 'record.status'); this.fingerprint(r.fingerprint, 'record.fingerprint');
    this.u64(r.token, 'record.token'); this.u64(r.version, 'record.version');
    this.response(r.response, RECORD_RESPONSE); this.str(r.lastErrorCode, 'record.lastErrorCode');
    this.time(r.lockedUntil, 'record.lockedUntil'); this.time(r.reconcileAfter, 'record.reconcileAfter');
    this.u32(r.reconcileAttempts, 'record.reconcileAttempts');
    this.time(r.createdAt, 'record.createdAt'); this.time(r.completedAt, 'record.completedAt'); this.time(r.expiresAt, 'record.expiresAt');
  }
  request(record, event, p) {
    object(record, 'record'); object(event, 'event'); object(p, 'policy');
    this.policy(p);
    this.record(record);
    // An event's fields other than kind and now may be left out: their zero
    // values, as in Go, which the core ignores where they do not count for
    // the kind and refuses where they do.
    const e = event;
    this.u8(e.kind, 'event.kind'); this.time(e.now, 'event.now');
    this.fingerprint(e.fingerprint === undefined ? ZERO_FINGERPRINT : e.fingerprint, 'event.fingerprint');
    this.u64(e.token === undefined ? 0 : e.token, 'event.token');
    this.response(e.response === undefined ? ZERO_RESPONSE : e.response, EVENT_RESPONSE);
    this.str(e.errorCode === undefined ? '' : e.errorCode, 'event.errorCode');
    this.u8(e.verdict === undefined ? 0 : e.verdict, 'event.verdict');
  }
}

// views are DataViews of whole buffers, made once per buffer: an answer is
// read where the module wrote it, and a DataView per answer cost more than
// its decoding.
const views = new WeakMap();
function viewOf(buffer) {
  let v = views.get(buffer);
  if (v === undefined) views.set(buffer, (v = new DataView(buffer)));
  return v;
}

// Reader decodes an answer (ABI.md, "Answer"), copying what it keeps.
class Reader {
  constructor(bytes) { this.b = bytes; this.view = viewOf(bytes.buffer); this.base = bytes.byteOffset; this.off = 0; }
  need(k) { if (this.off + k > this.b.length) throw new MalformedAnswerError('truncated'); }
  u8() { this.need(1); return this.b[this.off++]; }
  u32() { this.need(4); const v = this.view.getUint32(this.base + this.off, true); this.off += 4; return v; }
  u64() { this.need(8); const v = this.view.getBigUint64(this.base + this.off, true); this.off += 8; return v; }
  i64() { this.need(8); const v = this.view.getBigInt64(this.base + this.off, true); this.off += 8; return v; }
  raw(k) { this.need(k); const v = this.b.slice(this.off, this.off + k); this.off += k; return v; }
  // str decodes a string where it lies (TextDecoder copies what it keeps);
  // the empty string, what most answers carry, without a call.
  str() {
    const n = this.u32();
    if (n === 0) return '';
    this.need(n);
    const v = decoder.decode(this.b.subarray(this.off, this.off + n));
    this.off += n;
    return v;
  }
  time() {
    const tag = this.u8();
    if (tag === 0) return null;
    if (tag !== 1 && tag !== 2) throw new MalformedAnswerError(`time tag ${tag}`);
    const sec = this.i64();
    const nsec = this.u32();
    if (nsec >= 1e9) throw new MalformedAnswerError(`${nsec} nanoseconds`);
    return sec * NANOS + BigInt(nsec);
  }
  response() {
    const statusCode = Number(this.i64());
    const schemaVersion = this.u32();
    let headers = null;
    const n = this.u32();
    if (n !== NIL) {
      if (n > (this.b.length - this.off) / 8) throw new MalformedAnswerError('truncated'); // a header is at least 8 bytes
      headers = [];
      for (let i = 0; i < n; i++) headers.push({ name: this.str(), value: this.str() });
    }
    const bn = this.u32();
    const body = bn === NIL ? null : this.raw(bn);
    return { statusCode, headers, body, schemaVersion };
  }
  end() { if (this.off !== this.b.length) throw new MalformedAnswerError('trailing bytes'); }
}

const CHANGED = {
  scope: 1, status: 2, fingerprint: 4, token: 8, version: 16, response: 32, lastErrorCode: 64,
  lockedUntil: 128, reconcileAfter: 256, reconcileAttempts: 512, createdAt: 1024, completedAt: 2048, expiresAt: 4096,
};
const CHANGED_ALL = 8191;

// refusal reads a refused answer's sentinel index and message (after its
// status byte) as the IdemError to throw.
function refusal(r) {
  const code = r.u8();
  const message = r.str();
  r.end();
  return new IdemError(ERROR_CODES[code] ?? (code === 254 ? 'ErrMalformedRequest' : 'ErrUnidentified'), message);
}

function applyAnswer(bytes, record, event) {
  const r = new Reader(bytes);
  const status = r.u8();
  if (status === 1) throw refusal(r);
  if (status !== 0) throw new MalformedAnswerError(`status ${status}`);
  const transition = {
    decision: { kind: r.u8(), token: r.u64(), retryAfter: r.i64() },
    write: { kind: r.u8(), expectVersion: r.u64(), expectToken: r.u64() },
  };
  const mask = r.u32();
  if ((mask & ~CHANGED_ALL) !== 0) throw new MalformedAnswerError('unknown change bits');
  const next = { ...record };
  if (mask & CHANGED.scope) { next.tenant = r.str(); next.principal = r.str(); next.useCase = r.str(); next.key = r.str(); }
  if (mask & CHANGED.status) next.status = r.u8();
  if (mask & CHANGED.fingerprint) next.fingerprint = r.raw(32);
  if (mask & CHANGED.token) next.token = r.u64();
  if (mask & CHANGED.version) next.version = r.u64();
  if (mask & CHANGED.response) {
    const tag = r.u8();
    if (tag === 0) next.response = zeroResponse();
    else if (tag === 1) next.response = event.response ?? zeroResponse(); // shared, as the native Step shares it
    else if (tag === 2) next.response = r.response();
    else throw new MalformedAnswerError(`response tag ${tag}`);
  }
  if (mask & CHANGED.lastErrorCode) next.lastErrorCode = r.str();
  if (mask & CHANGED.lockedUntil) next.lockedUntil = r.time();
  if (mask & CHANGED.reconcileAfter) next.reconcileAfter = r.time();
  if (mask & CHANGED.reconcileAttempts) next.reconcileAttempts = r.u32();
  if (mask & CHANGED.createdAt) next.createdAt = r.time();
  if (mask & CHANGED.completedAt) next.completedAt = r.time();
  if (mask & CHANGED.expiresAt) next.expiresAt = r.time();
  r.end();
  return { transition, record: next };
}

// wasiClass loads node:wasi, which emits an ExperimentalWarning when it is
// first loaded (Node 20), without printing that warning: process.emitWarning
// is wrapped for the synchronous require alone, and drops only that one
// warning; every other warning, then or later, goes through.
let WASIClass = null;
function wasiClass() {
  if (WASIClass !== null) return WASIClass;
  const emit = process.emitWarning;
  process.emitWarning = function emitWarningButWASI(warning, ...rest) {
    const type = typeof rest[0] === 'string' ? rest[0] : rest[0]?.type;
    const message = typeof warning === 'string' ? warning : warning?.message;
    if (type === 'ExperimentalWarning' && typeof message === 'string' && message.startsWith('WASI is an experimental feature')) return;
    return Reflect.apply(emit, this, [warning, ...rest]);
  };
  try {
    WASIClass = createRequire(import.meta.url)('node:wasi').WASI;
  } finally {
    process.emitWarning = emit;
  }
  return WASIClass;
}

// The exports of the ABI, by kind (ABI.md, "Imports and exports").
const EXPORTS = { idem_abi_version: 'function', idem_input: 'function', idem_step: 'function', idem_flow: 'function', memory: 'memory' };

/**
 * Compiles the module and returns a core whose step() is the Go core.Step.
 * @param {{wasm?: BufferSource | URL | string}} [options] the module's bytes or path; ../idem.wasm by default
 * @returns {Promise<import('./idem.d.ts').Core>}
 */
export async function load(options = {}) {
  let bytes = options.wasm ?? new URL('../idem.wasm', import.meta.url);
  if (bytes instanceof URL || typeof bytes === 'string') bytes = await readFile(bytes);
  const module = await WebAssembly.compile(bytes);
  const exported = new Map(WebAssembly.Module.exports(module).map((e) => [e.name, e.kind]));
  if (exported.get('idem_abi_version') !== 'function') {
    throw new AbiVersionError(`idem/wasm: module ABI version mismatch: the module exports no idem_abi_version; this host speaks ABI v${ABI_VERSION}`);
  }
  const missing = Object.keys(EXPORTS).filter((name) => exported.get(name) !== EXPORTS[name]);
  const usesWASI = WebAssembly.Module.imports(module).some((i) => i.module === 'wasi_snapshot_preview1');
  const writer = new Writer();

  async function instantiate() {
    const imports = {};
    let wasi = null;
    if (usesWASI) {
      const WASI = wasiClass();
      wasi = new WASI({ version: 'preview1', args: [], env: {}, returnOnExit: true });
      imports.wasi_snapshot_preview1 = wasi.wasiImport;
    }
    const instance = await WebAssembly.instantiate(module, imports);
    const ex = instance.exports;
    // A reactor: initialize() runs _initialize, which starts the Go runtime
    // (and needs the memory: a module without it is not initialised, and
    // only asked its version, for the error).
    if (missing.length === 0) {
      if (wasi) wasi.initialize(instance);
      else if (typeof ex._initialize === 'function') ex._initialize();
    }
    let version = '?';
    try {
      version = ex.idem_abi_version();
    } catch (err) {
      if (missing.length === 0) throw err;
    }
    const lacks = missing.length === 0 ? '' : `the export ${missing.join(', ')}`;
    if (version !== ABI_VERSION) {
      throw new AbiVersionError(`idem/wasm: module ABI version mismatch: the module speaks ABI v${version}${lacks && ` and lacks ${lacks}`}, this host speaks v${ABI_VERSION}; rebuild the module or upgrade the host`);
    }
    if (lacks) throw new AbiVersionError(`idem/wasm: module ABI version mismatch: the module claims ABI v${ABI_VERSION} but lacks ${lacks}`);
    return { exports: ex, inputAddr: 0, inputBytes: 0 };
  }

  let inst = await instantiate();
  let generation = 0; // counts the instances made: a flow lives on one
  let calls = 0; // counts the calls: an answer is valid until the next
  const unpack = new DataView(new ArrayBuffer(8));
  // The guest's memory as bytes, made again only when the memory grew (its
  // buffer is then another).
  let memory = null;
  let memoryU8 = null;
  const memoryBytes = (buffer) => {
    if (buffer !== memory) { memory = buffer; memoryU8 = new Uint8Array(buffer); }
    return memoryU8;
  };
  // call writes w's first w.n bytes into the guest's input buffer, calls the
  // export name with their size and returns the answer, a view of the
  // guest's memory valid until the next call.
  function call(name, w) {
    if (inst === null) {
      if (pending === null) replace(); // the last replacement failed: try again
      throw new TrapError('idem/wasm: the module trapped and its replacement is not ready yet; retry after ready()',
        replaceError === null ? undefined : { cause: replaceError });
    }
    const n = w.n;
    const ex = inst.exports;
    let packed;
    try {
      if (n > inst.inputBytes) { inst.inputAddr = ex.idem_input(n) >>> 0; inst.inputBytes = n; }
      memoryBytes(ex.memory.buffer).set(w.buf.subarray(0, n), inst.inputAddr);
      calls++;
      packed = ex[name](n);
    } catch (err) {
      // The instance's state is unknown after a trap: never reuse it.
      inst = null;
      replace();
      // proc_exit throws a symbol (returnOnExit), a trap a RuntimeError.
      const why = typeof err === 'symbol' ? 'it exited (proc_exit)' : String(err?.message ?? err);
      throw new TrapError(`idem/wasm: the module trapped: ${why}`, { cause: err });
    }
    // (address << 32) | length, split without BigInt arithmetic (which
    // allocates): written as 8 bytes, read as two u32.
    unpack.setBigInt64(0, packed, true);
    const addr = unpack.getUint32(4, true);
    const len = unpack.getUint32(0, true);
    // memory.buffer is read after the call: the guest may have grown it.
    const mem = memoryBytes(ex.memory.buffer);
    if (addr + len > mem.length) throw new MalformedAnswerError(`answer at ${addr}+${len} is outside the module's memory`);
    return mem.subarray(addr, addr + len);
  }
  // After a trap: the replacement being made, or the error that stopped the last one.
  let pending = null;
  let replaceError = null;
  function replace() {
    pending = instantiate().then(
      (i) => { inst = i; generation++; pending = null; replaceError = null; },
      (err) => { pending = null; replaceError = err; },
    );
  }

  return {
    abiVersion: ABI_VERSION,
    /**
     * core.Step: returns the transition and the record after the event, or
     * throws IdemError for an event the core refuses (IdemInputError for a
     * value the host refuses). The record passed in is not modified.
     */
    step(record, event, policy) {
      writer.reset();
      writer.request(record, event, policy);
      return applyAnswer(call('idem_step', writer), record, event);
    },
    /**
     * Internal to this package (flow.mjs): runs the flow call w holds
     * through idem_flow and returns the answer, a view of the module's
     * memory valid while `call` is the core's `_calls` (decode it at once),
     * with the instance's generation (a trap replaces the instance, and
     * with it every flow it held).
     */
    _flow(w) {
      const answer = call('idem_flow', w);
      return { answer, generation, call: calls };
    },
    /** Internal to this package: the calls made so far (see _flow). */
    get _calls() { return calls; },
    /**
     * Resolves when the instance is usable: at once, or after a trap once
     * it is replaced; rejects with a TrapError if it could not be.
     */
    async ready() {
      if (inst === null && pending === null) replace();
      if (pending !== null) await pending;
      if (inst === null) throw new TrapError('idem/wasm: the module trapped and could not be instantiated again', { cause: replaceError });
    },
  };
}

/**
 * Internal to this package: the ABI's codec, for flow.mjs (not part of the
 * API: its shape follows ABI.md, and changes with it).
 */
export const _abi = Object.freeze({ Writer, Reader, object, zeroResponse, responseFields, scopeFields, refusal, NANOS, WANT, wasiClass });
