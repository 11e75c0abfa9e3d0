// A PostgreSQL store for Node.js over the `pg` package, on the table of Go's
// store/pgx (its migrations, ../../store/pgx/migrations, create it): a Go
// service and a Node service share one table. Each event is stepped
// through the core (the module), as Go's drivers step it: load the record
// with the database's clock and a fresh token (idem_records_load), step,
// write what the core decided under the (version, token) precondition, and
// load again when another writer won. Writes to a row a waiter marked send
// the NOTIFY Go's waiters listen for, and this store's waiters listen for
// Go's.

import pg from 'pg';
import { absentRecord, EventKind, WriteKind } from './idem.mjs';
import { StoreRejectedError } from './flow.mjs';
import { Statement, exec } from './pgwire.mjs';

const STATUS = ['absent', 'in_progress', 'completed', 'failed_retryable', 'unknown', 'expired'];
const statusOf = (name) => (name === null ? 0 : STATUS.indexOf(name));

// fnv64 is Go's hashStrings (store/pgx/record.go; exported for its test): FNV-1a over each part's
// length (4 bytes, little-endian) and bytes, as 16 hex digits.
export function fnv64(...parts) {
  // The 64-bit state as four 16-bit limbs (little-endian), so that the
  // multiply by the prime (2^40 + 0x1b3) stays exact in doubles.
  let h0 = 0x2325; let h1 = 0x8422; let h2 = 0x9ce4; let h3 = 0xcbf2; // 0xcbf29ce484222325
  const step = (x) => {
    h0 ^= x;
    const c0 = h0 * 0x1b3;
    const c1 = h1 * 0x1b3 + (c0 >>> 16);
    const c2 = h2 * 0x1b3 + h0 * 0x100 + (c1 >>> 16);
    const c3 = h3 * 0x1b3 + h1 * 0x100 + (c2 >>> 16);
    h0 = c0 & 0xffff; h1 = c1 & 0xffff; h2 = c2 & 0xffff; h3 = c3 & 0xffff;
  };
  for (const p of parts) {
    // An ASCII string is its own UTF-8 (keys and names are, mostly): its
    // bytes are read without encoding it.
    const b = isASCII(p) ? null : Buffer.from(p, 'utf8');
    const l = b === null ? p.length : b.length;
    step(l & 255); step((l >>> 8) & 255); step((l >>> 16) & 255); step((l >>> 24) & 255);
    if (b === null) for (let i = 0; i < l; i++) step(p.charCodeAt(i));
    else for (let i = 0; i < l; i++) step(b[i]);
  }
  const hex = (x) => x.toString(16).padStart(4, '0');
  return hex(h3) + hex(h2) + hex(h1) + hex(h0);
}

function isASCII(s) {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return false;
  return true;
}

const quote = (id) => `"${id.replaceAll('"', '""')}"`;
// A time read as Unix microseconds (exact: EXTRACT gives numeric), as name.
const us = (expr, name = expr) => `(EXTRACT(EPOCH FROM ${expr}) * 1000000)::bigint::text AS ${name}`;
const NOW = us('statement_timestamp()', 'now');
// A time parameter given as Unix microseconds (null: none).
const ts = (n) => `('epoch'::timestamptz + $${n}::bigint * interval '1 microsecond')`;
const nsOf = (v) => (v === null ? null : BigInt(v) * 1000n);
const usOf = (t) => (t === null || t === undefined ? null : String(t / 1000n));

const RECORD_COLS = ['status', 'fingerprint', 'token', 'version', 'response_status', 'response_header_names',
  'response_header_values', 'response_body', 'response_schema_version', 'last_error_code', 'locked_until',
  'reconcile_after', 'reconcile_attempts', 'created_at', 'completed_at', 'expires_at'];
const COL = Object.fromEntries(RECORD_COLS.map((c, i) => [c, i]));
const TIME_INDEX = { locked_until: 0, reconcile_after: 1, created_at: 2, completed_at: 3, expires_at: 4 };
// Where each time is among RECORD_COLS, in TIME_INDEX's order.
const TIME_AT = Object.keys(TIME_INDEX).map((c) => COL[c]);
const TIME_COLS = new Set(['locked_until', 'reconcile_after', 'created_at', 'completed_at', 'expires_at']);

/**
 * Creates a store over pool (a pg.Pool) on schema's table (store/pgx's
 * defaults: the schema the migrations ran in, table idem_records), stepping
 * every event through core.
 */
// The template of a step: the core is stepped at two instants, so that each
// time field is seen to be a literal (the same in both) or the clock plus
// an offset (moved by exactly the shift); anything else, or an offset
// finer than the table's microseconds, and the step is not templated
// (null). As Go's store/pgx does (apply.go), the core stays the authority
// on which field depends on the clock.
const TEMPLATE_T = 946_684_800_000_000_000n; // 2000-01-01T00:00:00Z
const TEMPLATE_SHIFT = 1000n * 3600n * 1_000_000_000n + 7_000n; // 1000 h and 7 µs
const TIME_FIELDS = ['lockedUntil', 'reconcileAfter', 'createdAt', 'completedAt', 'expiresAt'];
// plainReserve reports whether a reserve carries nothing but its
// fingerprint (its other fields Go's zero values), as the one its
// template was stepped with: any other goes through a step of its own.
function plainReserve(ev) {
  const r = ev.response;
  const zeroResponse = r === undefined || (Number(r.statusCode ?? 0) === 0 && (r.headers ?? null) === null && (r.body ?? null) === null && (r.schemaVersion ?? 0) === 0);
  return zeroResponse && (ev.errorCode ?? '') === '' && (ev.verdict ?? 0) === 0 && (ev.token ?? 0n) === 0n;
}

// The scope and fingerprint a new key's template is stepped with.
const PROBE_SCOPE = { tenant: '', principal: 'probe', useCase: 'probe', key: 'probe-probe-probe-probe' };
const PROBE_FINGERPRINT = new Uint8Array(32).fill(1);

function template(core, before, event, policy) {
  // A reserve's token is the sequence's: any non-zero one stands for it.
  const ev = event.kind === EventKind.Reserve ? { ...event, token: 1n } : event;
  const a = core.step(before, { ...ev, now: TEMPLATE_T }, policy);
  // Which field is a literal and which the clock plus an offset is the
  // policy's and the event's kind's, not the record's values: it is
  // learnt once from a second step, at TEMPLATE_T + TEMPLATE_SHIFT, and
  // kept. Should the core ever decide otherwise for another record, the
  // step at the statement's time, which every templated write is checked
  // against, says so (a driver bug, not a silent write).
  const kinds = classesOf(policy);
  const key = `${event.kind}/${event.verdict ?? 0}/${before.status}`;
  let shape = kinds.get(key);
  if (shape === undefined) {
    shape = classify(a, core.step(before, { ...ev, now: TEMPLATE_T + TEMPLATE_SHIFT }, policy));
    kinds.set(key, shape);
  }
  if (shape === null) return null;
  const times = [];
  for (const [i, f] of TIME_FIELDS.entries()) {
    const x = a.record[f];
    if (shape[i] === 'literal') {
      if (x !== null && x % 1000n !== 0n) return null;
      times.push([null, x === null ? null : String(x / 1000n)]);
    } else {
      if (x === null || (x - TEMPLATE_T) % 1000n !== 0n) return null;
      times.push([String((x - TEMPLATE_T) / 1000n), null]);
    }
  }
  return { record: a.record, transition: a.transition, times };
}

// FoundShare is a running share of the last 32 or so reserves that found
// a record (Go's foundShare, store/pgx readfirst.go): while under one in
// eight, a reserve sends the plain insert first; above, the insert-or-read,
// which costs a replay one round trip where the insert would cost two. It
// decides which statement runs, never what is written: both end in the
// same step and check.
export class FoundShare {
  constructor() { this.share = 0; }

  observe(wasFound) { this.share += ((wasFound ? 1 : 0) - this.share) / 32; }

  insertFirst() { return this.share < 1 / 8; }
}

// The shapes learnt by template, per policy object.
const shapes = new WeakMap();
function classesOf(policy) {
  let m = shapes.get(policy);
  if (m === undefined) { m = new Map(); shapes.set(policy, m); }
  return m;
}

// classify is the shape of a step from its records at two instants: each
// time field a literal (the same in both) or the clock plus an offset
// (moved by exactly the shift); null if the transition moved with the
// clock, or a field is neither.
function classify(a, b) {
  if (!sameTransition(a.transition, b.transition)) return null;
  const shape = [];
  for (const f of TIME_FIELDS) {
    const x = a.record[f];
    const y = b.record[f];
    if (x === y) shape.push('literal');
    else if (x !== null && y !== null && y - x === TEMPLATE_SHIFT) shape.push('offset');
    else return null;
  }
  return shape;
}

function sameTransition(x, y) {
  const d = x.decision; const e = y.decision;
  const w = x.write; const v = y.write;
  return d.kind === e.kind && d.token === e.token && d.retryAfter === e.retryAfter
    && w.kind === v.kind && w.expectVersion === v.expectVersion && w.expectToken === v.expectToken;
}

// sameRecord compares the core's record with the row read back.
const SAME_FIELDS = ['status', 'token', 'version', 'lastErrorCode', 'reconcileAttempts', ...TIME_FIELDS];
const NO_BYTES = new Uint8Array(0);
function sameRecord(a, b) {
  if (SAME_FIELDS.some((f) => a[f] !== b[f])) return false;
  if (Buffer.compare(a.fingerprint, b.fingerprint) !== 0) return false;
  const ra = a.response; const rb = b.response;
  return ra.statusCode === rb.statusCode && (ra.schemaVersion ?? 0) === rb.schemaVersion
    && Buffer.compare(ra.body ?? NO_BYTES, rb.body ?? NO_BYTES) === 0
    && sameHeaders(ra.headers ?? [], rb.headers ?? []);
}

function sameHeaders(x, y) {
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (x[i].name !== y[i].name || x[i].value !== y[i].value) return false;
  return true;
}

// The columns of a row as the server writes them in text (pgwire.mjs
// reads no types): bytea in hex (or, under another bytea_output, as pg
// parses it), arrays by pg's parsers.
const byteaParser = pg.types.getTypeParser(17, 'text');
const bytesOf = (s) => (s === null ? null : s.startsWith('\\x') ? hexBytes(s) : new Uint8Array(byteaParser(s)));
// hexBytes decodes bytea's hex output ("\\x0a1b...") into a Uint8Array of
// its own, in JavaScript: a call into Buffer's hex decoder per column
// cost more than the few dozen bytes it decodes.
const HEX = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) { HEX['0123456789abcdef'.charCodeAt(i)] = i; HEX['0123456789ABCDEF'.charCodeAt(i)] = i; }
function hexBytes(s) {
  const u = new Uint8Array((s.length - 2) >>> 1);
  for (let i = 0, j = 2; i < u.length; i++, j += 2) {
    const hi = HEX[s.charCodeAt(j)] ?? -1;
    const lo = HEX[s.charCodeAt(j + 1)] ?? -1;
    if (hi < 0 || lo < 0) throw new Error('pgstore: a bytea column that is not hex');
    u[i] = (hi << 4) | lo;
  }
  return u;
}
const textArrayParser = pg.types.getTypeParser(1009, 'text');
const byteaArrayParser = pg.types.getTypeParser(1001, 'text');
const textsOf = (s) => (s === '{}' ? [] : textArrayParser(s));
const bytesArrayOf = (s) => (s === '{}' ? [] : byteaArrayParser(s));

// ON_SCOPE_CONFLICT is an insert's answer to a row of the scope: nothing
// written. It names the scope's unique key, so that a store made before Go's
// pgxstore.Partition ran, which knows the table as plain, fails on the
// partitioned table (no unique index on the scope alone: SQLSTATE 42P10)
// instead of inserting a second row of a key.
const ON_SCOPE_CONFLICT = 'ON CONFLICT (tenant, principal, use_case, idem_key) DO NOTHING';

export function createPgStore(core, pool, { schema = 'public', table = 'idem_records' } = {}) {
  const qualified = `${quote(schema)}.${quote(table)}`;
  const channel = `idem_${fnv64(schema, table)}`;
  const scopeArgs = (s) => [s.tenant ?? '', s.principal, s.useCase, s.key];
  // The record's columns as recordOf reads them (64-bit integers and times
  // as text), of the table alias from (none: the row's own).
  const columns = (from = '') => RECORD_COLS.map((c) => {
    const col = from ? `${from}.${c}` : c;
    if (TIME_COLS.has(c)) return us(col, c);
    return c === 'token' || c === 'version' || c === 'response_schema_version' ? `${col}::text AS ${c}` : col;
  }).join(', ');
  const selectCols = columns();
  const loadSQL = `SELECT ${us('now')}, tok::text, ${selectCols} FROM ${quote(schema)}.idem_records_load($1, $2, $3, $4)`;
  const scopeWhere = 'tenant = $1 AND principal = $2 AND use_case = $3 AND idem_key = $4';
  const values = (first) => RECORD_COLS.map((c, i) => (TIME_COLS.has(c) ? ts(first + i) : `$${first + i}`));
  const insertSQL = `INSERT INTO ${qualified} (tenant, principal, use_case, idem_key, ${RECORD_COLS.join(', ')}, updated_at)
    VALUES ($1, $2, $3, $4, ${values(5).join(', ')}, statement_timestamp()) ${ON_SCOPE_CONFLICT}`;
  const notify = (flag) => `CASE WHEN ${flag} THEN (SELECT false FROM pg_notify($23, $24)) ELSE false END`;
  const updateSQL = `UPDATE ${qualified} AS t SET ${RECORD_COLS.map((c, i) => `${c} = ${values(5)[i]}`).join(', ')},
    updated_at = statement_timestamp(), waiters = ${notify('t.waiters')}
    WHERE ${scopeWhere} AND version = $21 AND token = $22`;
  const deleteSQL = `WITH del AS (DELETE FROM ${qualified} WHERE ${scopeWhere} AND version = $5 AND token = $6 RETURNING waiters)
    SELECT CASE WHEN del.waiters THEN (SELECT false FROM pg_notify($7, $8)) ELSE false END FROM del`;
  // The reserve in one round trip, as Go's driver's (store/pgx
  // sql_write.go): the scope's row as it is, or, when there is none, the
  // record the core computed for an absent scope inserted with its times
  // as offsets from the statement's clock and the sequence's token. No
  // advisory lock and no NOTIFY (nobody waits on an absent record).
  const clockValues = (first) => RECORD_COLS.map((c, i) => (TIME_COLS.has(c)
    ? `COALESCE(statement_timestamp() + $${first + i}::bigint * interval '1 microsecond', ${ts(first + 16 + TIME_INDEX[c])})`
    : c === 'token' ? `COALESCE($${first + i}::bigint, nextval('${quote(schema)}.${quote(`${table}_token_seq`)}'::regclass))` : `$${first + i}`));
  const reserveSQL = `WITH cur AS (SELECT ${RECORD_COLS.join(', ')} FROM ${qualified} WHERE ${scopeWhere}),
    ins AS (INSERT INTO ${qualified} (tenant, principal, use_case, idem_key, ${RECORD_COLS.join(', ')}, updated_at)
      SELECT $1, $2, $3, $4, ${clockValues(5).join(', ')}, statement_timestamp()
      WHERE NOT EXISTS (SELECT FROM cur) ${ON_SCOPE_CONFLICT} RETURNING ${RECORD_COLS.join(', ')})
    SELECT true AS inserted, ${NOW}, ${columns('ins')} FROM ins
    UNION ALL
    SELECT false, ${NOW}, ${columns('cur')} FROM cur`;
  // A new key's plain insert, as Go's driver sends it while almost no
  // reserve finds a record (store/pgx readfirst.go, issue 25 §2): no CTE,
  // no union, so PostgreSQL sets up one plan node, not five. A record it
  // finds returns nothing, and the reserve then sends reserveSQL.
  const insertNewSQL = `INSERT INTO ${qualified} (tenant, principal, use_case, idem_key, ${RECORD_COLS.join(', ')}, updated_at)
      VALUES ($1, $2, $3, $4, ${clockValues(5).join(', ')}, statement_timestamp())
      ${ON_SCOPE_CONFLICT} RETURNING true AS inserted, ${NOW}, ${selectCols}`;
  // An owner's event over the record it holds (the attempt's reserve left
  // it), in one round trip: the core's step written with its times as
  // offsets from the statement's clock, under the precondition.
  const heldValues = RECORD_COLS.map((c, i) => (TIME_COLS.has(c)
    ? `COALESCE(statement_timestamp() + $${5 + i}::bigint * interval '1 microsecond', ${ts(21 + TIME_INDEX[c])})` : `$${5 + i}`));
  const heldSQL = `UPDATE ${qualified} AS t SET ${RECORD_COLS.map((c, i) => `${c} = ${heldValues[i]}`).join(', ')},
    updated_at = statement_timestamp(), waiters = CASE WHEN t.waiters THEN (SELECT false FROM pg_notify($28, $29)) ELSE false END
    WHERE ${scopeWhere} AND version = $26 AND token = $27
    RETURNING ${NOW}, ${selectCols}`;
  const markSQL = `UPDATE ${qualified} SET waiters = true WHERE ${scopeWhere} AND version = $5 AND token = $6 RETURNING true`;

  // query runs one of the statements above as a named prepared statement
  // (pgwire.mjs): the server parses and plans it once per connection, as
  // pgx's statement cache does for Go's driver. Rows are arrays, in the
  // statement's column order.
  const found = new FoundShare();
  const statements = new Map();
  const query = (text, values) => {
    let st = statements.get(text);
    if (st === undefined) statements.set(text, (st = new Statement(`idem_${fnv64(text)}`, text)));
    return exec(pool, st, values);
  };

  // recordOf is the record in row's columns RECORD_COLS, from index at on.
  function recordOf(s, row, at) {
    const c = row.slice(at); // RECORD_COLS's order
    if (c[0] === null) return absentRecord(s);
    const names = textsOf(c[5]);
    const values = names.length === 0 ? null : bytesArrayOf(c[6]);
    return {
      tenant: s.tenant ?? '', principal: s.principal, useCase: s.useCase, key: s.key,
      status: statusOf(c[0]), fingerprint: bytesOf(c[1]), token: BigInt(c[2]), version: BigInt(c[3]),
      response: {
        statusCode: Number(c[4]),
        // No headers read back as none (nil): the core takes nil and empty
        // for the same response, and the table keeps no difference.
        headers: names.length === 0 ? null : names.map((name, i) => ({ name, value: values[i].toString('utf8') })),
        body: bytesOf(c[7]),
        schemaVersion: Number(c[8]),
      },
      lastErrorCode: c[9], lockedUntil: nsOf(c[10]), reconcileAfter: nsOf(c[11]), reconcileAttempts: Number(c[12]),
      createdAt: nsOf(c[13]), completedAt: nsOf(c[14]), expiresAt: nsOf(c[15]),
    };
  }

  function params(r) {
    const resp = r.response;
    const headers = resp.headers ?? [];
    // Byte arrays go as they are: pgwire sends a view of them, not a copy.
    return [STATUS[r.status], r.fingerprint, String(r.token), String(r.version), resp.statusCode,
      headers.map((h) => h.name), headers.map((h) => Buffer.from(h.value, 'utf8')),
      resp.body ?? null, String(resp.schemaVersion ?? 0),
      r.lastErrorCode, usOf(r.lockedUntil), usOf(r.reconcileAfter), String(r.reconcileAttempts),
      usOf(r.createdAt), usOf(r.completedAt), usOf(r.expiresAt)];
  }

  // templateArgs are a templated write's parameters: the scope, the
  // record's columns with each time its offset from the statement's clock
  // (null for a literal), then the five literals.
  function templateArgs(scope, t) {
    const args = [scope.tenant ?? '', scope.principal, scope.useCase, scope.key];
    const p = params(t.record);
    for (let i = 0; i < TIME_AT.length; i++) p[TIME_AT[i]] = t.times[i][0];
    for (let i = 0; i < p.length; i++) args.push(p[i]);
    for (let i = 0; i < t.times.length; i++) args.push(t.times[i][1]);
    return args;
  }

  // plainTable refuses a table partitioned by Go's pgxstore.Partition,
  // before the first insert: there the primary key no longer keeps a scope
  // to one row, and only Go's driver inserts under the scope's lock. Once
  // the table is known to be plain, it is not asked again.
  let plain = false;
  async function plainTable() {
    if (plain) return;
    const { rows } = await pool.query('SELECT relkind::text AS kind FROM pg_class WHERE oid = to_regclass($1)', [qualified]);
    if (rows[0]?.kind === 'p') {
      throw new StoreRejectedError(`pgstore: ${qualified} is partitioned (Go's pgxstore.Partition): this store inserts only into a plain table; use Go's driver (store/pgx) on it`);
    }
    plain = true;
  }

  // write makes the core's write under its precondition; false: another
  // writer won, load again.
  async function write(s, t, rec) {
    const args = scopeArgs(s);
    switch (t.write.kind) {
      case WriteKind.None: return true;
      case WriteKind.Insert:
        await plainTable();
        return (await query(insertSQL, [...args, ...params(rec)])).rowCount === 1;
      case WriteKind.Update:
        return (await query(updateSQL, [...args, ...params(rec), String(t.write.expectVersion), String(t.write.expectToken),
          channel, fnv64(...args)])).rowCount === 1;
      case WriteKind.Delete:
        return (await query(deleteSQL, [...args, String(t.write.expectVersion), String(t.write.expectToken), channel, fnv64(...args)])).rowCount === 1;
    }
    throw new StoreRejectedError(`pgstore: the core asked for write kind ${t.write.kind}`);
  }

  // absentTemplate is template for a reserve on an absent scope. Every new
  // key's is the same but for its scope and fingerprint, so it is stepped
  // once per policy and the two put in; the row each statement writes is
  // still checked against a step at the statement's time.
  const absentTemplates = new WeakMap();
  function absentTemplate(scope, event, policy) {
    let t = absentTemplates.get(policy);
    if (t === undefined) {
      t = template(core, absentRecord(PROBE_SCOPE), { kind: EventKind.Reserve, fingerprint: PROBE_FINGERPRINT }, policy);
      absentTemplates.set(policy, t);
    }
    if (t === null || !plainReserve(event)) return template(core, absentRecord(scope), event, policy);
    const record = { ...t.record, tenant: scope.tenant ?? '', principal: scope.principal, useCase: scope.useCase, key: scope.key, fingerprint: event.fingerprint };
    // The statement's parameters are the probe's but for the record's
    // scope and fingerprint: made once, and copied.
    t.args ??= templateArgs(PROBE_SCOPE, t);
    const args = t.args.slice();
    args[0] = record.tenant; args[1] = record.principal; args[2] = record.useCase; args[3] = record.key;
    args[4 + COL.fingerprint] = record.fingerprint;
    return { record, transition: t.transition, times: t.times, args };
  }

  // reserve applies a Reserve in one round trip when the scope has no
  // record (and the core's step can be sent as offsets from the clock), or
  // returns null: the caller takes the general path.
  async function reserve(scope, event, policy) {
    const t = absentTemplate(scope, event, policy);
    if (t === null || t.transition.write.kind !== WriteKind.Insert) return null;
    const args = t.args ?? templateArgs(scope, t);
    args[4 + COL.token] = null; // the sequence's, in the statement
    await plainTable();
    let rows;
    if (found.insertFirst()) {
      ({ rows } = await query(insertNewSQL, args));
      found.observe(rows.length === 0);
      if (rows.length === 0) ({ rows } = await query(reserveSQL, args)); // a record is there: read it
    } else {
      ({ rows } = await query(reserveSQL, args));
      found.observe(rows.length === 0 || rows[0][0] !== 't');
    }
    if (rows.length === 0) return null; // inserted by another writer after this statement's snapshot: load again
    const row = rows[0]; // inserted, now, the record
    const now = nsOf(row[1]);
    const got = recordOf(scope, row, 2);
    if (row[0] === 't') {
      // Step at the statement's time with the sequence's token: the row must be what the core says.
      const ev = { ...event, now, token: got.token };
      const before = absentRecord(scope);
      const { transition, record } = core.step(before, ev, policy);
      if (!sameRecord(record, got)) throw new Error('pgstore: driver bug: the row written for a reserve is not the core\'s step');
      return { before: before.status, record, transition, now, appliedEvent: ev };
    }
    // The scope has a record: a replay, a key in flight, a mismatch need no
    // write (and so no fresh token); anything else loads again.
    const before = got;
    // Any token above the record's is fresh for it: a step that writes
    // nothing does not keep it.
    const ev = { ...event, now, token: before.token + 1n };
    const probe = core.step(before, ev, policy);
    if (probe.transition.write.kind !== WriteKind.None) return null;
    return { before: before.status, record: probe.record, transition: probe.transition, now, appliedEvent: { ...event, now, token: 0n } };
  }

  // applyHeld applies an owner's Complete, Fail or MarkUnknown over held in
  // one round trip, or returns null: the caller takes the general path (the
  // record changed since, or the step cannot be templated).
  async function applyHeld(scope, held, event, policy) {
    const t = template(core, held, event, policy);
    if (t === null || t.transition.write.kind !== WriteKind.Update) return null;
    const args = templateArgs(scope, t);
    args.push(String(t.transition.write.expectVersion), String(t.transition.write.expectToken), channel, fnv64(...scopeArgs(scope)));
    const { rows } = await query(heldSQL, args);
    if (rows.length === 0) return null;
    const now = nsOf(rows[0][0]); // now, the record
    const ev = { ...event, now };
    const { transition, record } = core.step(held, ev, policy);
    if (!sameRecord(record, recordOf(scope, rows[0], 1))) throw new Error(`pgstore: driver bug: the row written for ${event.kind} is not the core's step`);
    return { before: held.status, record, transition, now, appliedEvent: ev };
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
    async apply(scope, event, policy, { held } = {}) {
      if (event.kind === EventKind.Reserve) {
        const a = await reserve(scope, event, policy);
        if (a !== null) return a;
      } else if (held && (event.kind === EventKind.Complete || event.kind === EventKind.Fail || event.kind === EventKind.MarkUnknown)) {
        const a = await applyHeld(scope, held, event, policy);
        if (a !== null) return a;
      }
      for (let attempt = 0; attempt < 16; attempt++) {
        const { rows } = await query(loadSQL, scopeArgs(scope));
        const row = rows[0]; // now, a fresh token, the record
        const before = recordOf(scope, row, 2);
        const ev = { ...event, now: nsOf(row[0]) };
        if (ev.kind === EventKind.Reserve) ev.token = BigInt(row[1]);
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
        const marked = await query(markSQL, [...scopeArgs(scope), String(version), String(token)]);
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
