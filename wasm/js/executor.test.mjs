// node --test: the Node executor (executor.mjs) over the memory store
// (memstore.mjs): Go's Do's semantics, through the module's Flow.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { load, policyDefault, EventKind } from './idem.mjs';
import { NotExecutedError, FlowError, ResultKind } from './flow.mjs';
import { createMemoryStore } from './memstore.mjs';
import { createExecutor } from './executor.mjs';

const core = await load();
const MS = 1_000_000n;
const fp = (s) => createHash('sha256').update(s).digest();
let keys = 0;
const request = (body = 'a', key = `key-${++keys}-0123456789abcdef`) => ({ tenant: 'acme', principal: 'user-1', useCase: 'payments.create', key, fingerprint: fp(body) });
const body = (s) => new TextEncoder().encode(s);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function setup(overrides = {}, storeWrap = (s) => s) {
  const policy = { ...policyDefault(), leaseDuration: 2000n * MS, inFlightWait: 1000n * MS, ...overrides };
  const store = storeWrap(createMemoryStore(core));
  return { store, ex: createExecutor({ core, store, policy }) };
}

const charge = (calls, ms = 0) => async () => {
  calls.n++;
  if (ms) await sleep(ms);
  return { statusCode: 201, headers: [{ name: 'Content-Type', value: 'application/json' }], body: body(`{"charge":${calls.n}}`) };
};

test('a new key executes once; a retry replays its response byte for byte', async () => {
  const { ex } = setup();
  const calls = { n: 0 };
  const req = request();
  const first = await ex.do(req, charge(calls));
  assert.equal(first.kind, ResultKind.Executed);
  assert.equal(first.recorded, true);
  const second = await ex.do(req, charge(calls));
  assert.equal(second.kind, ResultKind.Replayed);
  assert.deepEqual(second.response, first.response);
  assert.equal(second.token, first.token);
  assert.equal(calls.n, 1);
});

test('a retry while the first runs waits for it and replays, within the in-flight wait', async () => {
  const { ex } = setup();
  const calls = { n: 0 };
  const req = request();
  const [a, b] = await Promise.all([ex.do(req, charge(calls, 200)), (async () => { await sleep(20); return ex.do(req, charge(calls)); })()]);
  assert.equal(calls.n, 1);
  assert.equal(a.kind, ResultKind.Executed);
  assert.equal(b.kind, ResultKind.Replayed);
  assert.deepEqual(b.response, a.response);
});

test('a retry of a key that runs past the in-flight wait is answered in_progress (409, Retry-After)', async () => {
  const { ex } = setup({ inFlightWait: 100n * MS });
  const calls = { n: 0 };
  const req = request();
  const slow = ex.do(req, charge(calls, 400));
  await sleep(20);
  const started = Date.now();
  await assert.rejects(ex.do(req, charge(calls)), (err) => {
    assert.ok(err instanceof FlowError, String(err));
    assert.equal(err.code, 'in_progress');
    assert.equal(err.status, 409);
    assert.ok(err.retryAfter > 0n);
    return true;
  });
  assert.ok(Date.now() - started >= 90, 'answered before the in-flight wait');
  await slow;
  assert.equal(calls.n, 1);
});

test('another payload under a key in use is key_misuse (422), and runs nothing', async () => {
  const { ex } = setup();
  const calls = { n: 0 };
  const key = `misuse-${++keys}-0123456789abcdef`;
  await ex.do(request('a', key), charge(calls));
  await assert.rejects(ex.do(request('b', key), charge(calls)), (err) => err.code === 'key_misuse' && err.status === 422);
  assert.equal(calls.n, 1);
});

test('an action that proves it did nothing frees its key at once: the retry executes', async () => {
  const { ex } = setup();
  const req = request();
  await assert.rejects(ex.do(req, async () => { throw new NotExecutedError('card declined before sending', { code: 'card_declined' }); }),
    (err) => err.code === 'not_executed');
  const calls = { n: 0 };
  const r = await ex.do(req, charge(calls));
  assert.equal(r.kind, ResultKind.Executed);
  assert.equal(calls.n, 1);
});

test('an action that fails otherwise leaves its key unknown: nothing runs again on a guess', async () => {
  const { ex } = setup();
  const req = request();
  await assert.rejects(ex.do(req, async () => { throw new Error('gateway: connection reset'); }), (err) => err.code === 'outcome_unknown' && err.status === 409);
  const calls = { n: 0 };
  await assert.rejects(ex.do(req, charge(calls)), (err) => err.code === 'outcome_unknown');
  assert.equal(calls.n, 0);
});

test('a caller gone before anything ran gets its abort reason, and nothing runs', async () => {
  const { ex } = setup();
  const calls = { n: 0 };
  const controller = new AbortController();
  const reason = new Error('client disconnected');
  controller.abort(reason);
  await assert.rejects(ex.do(request(), charge(calls), { signal: controller.signal }), (err) => err === reason);
  assert.equal(calls.n, 0);
});

test('the outcome is recorded though the caller went away while the action ran', async () => {
  const { ex } = setup();
  const calls = { n: 0 };
  const req = request();
  const controller = new AbortController();
  const running = ex.do(req, charge(calls, 100), { signal: controller.signal });
  await sleep(20);
  controller.abort(new Error('client disconnected'));
  const r = await running;
  assert.equal(r.recorded, true);
  const replay = await ex.do(req, charge(calls));
  assert.equal(replay.kind, ResultKind.Replayed);
  assert.equal(calls.n, 1);
});

test('heartbeats keep a long action\'s lease; a lease no heartbeat extends aborts the action before it ends', async () => {
  // A lease of 600 ms, beaten every 200 ms: an action of 1.5 s outlives
  // its first lease and still completes.
  const { ex } = setup({ leaseDuration: 600n * MS });
  const calls = { n: 0 };
  const r = await ex.do(request(), charge(calls, 1500));
  assert.equal(r.kind, ResultKind.Executed);
  assert.equal(r.recorded, true);

  // A store whose heartbeats fail: the lease ends and the action is told.
  const failing = (s) => ({ ...s, apply: (scope, ev, p, o) => (ev.kind === EventKind.Heartbeat ? Promise.reject(new Error('store down')) : s.apply(scope, ev, p, o)) });
  const { ex: ex2 } = setup({ leaseDuration: 600n * MS }, failing);
  let abortedAfter = null;
  const started = Date.now();
  await assert.rejects(ex2.do(request(), async ({ signal }) => {
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    abortedAfter = Date.now() - started;
    throw signal.reason;
  }), (err) => err.code === 'outcome_unknown');
  assert.ok(abortedAfter !== null && abortedAfter < 600, `aborted after ${abortedAfter} ms, the lease was 600 ms`);
});

test('a heartbeat due after the lease ends: the action is still told by the lease\'s end', async () => {
  // Beats every 10 s over a lease of 600 ms: the first beat comes too
  // late, and the tell's timer must not wait for it.
  const policy = { ...policyDefault(), leaseDuration: 600n * MS };
  const ex = createExecutor({ core, store: createMemoryStore(core), policy, heartbeatInterval: 10_000n * MS });
  const started = Date.now();
  let abortedAfter = null;
  await assert.rejects(ex.do(request(), async ({ signal }) => {
    await Promise.race([new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true })), sleep(2000)]);
    abortedAfter = signal.aborted ? Date.now() - started : null;
    throw signal.reason ?? new Error('never told');
  }), (err) => err.code === 'outcome_unknown');
  assert.ok(abortedAfter !== null && abortedAfter < 600, `aborted after ${abortedAfter} ms, the lease was 600 ms`);
});

test('a caller gone while its reserve was under way, which the store applied, frees the key through its action', async () => {
  const { ex } = setup({}, (s) => ({ ...s, apply: async (...a) => { if (a[1].kind === EventKind.Reserve) await sleep(100); return s.apply(...a); } }));
  const req = request();
  const caller = new AbortController();
  setTimeout(() => caller.abort(new Error('client gone')), 20);
  let sawAborted = null;
  await assert.rejects(ex.do(req, async ({ signal }) => {
    sawAborted = signal.aborted;
    throw new NotExecutedError('the client went away before anything ran');
  }, { signal: caller.signal }));
  assert.equal(sawAborted, true, 'the action ran, with its signal already aborted');
  const calls = { n: 0 };
  const again = await ex.do(req, charge(calls));
  assert.equal(again.kind, ResultKind.Executed, 'the key was free at once: not in progress until its lease ran out');
  assert.equal(calls.n, 1);
});
