// node --test: the host refuses a value outside its field's range, of the
// wrong type, or missing, with an IdemInputError naming the field, before
// anything reaches the guest; a value at the edge of its range passes (the
// core may still refuse it, with an IdemError). The exactness of values at
// the edges on their way through is the fixture's (extreme cases of
// testdata/steps.json).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as idem from './idem.mjs';

const core = await idem.load();
const { IdemError, IdemInputError } = idem;

const NS = 1_000_000_000n;
const U64_MAX = 2n ** 64n - 1n;
const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;
const TIME_MIN = I64_MIN * NS; // Unix nanoseconds whose seconds are the least i64
const TIME_MAX = I64_MAX * NS + NS - 1n;
const MISSING = Symbol('missing');

function base() {
  const record = idem.absentRecord({ tenant: 'acme', principal: 'user-1', useCase: 'payments.create', key: '550e8400-e29b-41d4-a716-446655440000' });
  record.response = { statusCode: 200, headers: [{ name: 'X-A', value: 'b' }], body: new Uint8Array(0), schemaVersion: 0 };
  const event = {
    kind: 1, now: 1_767_225_600_000_000_000n, fingerprint: new Uint8Array(32).fill(7), token: 1n,
    response: { statusCode: 201, headers: [{ name: 'Content-Type', value: 'application/json' }], body: new Uint8Array([1]), schemaVersion: 1 },
    errorCode: '', verdict: 0,
  };
  return { record, event, policy: idem.policyDefault() };
}

// withValue is base() with the field at path ('event.response.body') set to
// value, or deleted for MISSING.
function withValue(path, value) {
  const req = base();
  const keys = path.split('.');
  let o = req;
  for (const k of keys.slice(0, -1)) o = o[k];
  if (value === MISSING) delete o[keys.at(-1)];
  else o[keys.at(-1)] = value;
  return req;
}

function show(v) {
  if (v === MISSING) return 'missing';
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'string') return JSON.stringify(v.length > 12 ? `${v.slice(0, 12)}…` : v);
  if (v instanceof Uint8Array) return `${v.constructor.name}(${v.length})`;
  if (Array.isArray(v)) return `array(${v.length})`;
  if (typeof v === 'object' && v !== null) return JSON.stringify(v);
  return String(v);
}

function stepWith(path, value) {
  const { record, event, policy } = withValue(path, value);
  return core.step(record, event, policy);
}

// accepts: no IdemInputError (the step succeeds, or the core refuses).
function accepts(path, value) {
  try {
    stepWith(path, value);
  } catch (err) {
    assert.ok(err instanceof IdemError, `${path} = ${show(value)}: ${err?.name}: ${err?.message}`);
  }
}

// fieldName is how an error names the field at path: event.response.headers[0].name.
const fieldName = (path) => path.replace(/\.(\d+)/g, '[$1]');

// refuses: an IdemInputError naming the field (path, or the element of a
// header list that is wrong) and carrying its value (inner).
function refuses(path, value, field = fieldName(path), inner = value) {
  assert.throws(() => stepWith(path, value), (err) => {
    assert.ok(IdemInputError && err instanceof IdemInputError, `${path} = ${show(value)}: got ${err?.name}: ${err?.message}`);
    assert.ok(err instanceof RangeError, 'an IdemInputError is a RangeError');
    assert.equal(err.name, 'IdemInputError');
    assert.equal(err.field, field);
    assert.ok(err.message.includes(field), `the message names the field: ${err.message}`);
    if (inner === MISSING) assert.match(err.message, /is missing/);
    else assert.ok(Object.is(err.value, inner), `the error carries the value: ${show(err.value)}`);
    return true;
  }, `${path} = ${show(value)} was not refused`);
}

const FIELDS = {
  u8: ['record.status', 'event.kind', 'event.verdict', 'policy.inFlightAnswer', 'policy.expiry', 'policy.fail'],
  u32: ['record.reconcileAttempts', 'policy.reconcileAttemptsMax', 'record.response.schemaVersion', 'event.response.schemaVersion'],
  u64: ['record.token', 'record.version', 'event.token'],
  i64: ['policy.leaseDuration', 'policy.ttl', 'policy.inFlightWait', 'policy.retryAfter', 'policy.reconcileBackoffBase',
    'policy.reconcileBackoffMax', 'policy.tombstoneRetention', 'policy.keyBytesMax', 'policy.requestBytesMax',
    'policy.responseBytesMax', 'record.response.statusCode', 'event.response.statusCode'],
  time: ['record.lockedUntil', 'record.reconcileAfter', 'record.createdAt', 'record.completedAt', 'record.expiresAt', 'event.now'],
  string: ['record.tenant', 'record.principal', 'record.useCase', 'record.key', 'record.lastErrorCode', 'event.errorCode',
    'event.response.headers.0.name', 'event.response.headers.0.value', 'record.response.headers.0.name', 'record.response.headers.0.value'],
  bytes: ['record.response.body', 'event.response.body'],
  fingerprint: ['record.fingerprint', 'event.fingerprint'],
  headers: ['record.response.headers', 'event.response.headers'],
};

// What is in range, and what is not, per kind of field.
const RANGES = {
  u8: { ok: [0, 1, 254, 255], bad: [256, -1, 257, 258, 1.5, NaN, Infinity, '1', 1n, null, {}] },
  u32: { ok: [0, 1, 2 ** 32 - 1], bad: [2 ** 32, 2 ** 32 + 1, -1, 0.5, NaN, Infinity, '1', 1n, null] },
  u64: { ok: [0n, 1n, U64_MAX, U64_MAX - 1n, 0, 1, Number.MAX_SAFE_INTEGER], bad: [U64_MAX + 1n, 2n ** 65n, -1n, I64_MIN, -1, 2 ** 53, 2 ** 64, 1.5, NaN, Infinity, '1', null] },
  i64: {
    ok: [I64_MIN, I64_MAX, -1n, 0n, 1n, -Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, -1, 0],
    bad: [I64_MIN - 1n, I64_MAX + 1n, U64_MAX, 2 ** 53, -(2 ** 53), 2 ** 63, 0.5, NaN, -Infinity, '5', null],
  },
  time: { ok: [null, TIME_MIN, TIME_MAX, -1n, 0n, 1n, -NS - 1n], bad: [TIME_MIN - 1n, TIME_MAX + 1n, 2n ** 200n, 5, 1.5, '5', {}] },
  string: { ok: ['', 'é', '\u{1F600}', 'x'.repeat(300)], bad: [5, null, 5n, '\uD800', 'a\uDC00b', '\uD83D', {}] },
  bytes: { ok: [null, new Uint8Array(0), new Uint8Array([0, 255]), Buffer.from('x')], bad: ['abc', [1, 2], new Uint16Array(2), new Int8Array(1), {}, 5] },
  fingerprint: { ok: [new Uint8Array(32), new Uint8Array(32).fill(255)], bad: [new Uint8Array(31), new Uint8Array(33), new Array(32).fill(0), null, 'x'.repeat(32), new Uint16Array(32)] },
  headers: {
    ok: [null, [], [{ name: 'A', value: 'b' }, { name: 'B', value: '' }]],
    bad: ['x', {}, 5, [null], ['a'], [{ name: 1, value: 'v' }], [{ value: 'v' }], [{ name: 'a' }], [{ name: 'a', value: '\uD800' }]],
  },
};

for (const [kind, paths] of Object.entries(FIELDS)) {
  for (const path of paths) {
    test(`${path} (${kind}): accepts its limits, refuses one past them, negatives and other types`, () => {
      for (const v of RANGES[kind].ok) accepts(path, v);
      for (const v of RANGES[kind].bad) {
        if (kind !== 'headers' || !Array.isArray(v)) {
          refuses(path, v);
          continue;
        }
        // A bad header is refused as its element, or the element's field.
        const h = v[0];
        if (h === null || typeof h !== 'object') refuses(path, v, `${fieldName(path)}[0]`, h);
        else if (typeof h.name !== 'string') refuses(path, v, `${fieldName(path)}[0].name`, h.name ?? MISSING);
        else refuses(path, v, `${fieldName(path)}[0].value`, h.value ?? MISSING);
      }
    });
  }
}

test('the values of the issue: verdict 258, status 257, reconcileAttemptsMax 2**32+1', () => {
  refuses('event.verdict', 258);
  refuses('record.status', 257);
  refuses('policy.reconcileAttemptsMax', 2 ** 32 + 1);
});

test('a u8 enum at 255 reaches the core, which refuses it by its value', () => {
  const { record, event, policy } = withValue('event.kind', 255);
  assert.throws(() => core.step(record, event, policy), (err) => err instanceof IdemError && err.code === 'ErrUnknownEvent' && /event\(255\)/.test(err.message));
});

test('a negative duration passes the host and is refused by the core', () => {
  for (const v of [-1n, I64_MIN, -1]) {
    const { record, event, policy } = withValue('policy.leaseDuration', v);
    assert.throws(() => core.step(record, event, policy), (err) => err instanceof IdemError && err.code === 'ErrInvalidPolicy', show(v));
  }
});

test('a byte array or a header list whose length is the nil marker (2^32-1) is refused', () => {
  const body = new Uint8Array(1);
  Object.defineProperty(body, 'length', { value: 2 ** 32 - 1 }); // a 4 GiB array, without the memory
  refuses('event.response.body', body);
  refuses('record.response.body', body);
  const headers = new Array(2 ** 32 - 1); // sparse: no memory either
  refuses('event.response.headers', headers);
  refuses('record.response.headers', headers);
});

// Required fields: every field of a record, a policy and a response's
// status code, and an event's kind and now; the event's other fields may be
// left out, as in Go (their zero values: the core ignores the fields that do
// not count for the kind, and refuses a missing one that does).
const REQUIRED = [
  'record.tenant', 'record.principal', 'record.useCase', 'record.key', 'record.status', 'record.fingerprint',
  'record.token', 'record.version', 'record.response', 'record.lastErrorCode', 'record.lockedUntil',
  'record.reconcileAfter', 'record.reconcileAttempts', 'record.createdAt', 'record.completedAt', 'record.expiresAt',
  'record.response.statusCode', 'event.response.statusCode', 'event.kind', 'event.now',
  'event.response.headers.0.name', 'event.response.headers.0.value',
  ...Object.keys(idem.policyDefault()).map((k) => `policy.${k}`),
];

for (const path of REQUIRED) {
  test(`a missing ${path} is refused, named`, () => refuses(path, MISSING));
}

test('the policy has the 14 fields of the Go Policy', () => {
  assert.equal(Object.keys(idem.policyDefault()).length, 14);
});

test('record, event and policy must be objects', () => {
  const { record, event, policy } = base();
  for (const bad of [undefined, null, 5, 'x']) {
    for (const [name, args] of [['record', [bad, event, policy]], ['event', [record, bad, policy]], ['policy', [record, event, bad]]]) {
      assert.throws(() => core.step(...args), (err) => err instanceof IdemInputError && err.field === name, `${name} = ${show(bad)}`);
    }
  }
});

test('an event\'s optional fields may be left out', () => {
  const p = idem.policyDefault();
  const t0 = 1_767_225_600_000_000_000n;
  const rec = base().record;
  const reserve = core.step(rec, { kind: 1, now: t0, fingerprint: new Uint8Array(32).fill(1), token: 5n }, p);
  assert.equal(reserve.transition.decision.kind, 1);
  // A sweep is a kind and a time.
  const sweep = core.step(reserve.record, { kind: 7, now: t0 + 301n * NS }, p);
  assert.equal(sweep.transition.decision.kind, 17); // lease_expired
  // A complete without its response is refused by the core, not the host.
  assert.throws(() => core.step(reserve.record, { kind: 2, now: t0, token: 5n }, p),
    (err) => err instanceof IdemError && err.code === 'ErrResponseInvalid');
  // A reserve without a token or a fingerprint likewise.
  assert.throws(() => core.step(rec, { kind: 1, now: t0, fingerprint: new Uint8Array(32).fill(1) }, p),
    (err) => err instanceof IdemError && err.code === 'ErrTokenMissing');
  assert.throws(() => core.step(rec, { kind: 1, now: t0, token: 5n }, p),
    (err) => err instanceof IdemError && err.code === 'ErrFingerprintMissing');
  // A response's headers, body and schema version may be left out too (nil, nil, 0).
  const done = core.step(reserve.record, { kind: 2, now: t0, token: 5n, response: { statusCode: 204 } }, p);
  assert.equal(done.transition.decision.kind, 6); // completed
  assert.equal(done.record.response.statusCode, 204);
});

test('a record soft-expired by an event without a response has the zero response', () => {
  const p = idem.policyDefault();
  const t0 = 1_767_225_600_000_000_000n;
  const rec = base().record;
  const { record: inProgress } = core.step(rec, { kind: 1, now: t0, fingerprint: new Uint8Array(32).fill(1), token: 5n }, p);
  const { record: done } = core.step(inProgress, { kind: 2, now: t0, token: 5n, response: { statusCode: 200, headers: null, body: null, schemaVersion: 1 } }, p);
  const { transition, record: expired } = core.step(done, { kind: 7, now: t0 + 25n * 3600n * NS }, p);
  assert.equal(transition.decision.kind, 18); // expired
  assert.equal(expired.status, 5);
  assert.deepEqual(expired.response, { statusCode: 0, headers: null, body: null, schemaVersion: 0 });
});

test('a refused input leaves the host usable and the record alone', () => {
  const { record, event, policy } = base();
  const copy = structuredClone(record);
  assert.throws(() => core.step(record, { ...event, verdict: 300 }, policy), IdemInputError ?? Error);
  assert.deepEqual(record, copy);
  assert.equal(core.step(record, event, policy).transition.decision.kind, 1);
});

test('strings reach the core as their UTF-8 bytes', () => {
  const p = idem.policyDefault();
  const reserve = (key) => ({ record: { ...base().record, key }, event: base().event });
  // U+0080 is the first character past ASCII: two bytes, C2 80.
  for (const [key, byte, at] of [['xxxxxé' + 'x'.repeat(20), '0xc3', 5], ['\u{1F600}' + 'x'.repeat(20), '0xf0', 0], ['abc\u00e9\u{1F600}' + 'x'.repeat(20), '0xc3', 3],
    ['\u0080' + 'x'.repeat(20), '0xc2', 0], ['x'.repeat(20) + '\u0080', '0xc2', 20]]) {
    const { record, event } = reserve(key);
    assert.throws(() => core.step(record, event, p), (err) => err instanceof IdemError && err.code === 'ErrInvalidKey' &&
      err.message.endsWith(`non-ASCII byte ${byte} at byte ${at}`), key);
  }
  // Sizes count bytes: 'é' is two, '😀' four.
  const { record, event } = base();
  const small = { ...p, responseBytesMax: 16 };
  const inProgress = core.step(record, event, small).record;
  const complete = (value) => core.step(inProgress, { kind: 2, now: event.now, token: 1n, response: { statusCode: 200, headers: [{ name: 'X', value }] } }, small);
  assert.equal(complete('é'.repeat(7) + 'x').transition.decision.kind, 6); // 1 + 15 bytes
  assert.throws(() => complete('é'.repeat(8)), (err) => err instanceof IdemError && err.code === 'ErrResponseTooLarge' && /17 bytes/.test(err.message));
  assert.throws(() => complete('😀'.repeat(4)), (err) => err instanceof IdemError && /17 bytes/.test(err.message));
});

test('a long string of 3-byte characters reaches the core whole, wherever it falls in the request buffer', async () => {
  // 3 bytes of UTF-8 per UTF-16 unit is the most any string takes ('€';
  // a surrogate pair is 4 bytes for 2 units). A fresh core's buffer has not
  // grown yet: the lengths sweep past its end, so that some string starts
  // with less room left than its UTF-8 needs.
  const fresh = await idem.load();
  const { record, event, policy } = base();
  const small = { ...policy, responseBytesMax: 16 };
  const inProgress = fresh.step(record, event, small).record;
  for (let n = 256; n <= 1 << 16; n = Math.ceil(n * 1.25)) {
    const response = { statusCode: 200, headers: [{ name: 'X', value: '€'.repeat(n) }] };
    assert.throws(() => fresh.step(inProgress, { kind: 2, now: event.now, token: 1n, response }, small),
      (err) => err instanceof IdemError && err.code === 'ErrResponseTooLarge' && err.message.includes(`${1 + 3 * n} bytes`), `${n} characters`);
  }
});
