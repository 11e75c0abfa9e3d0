// node wasm/js/bench_do.mjs: the Node executor's cost (issue 23 §4), beside
// Go's (BENCHMARKS.md, "Node"): a new key and a replay through do() on the
// memory store, one at a time; and new keys on PostgreSQL (IDEM_PG_DSN)
// from 16 concurrent requests, in a schema of its own made by store/pgx's
// migrations and dropped at the end.
import { createHash } from 'node:crypto';
import pg from 'pg';
import { load, policyDefault } from './idem.mjs';
import { createExecutor } from './executor.mjs';
import { createMemoryStore } from './memstore.mjs';
import { createPgStore } from './pgstore.mjs';
import { dsn, migratedSchema } from './testdata/pgschema.mjs';

// IDEM_BENCH_WASM=FILE: another build of the module (an unstripped one, so
// that a profile names the guest's functions).
const core = await load(process.env.IDEM_BENCH_WASM ? { wasm: process.env.IDEM_BENCH_WASM } : {});
const policy = policyDefault();
const fingerprint = createHash('sha256').update('bench').digest();
const response = { statusCode: 201, headers: null, body: new TextEncoder().encode('{"paymentId":"p_1","status":"created"}') };
const action = async () => response;
const request = (key) => ({ principal: 'merchant', useCase: 'payments.create', key, fingerprint });
let keys = 0;
const newKey = () => `bench-${(++keys).toString().padStart(12, '0')}-0123456789`;

async function perOp(label, n, fn) {
  for (let i = 0; i < n / 10; i++) await fn(i); // warm up
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn(i);
  console.log(`${label}: ${(Number(process.hrtime.bigint() - start) / n / 1000).toFixed(1)} µs/op`);
}

// IDEM_BENCH_PG_ROUNDS=n IDEM_BENCH_PG_SECONDS=s: the PostgreSQL rounds
// alone, n of s seconds (bench_ratio.sh alternates them with Go's).
const pgRounds = Number(process.env.IDEM_BENCH_PG_ROUNDS || 3);
const pgSeconds = Number(process.env.IDEM_BENCH_PG_SECONDS || 5);
const pgOnly = process.env.IDEM_BENCH_PG_ROUNDS !== undefined;

const mem = createExecutor({ core, store: createMemoryStore(core), policy });
if (!pgOnly) {
  await perOp('node do, memory store, new key', 5000, () => mem.do(request(newKey()), action));
  const replayKey = newKey();
  await mem.do(request(replayKey), action);
  await perOp('node do, memory store, replay', 5000, () => mem.do(request(replayKey), action));
}

// IDEM_BENCH_MEMORY_ONLY=1: the memory store alone (to profile the host's
// own work, with node --cpu-prof).
if (process.env.IDEM_BENCH_MEMORY_ONLY) process.exit(0);

const pool = new pg.Pool({ connectionString: dsn, max: 16 });
const schema = await migratedSchema(pool, 'idem_bench');
const store = createPgStore(core, pool, { schema });
const ex = createExecutor({ core, store, policy });
try {
  // A second of warm-up (connections, prepared statements, the JIT), then the rounds.
  for (let round = -1; round < pgRounds; round++) {
    let done = 0;
    const seconds = round < 0 ? 1 : pgSeconds;
    const end = Date.now() + seconds * 1000;
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (Date.now() < end) { await ex.do(request(newKey()), action); done++; }
    }));
    if (round >= 0) console.log(`node do, PostgreSQL, new key, 16 concurrent: ${(done / seconds).toFixed(0)} req/s`);
  }
} finally {
  await store.close();
  await pool.query(`DROP SCHEMA ${schema} CASCADE`);
  await pool.end();
}
