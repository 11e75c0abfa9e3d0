// A PostgreSQL store for Node.js over the `pg` package, on the table of Go's
// store/pgx (its migrations, ../../store/pgx/migrations, create it): a Go
// service and a Node service share one table. Each event is stepped
// through the core (the module), as Go's drivers step it: load the record
// with the database's clock and a fresh token (idem_records_load), step,
// write what the core decided under the (version, token) precondition, and
// load again when another writer won. Writes to a row a waiter marked send
// the NOTIFY Go's waiters listen for, and this store's waiters listen for
// Go's.

import { absentRecord, EventKind, WriteKind } from './idem.mjs';
import { StoreRejectedError } from './flow.mjs';

const STATUS = ['absent', 'in_progress', 'completed', 'failed_retryable', 'unknown', 'expired'];
const statusOf = (name) => (name === null ? 0 : STATUS.indexOf(name));

// fnv64 is Go's hashStrings (store/pgx/record.go): FNV-1a over each part's
// length (4 bytes, little-endian) and bytes, as 16 hex digits.
function fnv64(...parts) {
  let h = 0xcbf29ce484222325n;
  const step = (x) => { h ^= BigInt(x); h = (h * 0x100000001b3n) & 0xffffffffffffffffn; };
  for (const p of parts) {
    const b = Buffer.from(p, 'utf8');
    const l = b.length;
    [l & 255, (l >>> 8) & 255, (l >>> 16) & 255, (l >>> 24) & 255].forEach(step);
    b.forEach(step);
  }
  return h.toString(16).padStart(16, '0');
}

const quote = (id) => `"${id.replaceAll('"', '""')}"`;
// A time column read as Unix microseconds (exact: EXTRACT gives numeric).
const us = (col) => `(EXTRACT(EPOCH FROM ${col}) * 1000000)::bigint::text AS ${col}`;
// A time parameter given as Unix microseconds (null: none).
const ts = (n) => `('epoch'::timestamptz + $${n}::bigint * interval '1 microsecond')`;
const nsOf = (v) => (v === null ? null : BigInt(v) * 1000n);
const usOf = (t) => (t === null || t === undefined ? null : String(t / 1000n));

const RECORD_COLS = ['status', 'fingerprint', 'token', 'version', 'response_status', 'response_header_names',
  'response_header_values', 'response_body', 'response_schema_version', 'last_error_code', 'locked_until',
  'reconcile_after', 'reconcile_attempts', 'created_at', 'completed_at', 'expires_at'];
const TIME_COLS = new Set(['locked_until', 'reconcile_after', 'created_at', 'completed_at', 'expires_at']);

/**
 * Creates a store over pool (a pg.Pool) on schema's table (store/pgx's
 * defaults: the schema the migrations ran in, table idem_records), stepping
 * every event through core.
 */
export function createPgStore(core, pool, { schema = 'public', table = 'idem_records' } = {}) {
  const qualified = `${quote(schema)}.${quote(table)}`;
  const channel = `idem_${fnv64(schema, table)}`;
  const scopeArgs = (s) => [s.tenant ?? '', s.principal, s.useCase, s.key];
  const selectCols = RECORD_COLS.map((c) => (TIME_COLS.has(c) ? us(c) : c === 'token' || c === 'version' || c === 'response_schema_version' ? `${c}::text` : c)).join(', ');
  const loadSQL = `SELECT ${us('now')}, tok::text, ${selectCols} FROM ${quote(schema)}.idem_records_load($1, $2, $3, $4)`;
  const scopeWhere = 'tenant = $1 AND principal = $2 AND use_case = $3 AND idem_key = $4';
  const values = (first) => RECORD_COLS.map((c, i) => (TIME_COLS.has(c) ? ts(first + i) : `$${first + i}`));
  const insertSQL = `INSERT INTO ${qualified} (tenant, principal, use_case, idem_key, ${RECORD_COLS.join(', ')}, updated_at)
    VALUES ($1, $2, $3, $4, ${values(5).join(', ')}, statement_timestamp()) ON CONFLICT DO NOTHING`;
  const notify = (flag) => `CASE WHEN ${flag} THEN (SELECT false FROM pg_notify($23, $24)) ELSE false END`;
  const updateSQL = `UPDATE ${qualified} AS t SET ${RECORD_COLS.map((c, i) => `${c} = ${values(5)[i]}`).join(', ')},
    updated_at = statement_timestamp(), waiters = ${notify('t.waiters')}
    WHERE ${scopeWhere} AND version = $21 AND token = $22`;
  const deleteSQL = `WITH del AS (DELETE FROM ${qualified} WHERE ${scopeWhere} AND version = $5 AND token = $6 RETURNING waiters)
    SELECT CASE WHEN del.waiters THEN (SELECT false FROM pg_notify($7, $8)) ELSE false END FROM del`;
  const markSQL = `UPDATE ${qualified} SET waiters = true WHERE ${scopeWhere} AND version = $5 AND token = $6 RETURNING true`;

  function recordOf(s, row) {
    if (row.status === null) return absentRecord(s);
    return {
      tenant: s.tenant ?? '', principal: s.principal, useCase: s.useCase, key: s.key,
      status: statusOf(row.status), fingerprint: new Uint8Array(row.fingerprint), token: BigInt(row.token), version: BigInt(row.version),
      response: {
        statusCode: row.response_status,
        // No headers read back as none (nil): the core takes nil and empty
        // for the same response, and the table keeps no difference.
        headers: row.response_header_names.length === 0 ? null
          : row.response_header_names.map((name, i) => ({ name, value: Buffer.from(row.response_header_values[i]).toString('utf8') })),
        body: row.response_body === null ? null : new Uint8Array(row.response_body),
        schemaVersion: Number(row.response_schema_version),
      },
      lastErrorCode: row.last_error_code, lockedUntil: nsOf(row.locked_until), reconcileAfter: nsOf(row.reconcile_after),
      reconcileAttempts: Number(row.reconcile_attempts),
      createdAt: nsOf(row.created_at), completedAt: nsOf(row.completed_at), expiresAt: nsOf(row.expires_at),
    };
  }

  function params(r) {
    const resp = r.response;
    const headers = resp.headers ?? [];
    return [STATUS[r.status], Buffer.from(r.fingerprint), String(r.token), String(r.version), resp.statusCode,
      headers.map((h) => h.name), headers.map((h) => Buffer.from(h.value, 'utf8')),
      resp.body === null || resp.body === undefined ? null : Buffer.from(resp.body), String(resp.schemaVersion ?? 0),
      r.lastErrorCode, usOf(r.lockedUntil), usOf(r.reconcileAfter), String(r.reconcileAttempts),
      usOf(r.createdAt), usOf(r.completedAt), usOf(r.expiresAt)];
  }

  // write makes the core's write under its precondition; false: another
  // writer won, load again.
  async function write(s, t, rec) {
    const args = scopeArgs(s);
    switch (t.write.kind) {
      case WriteKind.None: return true;
      case WriteKind.Insert: return (await pool.query(insertSQL, [...args, ...params(rec)])).rowCount === 1;
      case WriteKind.Update:
        return (await pool.query(updateSQL, [...args, ...params(rec), String(t.write.expectVersion), String(t.write.expectToken),
          channel, fnv64(...args)])).rowCount === 1;
      case WriteKind.Delete:
        return (await pool.query(deleteSQL, [...args, String(t.write.expectVersion), String(t.write.expectToken), channel, fnv64(...args)])).rowCount === 1;
    }
    throw new StoreRejectedError(`pgstore: the core asked for write kind ${t.write.kind}`);
  }

  // The LISTEN connection and the waiters by payload, made once: the first
  // wait makes it, and every wait meanwhile awaits the same promise.
  let listener = null;
  function listen() {
    listener ??= (async () => {
      const client = await pool.connect();
      const waiters = new Map();
      client.on('notification', (n) => { for (const w of waiters.get(n.payload) ?? []) w(); });
      await client.query(`LISTEN ${quote(channel)}`);
      return { client, waiters };
    })();
    return listener;
  }

  return {
    /** Applies event to scope's record, as Go's store.Apply: {before, record, transition, now, appliedEvent}. */
    async apply(scope, event, policy) {
      for (let attempt = 0; attempt < 16; attempt++) {
        const { rows } = await pool.query(loadSQL, scopeArgs(scope));
        const before = recordOf(scope, rows[0]);
        const ev = { ...event, now: nsOf(rows[0].now) };
        if (ev.kind === EventKind.Reserve) ev.token = BigInt(rows[0].tok);
        const { transition, record } = core.step(before, ev, policy);
        if (await write(scope, transition, record)) return { before: before.status, record, transition, now: ev.now, appliedEvent: ev };
      }
      throw new Error('pgstore: too many concurrent writes to one scope');
    },

    /** Resolves once scope's record changed from (version, token), after waitMs, or when signal aborts. */
    async wait(scope, version, token, waitMs, signal) {
      const l = await listen();
      const key = fnv64(...scopeArgs(scope));
      let wake;
      const woken = new Promise((resolve) => { wake = resolve; });
      if (!l.waiters.has(key)) l.waiters.set(key, new Set());
      l.waiters.get(key).add(wake);
      const timer = setTimeout(wake, waitMs);
      const onAbort = () => wake();
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        const marked = await pool.query(markSQL, [...scopeArgs(scope), String(version), String(token)]);
        if (marked.rowCount === 1) await woken; // still the record waited for: sleep until a write
      } finally {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        l.waiters.get(key)?.delete(wake);
      }
    },

    /** Releases the LISTEN connection (the pool is the caller's). */
    async close() {
      const l = listener;
      listener = null;
      if (l) (await l).client.release();
    },
  };
}
