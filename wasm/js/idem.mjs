// The idem core (../idem.wasm, built by `make wasm`) for Node.js, over
// node:wasi. It speaks the ABI of ../ABI.md; the Go host (package wasmcore)
// is the other implementation of that ABI, and idem.test.mjs holds this one
// to the Go core's answers (testdata/steps.json).
//
// Types are in idem.d.ts. 64-bit values (tokens, versions, durations and
// times) are bigints: durations in nanoseconds, times in Unix nanoseconds,
// the zero time (no time) as null.

import { readFile } from 'node:fs/promises';
import { WASI } from 'node:wasi';

/** The ABI version this host speaks (ABI.md). */
export const ABI_VERSION = 3;

/** Names of the core's error sentinels, by ABI error code (ABI.md). */
export const ERROR_CODES = [
  'ErrInvalidScope', 'ErrInvalidKey', 'ErrFingerprintLength', 'ErrFingerprintMissing',
  'ErrTimeMissing', 'ErrTokenMissing', 'ErrTokenNotFresh', 'ErrResponseInvalid',
  'ErrResponseTooLarge', 'ErrUnknownEvent', 'ErrUnknownVerdict', 'ErrInvalidRecord',
  'ErrInvalidPolicy', 'ErrInvalidErrorCode',
];

/** An event the core refused: `code` names the Go sentinel, `message` is the Go error's text. */
export class IdemError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'IdemError';
    this.code = code;
  }
}

/** The module speaks another ABI version, or none. */
export class AbiVersionError extends Error {
  constructor(message) { super(message); this.name = 'AbiVersionError'; }
}

/** The module trapped; the instance was discarded and the next step uses a fresh one. */
export class TrapError extends Error {
  constructor(message, options) { super(message, options); this.name = 'TrapError'; }
}

const NANOS = 1_000_000_000n;
const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false });

/** The defaults of the Go core's DefaultPolicy. */
export function defaultPolicy() {
  return {
    leaseDuration: 5n * 60n * NANOS,
    ttl: 24n * 3600n * NANOS,
    inFlightWait: 200_000_000n,
    inFlightAnswer: 0,
    retryAfter: NANOS,
    expiry: 0,
    fail: 0,
    reconcileBackoffBase: NANOS,
    reconcileBackoffCap: 5n * 60n * NANOS,
    reconcileAttemptsMax: 20,
    tombstoneRetention: 24n * 3600n * NANOS,
    keyBytesMax: 255,
    requestBytesMax: 1 << 20,
    responseBytesMax: 1 << 20,
  };
}

/** The absent record of a scope: what a driver steps when its store has none. */
export function absentRecord(scope) {
  return {
    tenant: scope.tenant ?? '', principal: scope.principal, useCase: scope.useCase, key: scope.key,
    status: 0, fingerprint: new Uint8Array(32), token: 0n, version: 0n,
    response: { statusCode: 0, headers: null, body: null, schemaVersion: 0 },
    lastErrorCode: '', lockedUntil: null, reconcileAfter: null, reconcileAttempts: 0,
    createdAt: null, completedAt: null, expiresAt: null,
  };
}

// Writer encodes a request (ABI.md, "Request"), reusing its buffer.
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
  u8(v) { this.ensure(1); this.buf[this.n++] = v; }
  u32(v) { this.ensure(4); this.view.setUint32(this.n, v, true); this.n += 4; }
  u64(v) { this.ensure(8); this.view.setBigUint64(this.n, BigInt.asUintN(64, BigInt(v)), true); this.n += 8; }
  raw(b) { this.ensure(b.length); this.buf.set(b, this.n); this.n += b.length; }
  str(s) { const b = encoder.encode(s ?? ''); this.u32(b.length); this.raw(b); }
  fingerprint(f) {
    if (!(f instanceof Uint8Array) || f.length !== 32) throw new TypeError('a fingerprint is a Uint8Array of 32 bytes');
    this.raw(f);
  }
  time(t) {
    if (t === null || t === undefined) { this.u8(0); return; }
    let sec = t / NANOS;
    let nsec = t % NANOS;
    if (nsec < 0n) { nsec += NANOS; sec -= 1n; } // floor division
    this.u8(1); this.u64(sec); this.u32(Number(nsec));
  }
  response(r) {
    this.u64(r.statusCode); this.u32(r.schemaVersion ?? 0);
    if (r.headers === null || r.headers === undefined) this.u32(0xffffffff);
    else {
      this.u32(r.headers.length);
      for (const h of r.headers) { this.str(h.name); this.str(h.value); }
    }
    if (r.body === null || r.body === undefined) this.u32(0xffffffff);
    else { this.u32(r.body.length); this.raw(r.body); }
  }
  request(record, event, p) {
    this.u64(p.leaseDuration); this.u64(p.ttl); this.u64(p.inFlightWait); this.u8(p.inFlightAnswer);
    this.u64(p.retryAfter); this.u8(p.expiry); this.u8(p.fail);
    this.u64(p.reconcileBackoffBase); this.u64(p.reconcileBackoffCap); this.u32(p.reconcileAttemptsMax); this.u64(p.tombstoneRetention);
    this.u64(p.keyBytesMax); this.u64(p.requestBytesMax); this.u64(p.responseBytesMax);
    const r = record;
    this.str(r.tenant); this.str(r.principal); this.str(r.useCase); this.str(r.key);
    this.u8(r.status); this.fingerprint(r.fingerprint); this.u64(r.token); this.u64(r.version);
    this.response(r.response); this.str(r.lastErrorCode);
    this.time(r.lockedUntil); this.time(r.reconcileAfter); this.u32(r.reconcileAttempts);
    this.time(r.createdAt); this.time(r.completedAt); this.time(r.expiresAt);
    const e = event;
    this.u8(e.kind); this.time(e.now); this.fingerprint(e.fingerprint); this.u64(e.token);
    this.response(e.response); this.str(e.errorCode); this.u8(e.verdict);
  }
}

// Reader decodes an answer (ABI.md, "Answer"), copying what it keeps.
class Reader {
  constructor(bytes) { this.b = bytes; this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength); this.off = 0; }
  need(k) { if (this.off + k > this.b.length) throw new Error('idem/wasm: malformed answer from the guest: truncated'); }
  u8() { this.need(1); return this.b[this.off++]; }
  u32() { this.need(4); const v = this.view.getUint32(this.off, true); this.off += 4; return v; }
  u64() { this.need(8); const v = this.view.getBigUint64(this.off, true); this.off += 8; return v; }
  i64() { return BigInt.asIntN(64, this.u64()); }
  raw(k) { this.need(k); const v = this.b.slice(this.off, this.off + k); this.off += k; return v; }
  str() { return decoder.decode(this.raw(this.u32())); }
  time() {
    const tag = this.u8();
    if (tag === 0) return null;
    if (tag !== 1 && tag !== 2) throw new Error(`idem/wasm: malformed answer from the guest: time tag ${tag}`);
    const sec = this.i64();
    return sec * NANOS + BigInt(this.u32());
  }
  response() {
    const statusCode = Number(this.i64());
    const schemaVersion = this.u32();
    let headers = null;
    const n = this.u32();
    if (n !== 0xffffffff) {
      headers = [];
      for (let i = 0; i < n; i++) headers.push({ name: this.str(), value: this.str() });
    }
    const bn = this.u32();
    const body = bn === 0xffffffff ? null : this.raw(bn);
    return { statusCode, headers, body, schemaVersion };
  }
}

const CHANGED = {
  scope: 1, status: 2, fingerprint: 4, token: 8, version: 16, response: 32, lastErrorCode: 64,
  lockedUntil: 128, reconcileAfter: 256, reconcileAttempts: 512, createdAt: 1024, completedAt: 2048, expiresAt: 4096,
};

function applyAnswer(bytes, record, event) {
  const r = new Reader(bytes);
  const status = r.u8();
  if (status === 1) {
    const code = r.u8();
    const message = r.str();
    const name = ERROR_CODES[code] ?? (code === 254 ? 'ErrMalformedRequest' : 'ErrUnidentified');
    throw new IdemError(name, message);
  }
  if (status !== 0) throw new Error(`idem/wasm: malformed answer from the guest: status ${status}`);
  const result = {
    decision: { kind: r.u8(), token: r.u64(), retryAfter: r.i64() },
    write: { kind: r.u8(), expectVersion: r.u64(), expectToken: r.u64() },
  };
  const mask = r.u32();
  const next = { ...record };
  if (mask & CHANGED.scope) { next.tenant = r.str(); next.principal = r.str(); next.useCase = r.str(); next.key = r.str(); }
  if (mask & CHANGED.status) next.status = r.u8();
  if (mask & CHANGED.fingerprint) next.fingerprint = r.raw(32);
  if (mask & CHANGED.token) next.token = r.u64();
  if (mask & CHANGED.version) next.version = r.u64();
  if (mask & CHANGED.response) {
    const tag = r.u8();
    if (tag === 0) next.response = { statusCode: 0, headers: null, body: null, schemaVersion: 0 };
    else if (tag === 1) next.response = event.response;
    else if (tag === 2) next.response = r.response();
    else throw new Error(`idem/wasm: malformed answer from the guest: response tag ${tag}`);
  }
  if (mask & CHANGED.lastErrorCode) next.lastErrorCode = r.str();
  if (mask & CHANGED.lockedUntil) next.lockedUntil = r.time();
  if (mask & CHANGED.reconcileAfter) next.reconcileAfter = r.time();
  if (mask & CHANGED.reconcileAttempts) next.reconcileAttempts = r.u32();
  if (mask & CHANGED.createdAt) next.createdAt = r.time();
  if (mask & CHANGED.completedAt) next.completedAt = r.time();
  if (mask & CHANGED.expiresAt) next.expiresAt = r.time();
  if (r.off !== bytes.length) throw new Error('idem/wasm: malformed answer from the guest: trailing bytes');
  return { result, record: next };
}

/**
 * Compiles the module and returns a core whose step() is the Go core.Step.
 * @param {{wasm?: BufferSource | URL | string}} [options] the module's bytes or path; ../idem.wasm by default
 * @returns {Promise<import('./idem.d.ts').Core>}
 */
export async function load(options = {}) {
  let bytes = options.wasm ?? new URL('../idem.wasm', import.meta.url);
  if (bytes instanceof URL || typeof bytes === 'string') bytes = await readFile(bytes);
  const module = await WebAssembly.compile(bytes);
  const exportNames = WebAssembly.Module.exports(module).map((e) => e.name);
  if (!exportNames.includes('idem_abi_version')) {
    throw new AbiVersionError(`idem/wasm: module ABI version mismatch: the module exports no idem_abi_version; this host speaks ABI v${ABI_VERSION}`);
  }
  let inst = null;
  const writer = new Writer();

  async function instantiate() {
    const imports = {};
    let wasi = null;
    if (WebAssembly.Module.imports(module).some((i) => i.module === 'wasi_snapshot_preview1')) {
      wasi = new WASI({ version: 'preview1', args: [], env: {}, returnOnExit: true });
      imports.wasi_snapshot_preview1 = wasi.wasiImport;
    }
    const instance = await WebAssembly.instantiate(module, imports);
    // A reactor: initialize() runs _initialize, which starts the Go runtime.
    if (wasi && instance.exports._initialize) wasi.initialize(instance);
    const version = instance.exports.idem_abi_version();
    if (version !== ABI_VERSION) {
      throw new AbiVersionError(`idem/wasm: module ABI version mismatch: the module speaks ABI v${version}, this host speaks v${ABI_VERSION}; rebuild the module or upgrade the host`);
    }
    return { exports: instance.exports, inputAddr: 0, inputCap: 0 };
  }

  inst = await instantiate();
  let pending = null; // a fresh instance being made after a trap

  return {
    abiVersion: ABI_VERSION,
    /**
     * core.Step: returns the result and the record after the event, or
     * throws IdemError for an event the core refuses. The record passed in
     * is not modified.
     */
    step(record, event, policy) {
      if (inst === null) throw new TrapError('idem/wasm: the module trapped and its replacement is not ready yet; retry after ready()');
      writer.reset();
      writer.request(record, event, policy);
      const n = writer.n;
      const ex = inst.exports;
      let packed;
      try {
        if (n > inst.inputCap) { inst.inputAddr = ex.idem_input(n) >>> 0; inst.inputCap = n; }
        new Uint8Array(ex.memory.buffer, inst.inputAddr, n).set(writer.buf.subarray(0, n));
        packed = ex.idem_step(n);
      } catch (err) {
        // The instance's state is unknown after a trap: never reuse it.
        inst = null;
        pending = instantiate().then((i) => { inst = i; pending = null; });
        throw new TrapError(`idem/wasm: the module trapped: ${err.message}`, { cause: err });
      }
      const addr = Number(BigInt.asUintN(64, packed) >> 32n);
      const len = Number(BigInt.asUintN(32, packed));
      // memory.buffer is read after the call: the guest may have grown it.
      return applyAnswer(new Uint8Array(ex.memory.buffer, addr, len), record, event);
    },
    /** Resolves when the instance is usable (after a trap, once it is replaced). */
    async ready() { if (pending) await pending; },
  };
}
