// node --test: the Node host of the executor's protocol (flow.mjs) against
// the native Go Flow: every case of testdata/flows.json (written by the Go
// tests from the native Flow) is begun and reported to through this host,
// and the module must answer each report with the bytes the native Flow's
// effect encodes to, and each lease call with the native lease's values.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { load, policyDefault, IdemError } from './idem.mjs';
import { beginFlow, NotExecutedError, StoreRejectedError } from './flow.mjs';
import { event, policy, record, response } from './testdata/convert.mjs';

const fixture = JSON.parse(await readFile(new URL('./testdata/flows.json', import.meta.url), 'utf8'));
const core = await load();
const big = (s) => BigInt(s);
const time = (s) => (s === null || s === undefined ? null : BigInt(s));
const hex = (s) => Uint8Array.from(Buffer.from(s, 'hex'));
const toHex = (b) => Buffer.from(b).toString('hex');

// handleless is an effect answer's hex with its handle (bytes 1-4) zeroed:
// the fixture's are the native Flow's for handle 0.
function handleless(bytes) {
  const b = Uint8Array.from(bytes);
  if (b[0] === 0) b.fill(0, 1, 5);
  return toHex(b);
}

// errorOf is the fixture's error as a JavaScript host has it.
function errorOf(e) {
  if (e.notExecuted !== null && e.notExecuted !== undefined) return new NotExecutedError(e.message, { code: e.notExecuted });
  if (e.sentinel) return new IdemError(e.sentinel, e.message);
  if (e.rejected) return new StoreRejectedError(e.message);
  const err = new Error(e.message);
  if (e.name) err.name = e.name;
  return err;
}

function appliedOf(a) {
  return {
    before: a.before, record: record(a.record), now: time(a.now),
    transition: {
      decision: { kind: a.transition.decisionKind, token: big(a.transition.decisionToken), retryAfter: big(a.transition.retryAfter) },
      write: { kind: a.transition.writeKind, expectVersion: big(a.transition.expectVersion), expectToken: big(a.transition.expectToken) },
    },
  };
}

// sameEffect holds what the host decoded (flow.next, flow.result()) to the
// native Flow's effect.
function sameEffect(flow, e, request, at) {
  const n = flow.next;
  assert.equal(n.kind, e.kind, `${at}: effect kind`);
  switch (e.kind) {
    case 1: {
      const ev = event(e.event);
      for (const f of ['kind', 'now', 'token', 'errorCode', 'verdict']) assert.equal(n.event[f], ev[f], `${at}: event.${f}`);
      assert.deepEqual(n.event.fingerprint, ev.fingerprint, `${at}: event.fingerprint`);
      assert.deepEqual(n.event.response, ev.response, `${at}: event.response`);
      assert.equal(n.held !== null, e.held ?? false, `${at}: held`);
      assert.equal(n.detached, e.detached ?? false, `${at}: detached`);
      assert.equal(n.timeout, big(e.timeout), `${at}: timeout`);
      break;
    }
    case 2:
      assert.equal(n.attempt.token, big(e.token), `${at}: attempt token`);
      assert.equal(n.attempt.lockedUntil, time(e.lockedUntil), `${at}: attempt lockedUntil`);
      assert.equal(n.attempt.scope.key, request.key, `${at}: attempt scope`);
      break;
    case 3:
      assert.equal(n.version, big(e.version), `${at}: wait version`);
      assert.equal(n.token, big(e.token), `${at}: wait token`);
      assert.equal(n.wait, big(e.wait), `${at}: wait for`);
      break;
    case 4:
      if (e.result) {
        const r = flow.result();
        assert.deepEqual(r, { kind: e.result.kind, response: response(e.result.response), token: big(e.result.token), recorded: e.result.recorded }, `${at}: result`);
      } else {
        assert.throws(() => flow.result(), (err) => {
          assert.equal(err.message, e.error.message, `${at}: answer error`);
          if (e.error.code) {
            assert.equal(err.code, e.error.code, `${at}: error code`);
            assert.equal(err.status, e.error.status, `${at}: error status`);
            assert.equal(err.retryAfter, big(e.error.retryAfter), `${at}: retry after`);
          }
          return true;
        });
      }
      break;
  }
}

function configOf(c) {
  return { policy: policy(c.policy), outcomeTimeout: big(c.outcomeTimeout), heartbeatInterval: big(c.heartbeatInterval) };
}

test(`the module answers the Node host's reports as the native Flow (${fixture.cases.length} flows)`, () => {
  let reports = 0;
  for (const [i, c] of fixture.cases.entries()) {
    const request = { ...c.request, fingerprint: hex(c.request.fingerprint) };
    let flow;
    try {
      flow = beginFlow(core, configOf(c.config), request);
    } catch (err) {
      assert.ok(c.begin.answer.startsWith('02'), `case ${i}: begin threw ${err}, the native Flow began`);
      continue;
    }
    assert.equal(handleless(flow.raw), c.begin.answer, `case ${i}: begin`);
    sameEffect(flow, c.begin.effect, request, `case ${i}: begin`);
    let lease = null;
    for (const [j, r] of (c.reports ?? []).entries()) {
      const at = `case ${i}, report ${j} (${r.call})`;
      const err = r.error ? errorOf(r.error) : null;
      switch (r.call) {
        case 'applied': flow.applied(err ? undefined : appliedOf(r.applied), err); break;
        case 'ran': flow.ran(err ? undefined : response(r.response), err); break;
        case 'waited': flow.waited(big(r.elapsed)); break;
        case 'gone': flow.gone(err); break;
        case 'lease': lease = flow.lease(time(r.sent)); break;
        case 'beaten': {
          const next = lease.beaten(time(r.sent), time(r.now), err ? undefined : appliedOf(r.applied), err);
          assert.equal(next, big(r.expect.next), `${at}: next beat`);
          break;
        }
        case 'lost': {
          const { lost, cause } = lease.lost(time(r.now));
          assert.equal(lost, r.expect.lost, `${at}: lost`);
          if (lost) assert.equal(cause.message, r.expect.cause, `${at}: cause`);
          break;
        }
        case 'beatTimeout':
          assert.equal(lease.beatTimeout(time(r.now)), big(r.expect.timeout), `${at}: beat timeout`);
          break;
        default: assert.fail(`${at}: unknown call`);
      }
      if (r.call === 'lease' || r.call === 'beaten') {
        assert.equal(lease.token, big(r.expect.token), `${at}: heartbeat token`);
        assert.equal(lease.interval, big(r.expect.interval), `${at}: interval`);
        assert.equal(lease.tellBy, time(r.expect.tellBy), `${at}: tell by`);
      } else if (r.expect.answer) {
        assert.equal(handleless(flow.raw), r.expect.answer, `${at}: the module's answer`);
        sameEffect(flow, r.expect.effect, request, at);
      }
      reports++;
    }
    flow.close();
  }
  assert.ok(reports > 300, `only ${reports} reports: is the fixture reader broken?`);
});

test("a flow's raw answer is the module's last: read after the module's next call, it is refused, not stale", () => {
  const request = { principal: 'p', useCase: 'payments.create', key: 'raw-key-0123456789abcdef', fingerprint: new Uint8Array(32).fill(7) };
  const config = { policy: policyDefault() };
  const flow = beginFlow(core, config, request);
  const first = flow.raw;
  assert.deepEqual(flow.raw, first, 'read twice before another call: the same bytes');
  const other = beginFlow(core, config, request); // the module's next call overwrites the answer
  assert.throws(() => flow.raw, /read after another call/);
  assert.ok(other.raw.length > 0);
  other.close();
  flow.close();
});
