// The Go conformance suite's scenarios as data
// (store/storetest/testdata/scenarios.json, SCENARIOS.md) run on the Node
// stores: the same events, the same decisions, writes and records.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { load, policyDefault } from './idem.mjs';
import { createMemoryStore } from './memstore.mjs';
import { createPgStore } from './pgstore.mjs';
import { migratedSchema, dsn } from './testdata/pgschema.mjs';

// IDEM_REPO_ROOT: the repository, when this package runs from a copy (the
// mutant harness's).
const root = process.env.IDEM_REPO_ROOT ? pathToFileURL(`${process.env.IDEM_REPO_ROOT}/`) : new URL('../../', import.meta.url);
const file = JSON.parse(await readFile(new URL('store/storetest/testdata/scenarios.json', root), 'utf8'));
const core = await load();

// The scenarios' two fingerprints, A and B, as the file gives them.
const FINGERPRINTS = Object.fromEntries(Object.entries(file.fingerprints).map(([name, hex]) => [name, Buffer.from(hex, 'hex')]));

const responseOf = (r) => ({
  statusCode: r.StatusCode, schemaVersion: r.SchemaVersion,
  headers: r.Headers === null ? null : r.Headers.map((h) => ({ name: h.Name, value: h.Value })),
  body: r.Body === null ? null : new Uint8Array(Buffer.from(r.Body, 'base64')),
});

/** Runs scenario sc on store; throws at the first difference. */
async function runScenario(store, sc, run) {
  const policy = { ...policyDefault(), fail: sc.failMode ?? 0 };
  const key = `${run}-${sc.name.replaceAll(' ', '-')}`;
  const scopes = [
    { tenant: 'scn', principal: 'alice', useCase: 'scenario', key: `${key}-k1` },
    { tenant: 'scn', principal: 'bob', useCase: 'scenario', key: `${key}-k1` },
    { tenant: 'scn', principal: 'alice', useCase: 'scenario', key: `${key}-k2` },
  ];
  const tokens = new Map();
  for (const [i, st] of sc.steps.entries()) {
    const where = `${sc.name}: step ${i} (${st.event.kindName} on scope ${st.scope})`;
    const ev = { kind: st.event.kind, now: 0n, errorCode: st.event.errorCode ?? '', verdict: st.event.verdict ?? 0 };
    if (st.event.fingerprint) ev.fingerprint = FINGERPRINTS[st.event.fingerprint];
    if (st.event.response) ev.response = responseOf(st.event.response);
    if (st.event.token === 'stale') ev.token = (1n << 62n) + 12345n;
    else if (st.event.token) ev.token = tokens.get(st.event.token);
    const a = await store.apply(scopes[st.scope], ev, policy);
    const w = st.want;
    assert.equal(a.transition.decision.kind, w.decision, `${where}: decision, want ${w.decisionName}`);
    assert.equal(a.transition.write.kind, w.write, `${where}: write`);
    assert.equal(a.record.status, w.status, `${where}: status, want ${w.statusName}`);
    assert.equal(a.record.version, BigInt(w.version), `${where}: version`);
    if (w.response) {
      const got = a.record.response;
      const want = responseOf(w.response);
      assert.deepEqual({ ...got, statusCode: Number(got.statusCode) }, want, `${where}: response`);
    }
    if (w.token) {
      if (tokens.has(w.token)) assert.equal(a.record.token, tokens.get(w.token), `${where}: token ${w.token}`);
      else {
        for (const [name, t] of tokens) assert.notEqual(a.record.token, t, `${where}: a fresh token repeats ${name}'s`);
        tokens.set(w.token, a.record.token);
      }
    }
    if (w.decisionToken) assert.equal(a.transition.decision.token, tokens.get(w.decisionToken), `${where}: the decision's token`);
  }
}

const run = randomBytes(4).toString('hex');

for (const sc of file.scenarios) {
  test(`scenario on the memory store: ${sc.name}`, () => runScenario(createMemoryStore(core), sc, run));
}

const pool = new pg.Pool({ connectionString: dsn, max: 4 });
const schema = await migratedSchema(pool, 'idem_js_scenarios');
after(async () => {
  await pool.query(`DROP SCHEMA ${schema} CASCADE`);
  await pool.end();
});
for (const sc of file.scenarios) {
  test(`scenario on the PostgreSQL store: ${sc.name}`, async () => {
    const store = createPgStore(core, pool, { schema });
    try {
      await runScenario(store, sc, run);
    } finally {
      await store.close();
    }
  });
}
