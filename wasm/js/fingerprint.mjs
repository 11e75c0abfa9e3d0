// idem's request fingerprint (Go's package fingerprint: RFC 8785 JCS over a
// strict I-JSON parser, SHA-256 over a domain-separated pre-image) for
// Node.js, byte for byte Go's: the Go package itself, compiled to its own
// WebAssembly module (../fingerprint.wasm, built by `make wasm`), run over
// node:wasi. It speaks the layout of ../ABI.md, "The fingerprint module";
// the tests hold it to Go's answers (testdata/fingerprints.json) and to the
// RFC 8785 vectors of ../../../shared/jcs.
//
// Types are in fingerprint.d.ts. The module is instantiated once, by
// loadFingerprint; after that every call is synchronous.

import { readFile } from 'node:fs/promises';
import { _abi } from './idem.mjs';

const { wasiClass } = _abi; // node:wasi, without its ExperimentalWarning

/** The layout version this host speaks (ABI.md, "The fingerprint module"). */
export const FINGERPRINT_ABI_VERSION = 1;

/**
 * The names of Go's error kinds (fingerprint.ErrSyntax, ...), by the
 * module's kind index: a FingerprintError's kind is one of these.
 */
export const FINGERPRINT_KINDS = Object.freeze([
  'ErrSyntax', 'ErrInvalidUTF8', 'ErrSurrogate', 'ErrDuplicateName',
  'ErrNumber', 'ErrNumberOverflow', 'ErrPrecision', 'ErrTooDeep',
  'ErrTooLarge', 'ErrTrailingData', 'ErrBOM', 'ErrPointer',
]);

/**
 * Go's *fingerprint.Error: `kind` is the name of its Kind
 * ('ErrDuplicateName', one of FINGERPRINT_KINDS), `offset` the byte offset
 * in the body where the problem was found (-1 when the error is not about a
 * position: a pointer given to newSpec, an absent required pointer), and
 * `message` Go's Error() text, byte for byte.
 */
export class FingerprintError extends Error {
  constructor(kind, offset, message) {
    super(message);
    this.name = 'FingerprintError';
    this.kind = kind;
    this.offset = offset;
  }
}

/**
 * The module misbehaved, not the input: it speaks another layout version
 * or lacks an export, it trapped (the instance is then replaced on the next
 * call, and specs are compiled again in it), or it answered bytes this
 * host cannot decode or a call it could not read (a host bug).
 */
export class FingerprintModuleError extends Error {
  constructor(message, options) { super(message, options); this.name = 'FingerprintModuleError'; }
}

// The exports of the layout, by kind.
const EXPORTS = {
  idem_fp_abi_version: 'function', idem_fp_input: 'function', idem_fp_spec: 'function', idem_fp_of: 'function',
  idem_fp_canonical: 'function', idem_fp_release: 'function', memory: 'memory',
};
const OPTIONS = new Set(['include', 'exclude', 'requireIncluded', 'allowImpreciseNumbers', 'bytesMax', 'depthMax']);
const NO_INCLUDE = 0xffffffff; // the include count of a spec without Include
const KIND_UNIDENTIFIED = 255;
const INPUT_MAX = 0xffffffff; // an i32 size
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Compiles and instantiates the module; resolves to an object whose
 * newSpec and canonicalize are Go's fingerprint.NewSpec and Canonicalize.
 * @param {{wasm?: BufferSource | URL | string}} [options] the module's bytes or path; ../fingerprint.wasm by default
 */
export async function loadFingerprint(options = {}) {
  let bytes = options?.wasm ?? new URL('../fingerprint.wasm', import.meta.url);
  if (bytes instanceof URL || typeof bytes === 'string') bytes = await readFile(bytes);
  const module = await WebAssembly.compile(bytes);
  const exported = new Map(WebAssembly.Module.exports(module).map((e) => [e.name, e.kind]));
  const missing = Object.keys(EXPORTS).filter((name) => exported.get(name) !== EXPORTS[name]);
  if (missing.length > 0) {
    throw new FingerprintModuleError(`idem/fingerprint.wasm: the module lacks the export ${missing.join(', ')}; this host speaks layout v${FINGERPRINT_ABI_VERSION}`);
  }
  const usesWASI = WebAssembly.Module.imports(module).some((i) => i.module === 'wasi_snapshot_preview1');

  let generation = 0; // counts the instances: a spec's handle is one instance's
  function instantiate() {
    const imports = {};
    let wasi = null;
    if (usesWASI) {
      wasi = new (wasiClass())({ version: 'preview1', args: [], env: {}, returnOnExit: true });
      imports.wasi_snapshot_preview1 = wasi.wasiImport;
    }
    const instance = new WebAssembly.Instance(module, imports);
    const ex = instance.exports;
    if (wasi) wasi.initialize(instance);
    else if (typeof ex._initialize === 'function') ex._initialize();
    const version = ex.idem_fp_abi_version();
    if (version !== FINGERPRINT_ABI_VERSION) {
      throw new FingerprintModuleError(`idem/fingerprint.wasm: the module speaks layout v${version}, this host speaks v${FINGERPRINT_ABI_VERSION}; rebuild the module or upgrade the host`);
    }
    generation++;
    return { ex, generation, inputAddr: 0, inputBytes: 0 };
  }
  // inst is null after a trap, until the next call makes a new one.
  let inst = instantiate();

  // call writes the call's bytes into the input buffer (a Uint8Array, or a
  // string encoded as UTF-8 into capacity bytes, enough for it), then calls
  // the export name with arg (unless null) and their size. It returns the
  // answer's payload (a view of the module's memory, valid until the next
  // call), or throws the answer's error.
  function call(name, arg, bytes, capacity) {
    if (inst === null) inst = instantiate();
    const { ex } = inst;
    let packed;
    try {
      if (capacity > inst.inputBytes) { inst.inputAddr = ex.idem_fp_input(capacity) >>> 0; inst.inputBytes = capacity; }
      const view = new Uint8Array(ex.memory.buffer, inst.inputAddr, inst.inputBytes);
      let size = bytes.length;
      if (typeof bytes === 'string') size = encoder.encodeInto(bytes, view).written;
      else view.set(bytes);
      packed = arg === null ? ex[name](size) : ex[name](arg, size);
    } catch (err) {
      // The instance's state is unknown after a trap: never reuse it.
      inst = null;
      const why = typeof err === 'symbol' ? 'it exited (proc_exit)' : String(err?.message ?? err);
      throw new FingerprintModuleError(`idem/fingerprint.wasm: the module trapped: ${why}`, { cause: err });
    }
    const addr = Number(BigInt.asUintN(64, packed) >> 32n);
    const len = Number(BigInt.asUintN(32, packed));
    const memory = ex.memory.buffer; // read after the call: the module may have grown it
    if (len === 0 || addr + len > memory.byteLength) throw malformedAnswer(`an answer at ${addr}+${len}`);
    return payload(new Uint8Array(memory, addr, len));
  }

  // The body's bytes for call: a Uint8Array as it is, a string as UTF-8.
  function withBody(name, arg, body) {
    let capacity;
    if (body instanceof Uint8Array) capacity = body.length;
    else if (typeof body !== 'string') throw new TypeError(`idem/fingerprint: the body must be a Uint8Array or a string, not ${show(body)}`);
    else if (!body.isWellFormed()) throw new TypeError('idem/fingerprint: the body string has a lone surrogate, which has no UTF-8 form');
    // At most 3 UTF-8 bytes per UTF-16 unit; a long string is measured instead.
    else capacity = body.length <= 1 << 16 ? body.length * 3 : Buffer.byteLength(body, 'utf8');
    if (capacity > INPUT_MAX) throw new RangeError(`idem/fingerprint: a body of ${capacity} bytes does not fit the module's 32-bit memory`);
    return call(name, arg, body, capacity);
  }

  // Specs the program dropped without release(): their handles are
  // released in the instance that gave them.
  const finalizer = new FinalizationRegistry((held) => release(held));
  function release(held) {
    const h = held.handle;
    held.handle = 0;
    if (h === 0 || inst === null || inst.generation !== held.generation) return;
    try {
      inst.ex.idem_fp_release(h);
    } catch {
      inst = null; // a trap (which this call cannot cause): the next call makes a new instance
    }
  }

  class Spec {
    #request;
    #held = { handle: 0, generation: 0 };
    #released = false;

    constructor(request) {
      this.#request = request;
      this.#compile();
      finalizer.register(this, this.#held, this);
    }

    #compile() {
      const p = call('idem_fp_spec', null, this.#request, this.#request.length);
      if (p.length !== 4) throw malformedAnswer('a handle answer of the wrong length');
      this.#held.handle = new DataView(p.buffer, p.byteOffset, 4).getUint32(0, true);
      this.#held.generation = inst.generation;
    }

    /**
     * Spec.Of: the 32-byte fingerprint of the JSON body (a Uint8Array, or a
     * string, taken as its UTF-8); throws FingerprintError as Go errs.
     */
    of(body) {
      if (this.#released) throw new TypeError('idem/fingerprint: spec.of after spec.release()');
      if (inst === null || inst.generation !== this.#held.generation) {
        if (inst === null) inst = instantiate();
        this.#compile(); // the instance that held the spec trapped
      }
      const p = withBody('idem_fp_of', this.#held.handle, body);
      if (p.length !== 32) throw malformedAnswer('a digest answer of the wrong length');
      return p.slice();
    }

    /** Frees the spec in the module; of() throws after it. Specs left to the garbage collector are freed too. */
    release() {
      if (this.#released) return;
      this.#released = true;
      finalizer.unregister(this);
      release(this.#held);
    }
  }

  return {
    abiVersion: FINGERPRINT_ABI_VERSION,
    /**
     * fingerprint.NewSpec: compiles a use case, a schema version and a field
     * selection once, for spec.of on every request. Throws FingerprintError
     * (kind 'ErrPointer') for a malformed or contradictory pointer, and
     * TypeError or RangeError for arguments Go's types could not hold.
     */
    newSpec(useCase, schemaVersion, opts = {}) {
      return new Spec(specRequest(useCase, schemaVersion, opts));
    },
    /** fingerprint.Canonicalize, with the default limits: the RFC 8785 form of body. */
    canonicalize(body) {
      const p = withBody('idem_fp_canonical', null, body);
      const n = p.length >= 4 ? new DataView(p.buffer, p.byteOffset, 4).getUint32(0, true) : -1;
      if (n !== p.length - 4) throw malformedAnswer('a canonical answer of the wrong length');
      return p.slice(4);
    },
  };
}

// specRequest checks newSpec's arguments and encodes them (ABI.md):
// str use_case, u32 schema_version, u8 flags, i64 bytes_max, i64 depth_max,
// u32 include count (NO_INCLUDE: no Include) and the pointers, u32 exclude
// count and the pointers.
function specRequest(useCase, schemaVersion, opts) {
  const useCaseBytes = utf8(useCase, 'the use case');
  if (typeof schemaVersion !== 'number') throw new TypeError(`idem/fingerprint: the schema version must be a number, not ${show(schemaVersion)}`);
  if (!Number.isInteger(schemaVersion) || schemaVersion < 0 || schemaVersion > 0xffffffff) {
    throw new RangeError(`idem/fingerprint: the schema version ${schemaVersion} is not an integer 0..4294967295 (u32)`);
  }
  if (opts === null || opts === undefined) opts = {};
  if (typeof opts !== 'object' || Array.isArray(opts)) throw new TypeError(`idem/fingerprint: the options must be an object, not ${show(opts)}`);
  for (const k of Object.keys(opts)) {
    if (!OPTIONS.has(k)) throw new TypeError(`idem/fingerprint: unknown option ${JSON.stringify(k)}; the options are ${[...OPTIONS].join(', ')}`);
  }
  const include = opts.include === undefined ? null : pointers(opts.include, 'include');
  const exclude = opts.exclude === undefined ? [] : pointers(opts.exclude, 'exclude');
  const flags = flag(opts.requireIncluded, 'requireIncluded', 1) | flag(opts.allowImpreciseNumbers, 'allowImpreciseNumbers', 2);
  const bytesMax = limit(opts.bytesMax, 'bytesMax');
  const depthMax = limit(opts.depthMax, 'depthMax');

  const strs = [useCaseBytes, ...(include ?? []), ...exclude];
  // The version, the flags, the limits, the two counts, and the strings.
  const b = new Uint8Array(4 + 1 + 16 + 4 + 4 + strs.reduce((n, s) => n + 4 + s.length, 0));
  const v = new DataView(b.buffer);
  let at = 0;
  const u32 = (x) => { v.setUint32(at, x, true); at += 4; };
  const str = (s) => { u32(s.length); b.set(s, at); at += s.length; };
  str(useCaseBytes);
  u32(schemaVersion);
  b[at++] = flags;
  v.setBigInt64(at, BigInt(bytesMax), true);
  v.setBigInt64(at + 8, BigInt(depthMax), true);
  at += 16;
  if (include === null) u32(NO_INCLUDE);
  else { u32(include.length); include.forEach(str); }
  u32(exclude.length);
  exclude.forEach(str);
  return b;
}

function utf8(s, what) {
  if (typeof s !== 'string') throw new TypeError(`idem/fingerprint: ${what} must be a string, not ${show(s)}`);
  if (!s.isWellFormed()) throw new TypeError(`idem/fingerprint: ${what} has a lone surrogate, which has no UTF-8 form`);
  return encoder.encode(s);
}

function pointers(list, name) {
  if (!Array.isArray(list)) throw new TypeError(`idem/fingerprint: options.${name} must be an array of JSON Pointer strings, not ${show(list)}`);
  return list.map((p, i) => utf8(p, `options.${name}[${i}]`));
}

function flag(v, name, bit) {
  if (v === undefined || v === false) return 0;
  if (v === true) return bit;
  throw new TypeError(`idem/fingerprint: options.${name} must be a boolean, not ${show(v)}`);
}

function limit(v, name) {
  if (v === undefined) return 0;
  if (typeof v !== 'number') throw new TypeError(`idem/fingerprint: options.${name} must be a number, not ${show(v)}`);
  if (!Number.isSafeInteger(v)) throw new RangeError(`idem/fingerprint: options.${name} ${v} is not a safe integer`);
  return v;
}

// payload reads an answer's status: the payload of an OK answer, or the
// error of an error answer or of a malformed-request answer, thrown.
function payload(a) {
  const v = new DataView(a.buffer, a.byteOffset, a.length);
  let at = 1;
  const str = () => {
    if (at + 4 > a.length) throw malformedAnswer('an answer cut short');
    const n = v.getUint32(at, true);
    if (at + 4 + n > a.length) throw malformedAnswer('a string past the answer');
    at += 4 + n;
    return decoder.decode(a.subarray(at - n, at));
  };
  const end = () => { if (at !== a.length) throw malformedAnswer('bytes after the answer'); };
  switch (a[0]) {
    case 0:
      return a.subarray(1);
    case 1: {
      if (a.length < 10) throw malformedAnswer('an error answer cut short');
      const kind = a[1];
      const offset = Number(v.getBigInt64(2, true));
      at = 10;
      const name = str();
      const message = str();
      str(); // the Error's Msg: a Go host rebuilds its *Error with it
      end();
      if (kind === KIND_UNIDENTIFIED && name === '') throw new FingerprintError('ErrUnidentified', offset, message);
      if (FINGERPRINT_KINDS[kind] !== name) throw malformedAnswer(`error kind ${kind} named ${JSON.stringify(name)}`);
      throw new FingerprintError(name, offset, message);
    }
    case 2: {
      const message = str();
      end();
      throw new FingerprintModuleError(`idem/fingerprint.wasm: malformed request: ${message}`);
    }
  }
  throw malformedAnswer(`status ${a[0]}`);
}

function malformedAnswer(what) {
  return new FingerprintModuleError(`idem/fingerprint.wasm: malformed answer: ${what}`);
}

function show(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return `${typeof v} ${String(v)}`;
  if (typeof v === 'object') return `a ${v.constructor?.name ?? 'object'}`;
  return `a ${typeof v}`;
}
