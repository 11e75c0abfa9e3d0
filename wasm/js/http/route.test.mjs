// The Node middleware's behaviours that a request sequence in the
// conformance corpus cannot show: concurrency, a client that goes away,
// handlers that throw, lose their lease or run past their timeout, Express
// itself, and the route's own checks.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import express from 'express';
import { load, policyDefault, EventKind } from '../idem.mjs';
import { createExecutor } from '../executor.mjs';
import { createMemoryStore } from '../memstore.mjs';
import { loadFingerprint } from '../fingerprint.mjs';
import { newRoute, attemptOf, notExecuted, outcomeUnknown, ExecutionTimeoutError } from './route.mjs';

const core = await load();
const fingerprints = await loadFingerprint();
const MS = 1_000_000n;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let keys = 0;
const newKey = () => `route-test-key-${String(++keys).padStart(8, '0')}`;

function setup({ policy = {}, route = {}, store: wrap = (s) => s } = {}) {
  const p = { ...policyDefault(), inFlightWait: 100n * MS, ...policy };
  const executor = createExecutor({ core, store: wrap(createMemoryStore(core)), policy: p });
  return newRoute(executor, fingerprints, { useCase: 'orders.create', anonymous: true, ...route });
}

async function serve(handler) {
  const server = http.createServer(handler);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) };
}

const post = (url, key, body = '{"a":1}', extra = {}) => fetch(`${url}/orders`, {
  method: 'POST', body, ...extra, headers: { 'Idempotency-Key': key, 'Content-Type': 'application/json', ...extra.headers },
});

test('a retry while the handler runs is answered 409 in_progress with Retry-After, then replayed', async () => {
  const protect = setup();
  let runs = 0;
  const s = await serve(protect(async (req, res) => { runs++; await sleep(300); res.statusCode = 201; res.end('done'); }));
  try {
    const key = newKey();
    const first = post(s.url, key);
    await sleep(50);
    const during = await post(s.url, key);
    assert.equal(during.status, 409);
    assert.equal(during.headers.get('retry-after'), '1');
    assert.equal((await during.json()).code, 'in_progress');
    assert.equal((await first).status, 201);
    const after = await post(s.url, key);
    assert.equal(after.status, 201);
    assert.equal(after.headers.get('idempotent-replayed'), 'true');
    assert.equal(await after.text(), 'done');
    assert.equal(runs, 1);
  } finally { await s.close(); }
});

test('a client gone before the handler starts leaves the key free; once started, the handler runs on and its outcome is recorded', async () => {
  // The reserve is slowed, so that the client can go away before the handler starts.
  let slowReserve = true;
  const protect = setup({ store: (st) => ({ ...st, apply: async (...a) => { if (slowReserve && a[1].kind === EventKind.Reserve) await sleep(150); return st.apply(...a); } }) });
  let runs = 0;
  let finished = 0;
  const s = await serve(protect(async (req, res) => {
    runs++;
    await sleep(150);
    finished++;
    res.statusCode = 201;
    res.end(`run ${runs}`);
  }));
  try {
    const key = newKey();
    await assert.rejects(post(s.url, key, '{"a":1}', { signal: AbortSignal.timeout(50) }));
    await sleep(250);
    assert.equal(runs, 0, 'nothing ran for a client gone before the handler started');
    slowReserve = false;
    const gone = post(s.url, key, '{"a":1}', { signal: AbortSignal.timeout(50) }); // now gone while the handler runs
    await assert.rejects(gone);
    await sleep(250);
    assert.equal(finished, 1, 'the handler ran to its end although its client went away');
    const retry = await post(s.url, key);
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.equal(await retry.text(), 'run 1');
  } finally { await s.close(); }
});

test('a handler that throws leaves its key unknown, and the error goes on to the application', async () => {
  const protect = setup();
  const errors = [];
  const app = express();
  app.post('/orders', protect(async () => { throw new Error('charge failed midway'); }));
  app.use((err, req, res, next) => { errors.push(err.message); res.status(500).json({ error: 'internal' }); });
  const s = await serve(app);
  try {
    const key = newKey();
    const first = await post(s.url, key);
    assert.equal(first.status, 500);
    assert.deepEqual(await first.json(), { error: 'internal' });
    assert.deepEqual(errors, ['charge failed midway']);
    const retry = await post(s.url, key);
    assert.equal(retry.status, 409);
    assert.equal((await retry.json()).code, 'outcome_unknown');
  } finally { await s.close(); }
});

test('Express: the handler gets the parsed body, the raw bytes and its attempt; outside the middleware there is none', async () => {
  const protect = setup({ route: { exclude: ['/sentAt'] } });
  const seen = [];
  const app = express();
  app.post('/orders', protect((req, res) => {
    const at = attemptOf(req);
    seen.push({ body: req.body, raw: req.rawBody.toString(), token: at.token, key: at.scope.key, signal: at.signal instanceof AbortSignal });
    res.status(201).json({ token: String(at.token) });
  }));
  app.get('/orders', (req, res) => res.json({ attempt: attemptOf(req), notExecuted: notExecuted(req), unknown: outcomeUnknown(req) }));
  const s = await serve(app);
  try {
    const key = newKey();
    const r = await post(s.url, key, '{"item":"book","sentAt":"10:00"}');
    assert.equal(r.status, 201);
    assert.equal(seen.length, 1);
    assert.deepEqual(seen[0].body, { item: 'book', sentAt: '10:00' });
    assert.equal(seen[0].raw, '{"item":"book","sentAt":"10:00"}');
    assert.equal(seen[0].key, key);
    assert.equal(seen[0].signal, true);
    assert.equal((await r.json()).token, String(seen[0].token));
    assert.equal((await post(s.url, key, '{"sentAt":"10:01","item":"book"}')).headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(await (await fetch(`${s.url}/orders`)).json(), { attempt: null, notExecuted: false, unknown: false });
  } finally { await s.close(); }
});

test('a body parser that ran first is a configuration error, not a silent empty fingerprint', async () => {
  const protect = setup();
  const app = express();
  app.use(express.json());
  app.post('/orders', protect((req, res) => res.status(201).end()));
  let failure = null;
  app.use((err, req, res, next) => { failure = err; res.status(500).end(); });
  const s = await serve(app);
  try {
    assert.equal((await post(s.url, newKey())).status, 500);
    assert.match(failure.message, /the request body was read before the middleware/);
  } finally { await s.close(); }
});

test('a handler past its execution timeout sees its signal abort, and its outcome is unknown', async () => {
  const protect = setup({ route: { executionTimeoutMs: 100 } });
  let reason = null;
  const app = express();
  app.post('/orders', protect(async (req) => {
    const { signal } = attemptOf(req);
    await new Promise((r) => signal.addEventListener('abort', r, { once: true }));
    reason = signal.reason;
  }));
  app.use((err, req, res, next) => res.status(504).json({ error: err.name }));
  const s = await serve(app);
  try {
    const key = newKey();
    const first = await post(s.url, key);
    assert.equal(first.status, 504);
    assert.ok(reason instanceof ExecutionTimeoutError, `the signal's reason: ${reason}`);
    assert.equal((await (await post(s.url, key)).json()).code, 'outcome_unknown');
  } finally { await s.close(); }
});

test('a lost lease aborts the handler\'s signal', async () => {
  // Heartbeats fail, so that the lease runs out while the handler runs.
  const protect = setup({
    policy: { leaseDuration: 300n * MS },
    store: (st) => ({ ...st, apply: async (...a) => { if (a[1].kind === EventKind.Heartbeat) throw new Error('store down'); return st.apply(...a); } }),
  });
  let aborted = null;
  const s = await serve(protect(async (req, res) => {
    const { signal } = attemptOf(req);
    await Promise.race([sleep(2000), new Promise((r) => signal.addEventListener('abort', r, { once: true }))]);
    aborted = signal.aborted ? signal.reason : null;
    res.end();
  }));
  try {
    const key = newKey();
    await post(s.url, key);
    assert.ok(aborted !== null, 'the signal aborted');
    assert.notEqual(aborted.name, 'ExecutionTimeoutError');
  } finally { await s.close(); }
});

test('a route that cannot be served is refused when it is built', () => {
  const executor = createExecutor({ core, store: createMemoryStore(core), policy: policyDefault() });
  const bad = [
    {}, { useCase: 'u' }, { useCase: 'u', anonymous: true, principal: () => 'p' },
    { useCase: 'u', anonymous: true, methods: [] }, { useCase: 'u', anonymous: true, methods: ['PO ST'] },
    { useCase: 'u', anonymous: true, keyHeader: 'Idem Key' }, { useCase: 'u', anonymous: true, replayHeaders: ['Content-Length'] },
    { useCase: 'u', anonymous: true, mediaTypes: ['json'] }, { useCase: 'u', anonymous: true, mediaTypes: ['*/json'] },
    { useCase: 'u', anonymous: true, bodyBytesMax: -1 }, { useCase: 'u', anonymous: true, executionTimeoutMs: 0 },
  ];
  for (const rt of bad) assert.throws(() => newRoute(executor, fingerprints, rt), TypeError, JSON.stringify(rt));
  assert.throws(() => newRoute(executor, fingerprints, { useCase: 'u', anonymous: true, exclude: ['no-slash'] }), /pointer/i);
  assert.throws(() => newRoute(executor, fingerprints, { useCase: 'u', anonymous: true })(null), TypeError);
});

test('the held response is a copy of each write: a handler that reuses its buffer is answered and replayed what it wrote', async () => {
  const protect = setup();
  const s = await serve(protect((req, res) => {
    const buf = Buffer.alloc(6);
    res.setHeader('Content-Type', 'text/plain');
    for (const line of ['line1\n', 'line2\n', 'line3\n']) { buf.write(line); res.write(buf); }
    res.end();
  }));
  try {
    const key = newKey();
    assert.equal(await (await post(s.url, key)).text(), 'line1\nline2\nline3\n');
    const replay = await post(s.url, key);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(await replay.text(), 'line1\nline2\nline3\n');
  } finally { await s.close(); }
});

test("an outer middleware's wrappers of writeHead and end run, on the first answer and on a replay", async () => {
  const protect = setup();
  const app = express();
  app.use((req, res, next) => { // as on-headers does (express-session, morgan)
    const writeHead = res.writeHead;
    res.writeHead = function wrapped(...args) { this.setHeader('X-Outer', 'seen'); return writeHead.apply(this, args); };
    next();
  });
  app.post('/orders', protect((req, res) => res.status(201).send('made')));
  const s = await serve(app);
  try {
    const key = newKey();
    assert.equal((await post(s.url, key)).headers.get('x-outer'), 'seen');
    assert.equal((await post(s.url, key)).headers.get('x-outer'), 'seen');
  } finally { await s.close(); }
});

test('a response over the policy\'s limit goes to its client whole, unheld, and the key is left unknown', async () => {
  const protect = setup({ policy: { responseBytesMax: 1000 } });
  const big = 'x'.repeat(300_000);
  const s = await serve(protect((req, res) => { res.setHeader('Content-Type', 'text/plain'); res.write(big.slice(0, 500)); res.write(big.slice(500)); res.end(); }));
  try {
    const key = newKey();
    const first = await post(s.url, key);
    assert.equal(first.status, 200);
    assert.equal((await first.text()).length, big.length);
    // Its client has it all before the outcome is written: a retry at once may find the key in progress.
    let code;
    for (let i = 0; i < 50 && (code === undefined || code === 'in_progress'); i++) {
      if (i > 0) await sleep(20);
      const retry = await post(s.url, key);
      assert.equal(retry.status, 409);
      code = (await retry.json()).code;
    }
    assert.equal(code, 'outcome_unknown');
  } finally { await s.close(); }
});

test('writeHead with a reason and repeated headers: both headers go out and are stored', async () => {
  const protect = setup({ route: { replayHeaders: ['Set-Cookie'] } });
  const s = await serve(protect((req, res) => { res.writeHead(201, 'Payment Made', ['Set-Cookie', 'a=1', 'Set-Cookie', 'b=2']); res.end('ok'); }));
  try {
    const key = newKey();
    const first = await post(s.url, key);
    assert.equal(first.status, 201);
    assert.deepEqual(first.headers.getSetCookie(), ['a=1', 'b=2']);
    assert.deepEqual((await post(s.url, key)).headers.getSetCookie(), ['a=1', 'b=2']);
  } finally { await s.close(); }
});

test("a handler that learns after its timeout that nothing happened frees its key (NotExecuted is honoured after the signal's abort)", async () => {
  const protect = setup({ route: { executionTimeoutMs: 50 } });
  let runs = 0;
  const s = await serve(protect(async (req, res) => {
    runs++;
    const { signal } = attemptOf(req);
    if (runs === 1) {
      await new Promise((r) => signal.addEventListener('abort', r, { once: true }));
      notExecuted(req, new Error('refused before sending'));
      res.statusCode = 503;
      res.end('nothing was charged');
      return;
    }
    res.statusCode = 201;
    res.end('charged');
  }));
  try {
    const key = newKey();
    const first = await post(s.url, key);
    assert.equal(first.status, 503);
    assert.equal(await first.text(), 'nothing was charged');
    const retry = await post(s.url, key);
    assert.equal(retry.status, 201, 'the key was freed: the retry ran');
    assert.equal(runs, 2);
  } finally { await s.close(); }
});

test("next() and next('route') pass the request on, as in Express; what answers it is held and stored", async () => {
  const protect = setup();
  const app = express();
  app.post('/orders', protect((req, res, next) => next('route')), () => { throw new Error('not reached: next("route") skips the rest of the route'); });
  app.post('/orders', (req, res) => res.status(202).send('the next route'));
  const s = await serve(app);
  try {
    const key = newKey();
    const first = await post(s.url, key);
    assert.equal(first.status, 202);
    assert.equal(await first.text(), 'the next route');
    const replay = await post(s.url, key);
    assert.equal(replay.status, 202);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  } finally { await s.close(); }
});

test('scope values the module cannot take are the client\'s 400, and a tenant extractor that gives no string too', async () => {
  const s1 = await serve(setup({ route: { anonymous: undefined, principal: () => 'bad\ud800' } })((req, res) => res.end()));
  const s2 = await serve(setup({ route: { tenant: () => undefined } })((req, res) => res.end()));
  try {
    const a = await post(s1.url, newKey());
    assert.equal(a.status, 400);
    assert.equal((await a.json()).code, 'invalid_request');
    const b = await post(s2.url, newKey());
    assert.equal(b.status, 400);
    assert.match((await b.json()).detail, /^tenant: /);
  } finally { await s1.close(); await s2.close(); }
});

test('a route is refused at start-up for a challenge or a use case that would fail every request, and a timeout Node cannot keep', () => {
  const executor = createExecutor({ core, store: createMemoryStore(core), policy: policyDefault() });
  for (const rt of [
    { useCase: 'u', principal: () => 'p', authChallenge: 'Bearer realm="x"\r\nX-Injected: 1' },
    { useCase: 'u'.repeat(300), anonymous: true },
    { useCase: 'café', anonymous: true },
    { useCase: 'u', anonymous: true, executionTimeoutMs: 30 * 24 * 3600 * 1000 },
  ]) assert.throws(() => newRoute(executor, fingerprints, rt), TypeError, JSON.stringify(rt).slice(0, 80));
});
