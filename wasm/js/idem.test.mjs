// node --test: replays testdata/steps.json (the core's Step scenarios, the
// cases at the edges of the ABI's ranges and rapid cases, with the native Go
// core's answers, written by
// go test ./wasm/ -run TestNodeFixtureFresh -update-fixture) through this host.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { load, IdemError, AbiVersionError, ABI_VERSION, policyDefault, absentRecord } from './idem.mjs';
import { record, event, policy, transition } from './testdata/convert.mjs';

const fixture = JSON.parse(await readFile(new URL('./testdata/steps.json', import.meta.url), 'utf8'));
const core = await load();

test('the fixture covers the Step scenarios and refusals', () => {
  const scenarios = fixture.cases.filter((c) => c.name.startsWith('scenario '));
  assert.ok(scenarios.length >= 7, `only ${scenarios.length} scenario cases`);
  const steps = fixture.cases.flatMap((c) => c.steps);
  assert.ok(steps.some((s) => s.error !== null) && steps.some((s) => s.transition !== null));
});

for (const c of fixture.cases) {
  test(`replays ${c.name} as the Go core does`, () => {
    const p = policy(c.policy);
    let cur = record(c.start);
    c.steps.forEach((s, i) => {
      const ev = event(s.event);
      const where = `${c.name}, step ${i} (event kind ${s.event.kind})`;
      if (s.error !== null) {
        assert.throws(() => core.step(cur, ev, p), (err) => {
          assert.ok(err instanceof IdemError, `${where}: ${err}`);
          assert.equal(err.code, s.error.code, where);
          assert.equal(err.message, s.error.message, where);
          return true;
        }, where);
        assert.deepEqual(cur, record(s.record), `${where}: a refused event changed the record`);
        return;
      }
      const got = core.step(cur, ev, p);
      assert.deepEqual(got.transition, transition(s.transition), `${where}: transition`);
      assert.deepEqual(got.record, record(s.record), `${where}: record`);
      cur = got.record;
    });
  });
}

test('refuses a module of another ABI version', async () => {
  // A hand-written module exporting only idem_abi_version, returning 99.
  const wasm = new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f,
    0x03, 0x02, 0x01, 0x00, 0x07, 0x14, 0x01, 0x10, ...Buffer.from('idem_abi_version'), 0x00, 0x00,
    0x0a, 0x07, 0x01, 0x05, 0x00, 0x41, 0xe3, 0x00, 0x0b,
  ]);
  await assert.rejects(load({ wasm }), (err) => {
    assert.ok(err instanceof AbiVersionError);
    assert.match(err.message, new RegExp(`v99.*v${ABI_VERSION}`));
    return true;
  });
});

test('steps a new key, and leaves the caller\'s record alone', () => {
  const rec = absentRecord({ principal: 'user-1', useCase: 'payments.create', key: '550e8400-e29b-41d4-a716-446655440000' });
  const ev = {
    kind: 1, now: 1_767_225_600_000_000_000n, fingerprint: new Uint8Array(32).fill(7), token: 1n,
    response: { statusCode: 0, headers: null, body: null, schemaVersion: 0 }, errorCode: '', verdict: 0,
  };
  const { transition, record: next } = core.step(rec, ev, policyDefault());
  assert.equal(transition.decision.kind, 1); // execute
  assert.equal(transition.decision.token, 1n);
  assert.equal(next.status, 1); // in_progress
  assert.equal(next.lockedUntil, ev.now + 300n * 1_000_000_000n);
  assert.equal(rec.status, 0);
});
