// node --test: pgwire.mjs, a statement's execution without pg's Query, on
// a real PostgreSQL (IDEM_PG_DSN): its values reach the server as pg's own
// queries send them, and the answers come back as the server's text.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { Statement, exec } from './pgwire.mjs';
import { dsn } from './testdata/pgschema.mjs';

// One connection: what a statement leaves on it is seen by the next.
const pool = new pg.Pool({ connectionString: dsn, max: 1 });
after(() => pool.end());

const echo = new Statement('pgwire_test_echo', 'SELECT $1::text, $2::text, $3::bytea, $4::int, $5::text[], $6::bytea[], $7::text');

test('values go as pg sends them: text as UTF-8, a Buffer as bytes, arrays as array text, null as NULL', async () => {
  const bytes = Buffer.from([0, 1, 0xfe, 0xff]);
  const values = ['ascii-key', 'ténant é ü 😀 \u0080', bytes, 201, ['Content-Type', 'X-Ü'], [Buffer.from('é'), Buffer.alloc(0)], null];
  const { rows, rowCount } = await exec(pool, echo, values);
  assert.equal(rowCount, 1);
  assert.deepEqual(rows, [['ascii-key', 'ténant é ü 😀 \u0080', '\\x0001feff', '201', '{Content-Type,X-Ü}', '{"\\\\xc3a9","\\\\x"}', null]]);
  // pg's own query of the same values reads the same back.
  const theirs = await pool.query({ text: echo.text, values, rowMode: 'array' });
  assert.deepEqual(theirs.rows[0].slice(0, 2), rows[0].slice(0, 2));
});

test('a statement is parsed once per connection: a second run binds it again, and pg\'s own queries share the books', async () => {
  const st = new Statement('pgwire_test_once', 'SELECT $1::int + 1');
  assert.deepEqual((await exec(pool, st, [1])).rows, [['2']]);
  // Parsed again under the same name, the server would refuse it (the name exists).
  assert.deepEqual((await exec(pool, st, [2])).rows, [['3']]);
  const { rows } = await pool.query('SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name = $1', [st.name]);
  assert.deepEqual(rows, [{ n: 1 }]);
  assert.deepEqual((await pool.query({ name: st.name, text: st.text, values: [3], rowMode: 'array' })).rows, [[4]]);
});

test('rowCount is the command\'s: rows a write touched, rows a SELECT returned, none', async () => {
  await pool.query('CREATE TEMP TABLE IF NOT EXISTS pgwire_test_t (x int)');
  const ins = new Statement('pgwire_test_ins', 'INSERT INTO pgwire_test_t SELECT generate_series(1, $1::int)');
  assert.equal((await exec(pool, ins, [3])).rowCount, 3);
  const upd = new Statement('pgwire_test_upd', 'UPDATE pgwire_test_t SET x = x WHERE x > $1::int');
  const u = await exec(pool, upd, [1]);
  assert.equal(u.rowCount, 2);
  assert.deepEqual(u.rows, []);
  const sel = new Statement('pgwire_test_sel', 'SELECT x FROM pgwire_test_t WHERE x > $1::int ORDER BY x');
  assert.deepEqual((await exec(pool, sel, [10])).rows, []);
  assert.equal((await exec(pool, sel, [10])).rowCount, 0);
});

test('a statement the server refuses rejects with its error, and the pool goes on', async () => {
  const bad = new Statement('pgwire_test_bad', 'SELECT 1 / $1::int');
  await assert.rejects(exec(pool, bad, [0]), (err) => err.code === '22012'); // division_by_zero
  const syntax = new Statement('pgwire_test_syntax', 'SELEC $1');
  await assert.rejects(exec(pool, syntax, [1]), (err) => err.code === '42601');
  assert.deepEqual((await exec(pool, bad, [2])).rows, [['0']]);
});

test("a pool in pg's pipeline mode, which takes no submittable of another class: the same rows, through pg's own Query", async () => {
  const piped = new pg.Pool({ connectionString: dsn, max: 1, pipeline: true });
  try {
    const values = ['ascii-key', 'ténant é', Buffer.from([0, 0xff]), 201, ['A'], [Buffer.from('é')], null];
    const [a, b] = await Promise.all([exec(piped, echo, values), exec(pool, echo, values)]);
    assert.deepEqual(a.rows, b.rows);
    assert.equal(a.rowCount, b.rowCount);
  } finally {
    await piped.end();
  }
});

test('a value pg cannot map is refused before anything is sent, and the pool goes on', async () => {
  const circular = {};
  circular.self = circular;
  await assert.rejects(exec(pool, echo, [circular, 'b', null, 1, [], [], null]), TypeError);
  assert.deepEqual((await exec(pool, echo, ['a', 'b', null, 1, [], [], null])).rows, [['a', 'b', null, '1', '{}', '{}', null]]);
});
