// node wasm/js/example.mjs: one idempotency key's life, stepped through the
// core as a driver steps it (README.md). Outside this directory, import
// from '@idemkit/idem-core' instead of './idem.mjs'.
import { createHash } from 'node:crypto';
import {
  load, policyDefault, absentRecord, EventKind, DecisionKind, WriteKind, Status, Verdict,
  IdemError, IdemInputError,
} from './idem.mjs';

const core = await load();
const policy = policyDefault();
const second = 1_000_000_000n; // times and durations are bigint nanoseconds
const t0 = 1_767_225_600n * second; // 2026-01-01T00:00:00Z, as Unix nanoseconds
const nameOf = (constants, n) => Object.keys(constants).find((k) => constants[k] === n);

// The fingerprint is 32 bytes that the host passes on as they are. idem's
// fingerprint package (Go) defines the real one (SHA-256 over the canonical
// JSON of the request's semantic fields, domain-separated); a bare SHA-256
// stands in for it here.
const fingerprint = createHash('sha256').update('{"amount":100,"currency":"EUR"}').digest();
const otherRequest = createHash('sha256').update('{"amount":999,"currency":"EUR"}').digest();

// A driver loads the record (absent at first), steps it, and writes the
// record back with a compare-and-set on transition.write; here `rec` is the store.
let rec = absentRecord({ tenant: 'acme', principal: 'user-1', useCase: 'payments.create', key: '550e8400-e29b-41d4-a716-446655440000' });
function step(what, event) {
  const { transition, record } = core.step(rec, event, policy);
  console.log(`${what}: ${nameOf(DecisionKind, transition.decision.kind)}, write ${nameOf(WriteKind, transition.write.kind)}, record ${nameOf(Status, record.status)} (version ${record.version})`);
  rec = record;
  return transition;
}

// 1. The first request reserves the key with the store's fresh token, and executes.
const { decision } = step('first request', { kind: EventKind.Reserve, now: t0, fingerprint, token: 1n });
// 2. A retry while it runs is told to come back later.
const inFlight = step('retry while running', { kind: EventKind.Reserve, now: t0 + second, fingerprint, token: 2n });
console.log(`  retry after ${inFlight.decision.retryAfter / second} s`);
// 3. The owner stores the outcome, with the token it was given.
step('outcome stored', {
  kind: EventKind.Complete, now: t0 + 2n * second, token: decision.token,
  response: { statusCode: 201, headers: [{ name: 'Content-Type', value: 'application/json' }], body: new TextEncoder().encode('{"paymentId":"p-1"}'), schemaVersion: 1 },
});
// 4. A retry now replays the stored response, byte for byte.
step('retry after it', { kind: EventKind.Reserve, now: t0 + 3n * second, fingerprint, token: 3n });
console.log(`  replay: ${rec.response.statusCode} ${new TextDecoder().decode(rec.response.body)}`);
// 5. The same key with another request is a mismatch (422 at the edge).
step('same key, other request', { kind: EventKind.Reserve, now: t0 + 4n * second, fingerprint: otherRequest, token: 4n });
// 6. The reconciler has nothing to settle on a completed record.
step('reconciler', { kind: EventKind.Resolve, now: t0 + 5n * second, token: 1n, verdict: Verdict.NotExecuted });

// The core refuses an event that is not one: IdemError, nothing changed.
try {
  core.step(rec, { kind: EventKind.Complete, now: t0, token: 1n, response: { statusCode: 99 } }, policy);
} catch (err) {
  if (!(err instanceof IdemError)) throw err;
  console.log(`refused by the core: ${err.code}: ${err.message}`);
}
// The host refuses a value out of its field's range before the core sees it.
try {
  core.step(rec, { kind: EventKind.Resolve, now: t0, token: 1n, verdict: 258 }, policy);
} catch (err) {
  if (!(err instanceof IdemInputError)) throw err;
  console.log(`refused by the host: ${err.message}`);
}
