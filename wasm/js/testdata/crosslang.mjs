// The Node side of store/pgx's TestGoAndNodeShareOneTable: an executor
// over pgstore.mjs on the schema Go made (IDEM_PG_DSN, IDEM_PG_SCHEMA),
// doing the plan of IDEM_PLAN ({replay, execute, race: keys}) and printing
// what it answered, as JSON, for Go to compare with its own answers.
import { createHash } from 'node:crypto';
import pg from 'pg';
import { load, policyDefault } from '../idem.mjs';
import { createExecutor } from '../executor.mjs';
import { createPgStore } from '../pgstore.mjs';

const plan = JSON.parse(process.env.IDEM_PLAN);
const core = await load();
const pool = new pg.Pool({ connectionString: process.env.IDEM_PG_DSN, max: 8 });
const store = createPgStore(core, pool, { schema: process.env.IDEM_PG_SCHEMA });
const ex = createExecutor({ core, store, policy: { ...policyDefault(), inFlightWait: 5_000_000_000n } });
const fingerprint = createHash('sha256').update('cross-language').digest();
const request = (key) => ({ tenant: 'acme', principal: 'user-1', useCase: 'payments.create', key, fingerprint });
let executions = 0;
const action = (key, ms) => async () => {
  executions++;
  await new Promise((r) => setTimeout(r, ms));
  return { statusCode: 201, headers: [{ name: 'Content-Type', value: 'application/json' }, { name: 'X-Server', value: 'node é' }], body: new TextEncoder().encode(`{"key":"${key}","by":"node"}`) };
};
const show = (r) => ({
  kind: r.kind, token: String(r.token), status: r.response.statusCode, headers: r.response.headers,
  body: r.response.body === null ? null : Buffer.from(r.response.body).toString('base64'),
});
const out = { answers: {}, executions: 0 };
for (const key of [...plan.replay, ...plan.execute]) out.answers[key] = show(await ex.do(request(key), action(key, 0)));
await new Promise((r) => setTimeout(r, Math.max(0, Number(process.env.IDEM_START_AT) - Date.now())));
await Promise.all([...plan.race].reverse().map(async (key) => {
  await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 40)));
  out.answers[key] = show(await ex.do(request(key), action(key, 300)));
}));
out.executions = executions;
await store.close();
await pool.end();
console.log(JSON.stringify(out));
