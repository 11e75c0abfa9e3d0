// node --test: the PostgreSQL store (pgstore.mjs) on a real PostgreSQL
// (IDEM_PG_DSN, by default the machine's test database), in a schema of
// its own made by store/pgx's migrations, under the executor.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import pg from 'pg';
import { load, policyDefault } from './idem.mjs';
import { NotExecutedError, ResultKind } from './flow.mjs';
import { createExecutor } from './executor.mjs';
import { createPgStore, fnv64 } from './pgstore.mjs';
import { recordingStore, policyLine } from './history.mjs';
import { lincheck } from './testdata/lincheck.mjs';
import { dsn, migratedSchema } from './testdata/pgschema.mjs';

const core = await load();
const pool = new pg.Pool({ connectionString: dsn, max: 8 });
const schema = await migratedSchema(pool, 'idem_node');
const store = createPgStore(core, pool, { schema });
after(async () => {
  await store.close();
  await pool.query(`DROP SCHEMA ${schema} CASCADE`);
  await pool.end();
});

const MS = 1_000_000n;
const policy = { ...policyDefault(), inFlightWait: 2000n * MS };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let keys = 0;
const request = (key = `pg-key-${++keys}-0123456789abcdef`) => ({ principal: 'p', useCase: 'payments.create', key, fingerprint: createHash('sha256').update('a').digest() });
const charge = (calls, ms = 0) => async () => {
  calls.n++;
  if (ms) await sleep(ms);
  return { statusCode: 201, headers: [{ name: 'Content-Type', value: 'application/json' }, { name: 'X-Note', value: 'é' }], body: new TextEncoder().encode(`{"charge":${calls.n}}`) };
};

test('a new key executes once on PostgreSQL; a retry replays it byte for byte from the table', async () => {
  const ex = createExecutor({ core, store, policy });
  const calls = { n: 0 };
  const req = request();
  const first = await ex.do(req, charge(calls));
  const again = await ex.do(req, charge(calls));
  assert.equal(first.kind, ResultKind.Executed);
  assert.equal(again.kind, ResultKind.Replayed);
  assert.deepEqual(again.response, first.response);
  assert.equal(calls.n, 1);
  const { rows } = await pool.query(`SELECT status, response_status FROM ${schema}.idem_records WHERE idem_key = $1`, [req.key]);
  assert.deepEqual(rows, [{ status: 'completed', response_status: 201 }]);
});

test('concurrent requests on PostgreSQL: one execution per key, every other answer its replay (a waiter woken by NOTIFY)', async () => {
  const lines = [policyLine(policy)];
  const ex = createExecutor({ core, store: recordingStore(store, lines), policy });
  const calls = { n: 0 };
  const reqs = [request(), request(), request()];
  const results = await Promise.all(Array.from({ length: 12 }, (_, i) => ex.do(reqs[i % 3], charge(calls, 150))));
  assert.equal(calls.n, 3);
  for (const [i, r] of results.entries()) {
    const executed = results.find((x, j) => j % 3 === i % 3 && x.kind === ResultKind.Executed);
    assert.ok(executed, `no execution of key ${i % 3}`);
    assert.deepEqual(r.response, executed.response);
  }
  // Every request applies at least once and each execution completes; how
  // many found their key in flight (and applied again once woken) depends
  // on the host's pace, so only that some did is asserted: a request that
  // came after its key's completion is a plain replay.
  const applies = lines.slice(1);
  assert.ok(applies.length >= 12 + 3, `only ${applies.length} applies recorded`);
  assert.ok(applies.some((l) => l.transition?.decision === 'in_flight'), 'no request found its key in flight: no waiter was woken');
});

test('the PostgreSQL store\'s history under concurrent requests is linearizable (Go\'s cmd/lincheck)', async () => {
  const lines = [policyLine(policy)];
  const ex = createExecutor({ core, store: recordingStore(store, lines), policy: { ...policy, inFlightWait: 30n * MS } });
  const reqs = [request(), request(), request(), request()];
  await Promise.all(Array.from({ length: 48 }, async (_, i) => {
    await sleep(i % 11);
    try {
      await ex.do(reqs[i % 4], async () => {
        await sleep(i % 7);
        if (i % 9 === 0) throw new NotExecutedError('declined', { code: 'declined' });
        if (i % 13 === 0) throw new Error('gateway timeout');
        return { statusCode: 201, headers: null, body: new TextEncoder().encode(`{"n":${i}}`) };
      });
    } catch { /* in_progress, not_executed, outcome_unknown: the history is what is checked */ }
  }));
  assert.ok(lines.length > 48, `only ${lines.length - 1} operations recorded`);
  const { status, out } = lincheck(lines);
  assert.equal(status, 0, out);
  assert.match(out, /events: Ok/);
});

test('concurrent retries of a released key on PostgreSQL: one wins the update, the others wait and replay', async () => {
  const lines = [policyLine(policy)];
  const ex = createExecutor({ core, store: recordingStore(store, lines), policy });
  for (let k = 0; k < 4; k++) {
    const req = request();
    await assert.rejects(ex.do(req, async () => { throw new NotExecutedError('declined', { code: 'declined' }); }), (err) => err.code === 'not_executed');
    const calls = { n: 0 };
    // Every retry loads the failed_retryable record and steps Execute: each
    // writes an update under the same (version, token), and only one may win.
    const results = await Promise.all(Array.from({ length: 6 }, () => ex.do(req, charge(calls, 100))));
    assert.equal(calls.n, 1, `key ${k}: executed ${calls.n} times`);
    for (const r of results) assert.deepEqual(r.response, results.find((x) => x.kind === ResultKind.Executed).response);
  }
  const { status, out } = lincheck(lines);
  assert.equal(status, 0, out);
});

test("fnv64 is store/pgx's hashStrings (the NOTIFY channel and payload Go and Node waiters share)", () => {
  // The vectors of store/pgx/hashvectors_test.go.
  const vectors = [
    [['a'], 'd80d0daea7dbdd7f'],
    [['', 'p', 'payments.create', '8e03978e-40d5-43e8-bc93-6894a57f9324'], 'd7c6f9fa43ac9a61'],
    [['public', 'idem_records'], '539a73c9eb7eac8c'],
    [['ténant', '😀', ''], '385ff60d54ded0e0'],
  ];
  for (const [parts, hash] of vectors) assert.equal(fnv64(...parts), hash, JSON.stringify(parts));
});

test('a reserve inserts first while almost none finds a record, and sends the insert-or-read once most do (FoundShare)', async () => {
  const sent = [];
  const counting = new Proxy(pool, {
    get(target, name) {
      if (name === 'query') return (q, ...rest) => { sent.push(typeof q === 'string' ? q : q.text); return target.query(q, ...rest); };
      const v = target[name];
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  const s = createPgStore(core, counting, { schema });
  try {
    const ex = createExecutor({ core, store: s, policy });
    const calls = { n: 0 };
    const firstOf = (texts) => texts.find((t) => /^\s*(WITH cur|INSERT INTO)/.test(t)).trim().slice(0, 8);
    const req = request();
    sent.length = 0;
    assert.equal((await ex.do(req, charge(calls))).kind, ResultKind.Executed);
    assert.equal(firstOf(sent), 'INSERT I', 'a new key on a fresh store: the plain insert');
    for (let i = 0; i < 40; i++) assert.equal((await ex.do(req, charge(calls))).kind, ResultKind.Replayed);
    sent.length = 0;
    assert.equal((await ex.do(request(), charge(calls))).kind, ResultKind.Executed);
    assert.equal(firstOf(sent), 'WITH cur', 'after 40 replays: the insert-or-read');
    assert.equal(calls.n, 2);
  } finally {
    await s.close();
  }
});

test('a table partitioned by Go\'s pgxstore.Partition is refused before any insert: its primary key no longer keeps a scope to one row', async () => {
  const part = await migratedSchema(pool, 'idem_node_part');
  // A store that knew the table as plain before it was partitioned: its
  // inserts name the scope's key, which the partitioned table has not.
  const before = createPgStore(core, pool, { schema: part });
  const calls = { n: 0 };
  await createExecutor({ core, store: before, policy }).do(request(), charge(calls));
  assert.equal(calls.n, 1);
  try {
    // The layout pgxstore.Partition leaves, as far as this store can tell:
    // the table is partitioned by created_at.
    await pool.query(`ALTER TABLE ${part}.idem_records RENAME TO idem_records_legacy`);
    await pool.query(`CREATE TABLE ${part}.idem_records (LIKE ${part}.idem_records_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (created_at)`);
    await pool.query(`CREATE TABLE ${part}.idem_records_default PARTITION OF ${part}.idem_records DEFAULT`);
    const refused = createPgStore(core, pool, { schema: part });
    await assert.rejects(createExecutor({ core, store: refused, policy }).do(request(), charge(calls)), (e) => /idempotency_store_rejected: pgstore: .* is partitioned/.test(e.message));
    await assert.rejects(createExecutor({ core, store: before, policy }).do(request(), charge(calls)), /no unique or exclusion constraint matching the ON CONFLICT/);
    assert.equal(calls.n, 1);
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${part}.idem_records`);
    assert.equal(rows[0].n, 0); // the row written before stayed in the renamed table
    await refused.close();
    await before.close();
  } finally {
    await pool.query(`DROP SCHEMA ${part} CASCADE`);
  }
});
