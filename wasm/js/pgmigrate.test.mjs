// migrate: store/pgx's migrations from Node, as pgxstore.Migrate runs them.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrate, SCHEMA_VERSION } from './pgmigrate.mjs';
import { load, policyDefault } from './idem.mjs';
import { createExecutor } from './executor.mjs';
import { createPgStore } from './pgstore.mjs';
import { dsn } from './testdata/pgschema.mjs';

const pool = new pg.Pool({ connectionString: dsn, max: 8 });
const made = [];
const schemaName = () => { const s = `idem_jsmigrate_${randomBytes(6).toString('hex')}`; made.push(s); return s; };
after(async () => {
  for (const s of made) await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await pool.end();
});

const versionOf = async (schema) => (await pool.query(`SELECT obj_description('${schema}.idem_records'::regclass, 'pg_class') AS c`)).rows[0].c;

test('migrate makes the table at the schema version, once, even when many start at once', async () => {
  const schema = schemaName();
  await Promise.all([1, 2, 3, 4].map(() => migrate(pool, { schema })));
  assert.match(await versionOf(schema), new RegExp(`idem schema version ${SCHEMA_VERSION}$`));
  await migrate(pool, { schema }); // nothing left to do
  const core = await load();
  const ex = createExecutor({ core, store: createPgStore(core, pool, { schema }), policy: policyDefault() });
  const r = await ex.do({ principal: 'p', useCase: 'u', key: 'k'.repeat(16), fingerprint: new Uint8Array(32).fill(7) }, async () => ({ statusCode: 201, body: new Uint8Array([1]) }));
  assert.equal(r.response.statusCode, 201);
});

test('migrate refuses a table that is not an idem table, and one of a newer version', async () => {
  const foreign = schemaName();
  await pool.query(`CREATE SCHEMA ${foreign}; CREATE TABLE ${foreign}.idem_records (x int)`);
  await assert.rejects(migrate(pool, { schema: foreign }), /carries no idem schema version/);
  const newer = schemaName();
  await migrate(pool, { schema: newer });
  await pool.query(`COMMENT ON TABLE ${newer}.idem_records IS 'idem schema version ${SCHEMA_VERSION + 1}'`);
  await assert.rejects(migrate(pool, { schema: newer }), /newer than this package's/);
  await assert.rejects(migrate(pool, { schema: 'a\0b' }), TypeError);
});
