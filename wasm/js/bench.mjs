// node wasm/js/bench.mjs: one Step (a completion with a 19-byte body,
// as BenchmarkStep/Complete in Go) from Node, encoding both ways included;
// then spec.of of fingerprint.mjs on the body of Go's
// BenchmarkFingerprintOf (wasm/fingerprint_bench_test.go), byte for byte.
import { load, policyDefault, absentRecord } from './idem.mjs';
import { loadFingerprint } from './fingerprint.mjs';

const core = await load();
const p = policyDefault();
const t0 = 1_767_225_600_000_000_000n;
const fp = new Uint8Array(32).fill(1);
const rec = { ...absentRecord({ tenant: 'acme', principal: 'user-1', useCase: 'payments.create', key: '550e8400-e29b-41d4-a716-446655440000' }),
  status: 1, fingerprint: fp, token: 1n, version: 1n, lockedUntil: t0 + 300n * 1_000_000_000n, createdAt: t0, expiresAt: t0 + 86400n * 1_000_000_000n };
const ev = { kind: 2, now: t0 + 1_000_000_000n, fingerprint: new Uint8Array(32), token: 1n, errorCode: '', verdict: 0,
  response: { statusCode: 201, headers: [{ name: 'Content-Type', value: 'application/json' }], body: new TextEncoder().encode('{"paymentId":"p-1"}'), schemaVersion: 1 } };
for (let i = 0; i < 20000; i++) core.step(rec, ev, p); // warm up
for (let round = 0; round < 5; round++) {
  const n = 100000;
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const { transition } = core.step(rec, ev, p);
    if (transition.decision.kind !== 6) throw new Error(`decision ${transition.decision.kind}`);
  }
  const ns = Number(process.hrtime.bigint() - start) / n;
  console.log(`node step Complete: ${ns.toFixed(0)} ns/op`);
}
const t = process.hrtime.bigint();
await load();
console.log(`node load (compile + instantiate + initialize): ${(Number(process.hrtime.bigint() - t) / 1e6).toFixed(1)} ms`);

// fpBenchBody of wasm/fingerprint_bench_test.go, the same bytes (its \u201c are JSON escapes).
const body = Buffer.from(String.raw`{"amount":{"value":125000,"currency":"EUR"},"customer":{"id":"cus_2c9341ca4cf3d87b","email":"jane.doe+billing@example.com","name":"Jane \u201cJD\u201d Doe"},"line_items":[{"sku":"SKU-001","quantity":2,"unit_amount":350},{"sku":"SKU-002","quantity":3,"unit_amount":195}],"capture":true,"client_ts":"2024-05-17T09:31:12.123Z"}`);
const spec = (await loadFingerprint()).newSpec('payments.create', 1, { exclude: ['/client_ts'] });
for (let i = 0; i < 20000; i++) spec.of(body); // warm up
for (let round = 0; round < 5; round++) {
  const n = 100000;
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) spec.of(body);
  console.log(`node spec.of, ${body.length}-byte body: ${(Number(process.hrtime.bigint() - start) / n).toFixed(0)} ns/op`);
}
