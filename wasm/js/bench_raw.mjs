// node wasm/js/bench_raw.mjs: the floor of a Node driver over the pg
// package (issue 23 §4, BENCHMARKS.md "Node.js"): a new key's two
// statements (an insert of the in-progress row with a token from the
// sequence, then the completion's fenced update), sent straight from pg
// with no executor, no module and no checks, from 16 concurrent requests
// on store/pgx's table: three rounds through pg's own queries, then three
// through pgwire.mjs (what the store sends them with). What do() reaches
// is compared with this.
import pg from 'pg';
import { Statement, exec } from './pgwire.mjs';
import { dsn, migratedSchema } from './testdata/pgschema.mjs';

const pool = new pg.Pool({ connectionString: dsn, max: 16 });
const schema = await migratedSchema(pool, 'idem_bench_raw');
const t = `${schema}.idem_records`;
const insert = new Statement('raw-insert', `INSERT INTO ${t} (tenant, principal, use_case, idem_key, status, fingerprint, token, version, created_at, updated_at, locked_until, expires_at)
    VALUES ('', $1, $2, $3, 'in_progress', $4, nextval('${schema}.idem_records_token_seq'), 1, now(), now(), now() + interval '5 minutes', now() + interval '1 day')
    RETURNING token, now()`);
const update = new Statement('raw-update', `UPDATE ${t} SET status = 'completed', version = 2, response_status = $5, response_header_names = $6, response_header_values = $7,
    response_body = $8, locked_until = NULL, completed_at = now(), updated_at = now(), expires_at = now() + interval '1 day'
    WHERE tenant = '' AND principal = $1 AND use_case = $2 AND idem_key = $3 AND version = 1 AND token = $4 RETURNING now()`);
// The two ways to send a statement, each answering the new row's token.
const ways = {
  'pg': async (st, values) => (await pool.query({ name: st.name, text: st.text, values })).rows[0]?.token,
  'pgwire': async (st, values) => (await exec(pool, st, values)).rows[0]?.[0],
};
const fingerprint = Buffer.alloc(32, 7);
const body = Buffer.from('{"paymentId":"p_1","status":"created"}');
let keys = 0;
try {
  for (const [way, send] of Object.entries(ways)) {
    for (let round = 0; round < 3; round++) {
      let done = 0;
      const end = Date.now() + 5000;
      await Promise.all(Array.from({ length: 16 }, async () => {
        while (Date.now() < end) {
          const key = `raw-${(++keys).toString().padStart(12, '0')}-0123456789`;
          const token = await send(insert, ['merchant', 'payments.create', key, fingerprint]);
          await send(update, ['merchant', 'payments.create', key, token, 201, [], [], body]);
          done++;
        }
      }));
      console.log(`node ${way}, the two statements alone, new key, 16 concurrent: ${(done / 5).toFixed(0)} req/s`);
    }
  }
} finally {
  await pool.query(`DROP SCHEMA ${schema} CASCADE`);
  await pool.end();
}
