// store/pgx's migrations, run from Node.js as pgxstore.Migrate runs them:
// one transaction under the same advisory lock (a Go and a Node service
// starting at once migrate one after the other), the schema version read
// from the table's comment, each missing .up.sql file in order. The files
// in ./migrations are store/pgx's, byte for byte (a Go test checks it).

import { readdir, readFile } from 'node:fs/promises';

/** The schema version these migrations bring a table to (pgxstore.SchemaVersion). */
export const SCHEMA_VERSION = 4;

const MARK = 'idem schema version ';
const NAME = /^(\d{4})_[a-z0-9_]+\.(up|down)\.sql$/;
const ident = (s) => '"' + s.replaceAll('"', '""') + '"';

/**
 * Creates or upgrades the records table (idem_records) in schema (the
 * first of search_path if left out) over pool (a pg.Pool). Safe when many
 * instances, Go or Node, start at once.
 */
export async function migrate(pool, { schema = '' } = {}) {
  if (typeof schema !== 'string' || schema.includes('\0') || Buffer.byteLength(schema) > 63) throw new TypeError(`pgmigrate: schema name ${JSON.stringify(schema)}: a string without NUL, at most 63 bytes`);
  const qualified = schema === '' ? ident('idem_records') : `${ident(schema)}.${ident('idem_records')}`;
  const dir = new URL('./migrations/', import.meta.url);
  const ups = [];
  for (const f of (await readdir(dir)).sort()) {
    const m = NAME.exec(f);
    if (m === null) throw new Error(`pgmigrate: migration file ${JSON.stringify(f)} is not NNNN_name.(up|down).sql`);
    if (m[2] === 'up') ups.push({ version: Number(m[1]), file: f });
  }
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', ['idem/pgxstore:' + qualified]);
    if (schema !== '') {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${ident(schema)}`);
      await client.query(`SET LOCAL search_path TO ${ident(schema)}`);
    }
    const have = await schemaVersion(client, qualified);
    if (have > SCHEMA_VERSION) throw new Error(`pgmigrate: ${qualified} is at schema version ${have}, newer than this package's ${SCHEMA_VERSION}: upgrade @idemkit/idem-core`);
    for (const m of ups) {
      if (m.version <= have || m.version > SCHEMA_VERSION) continue;
      try {
        await client.query(await readFile(new URL(m.file, dir), 'utf8'));
      } catch (err) {
        throw new Error(`pgmigrate: migration ${m.file}: ${err.message}`, { cause: err });
      }
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

async function schemaVersion(client, qualified) {
  const { rows } = await client.query("SELECT to_regclass($1) IS NOT NULL AS exists, obj_description(to_regclass($1), 'pg_class') AS comment", [qualified]);
  if (!rows[0].exists) return 0;
  const comment = rows[0].comment;
  const i = comment === null ? -1 : comment.lastIndexOf(MARK);
  const digits = i < 0 ? '' : comment.slice(i + MARK.length).trim();
  const v = /^[+-]?\d+$/.test(digits) ? Number(digits) : NaN;
  if (!Number.isSafeInteger(v)) throw new Error('pgmigrate: the table exists but its comment carries no idem schema version: it is not an idem table, or its comment was changed');
  return v;
}
