// migratedSchema makes a schema of its own on pool's server (IDEM_PG_DSN)
// with store/pgx's migrations, run as a migration tool runs them, and
// returns its name; drop it with `DROP SCHEMA name CASCADE`.
import { readFile, readdir } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';

// IDEM_REPO_ROOT: the repository, when this package runs from a copy (the
// mutant harness's).
const root = process.env.IDEM_REPO_ROOT ? pathToFileURL(`${process.env.IDEM_REPO_ROOT}/`) : new URL('../../../', import.meta.url);
const migrations = new URL('store/pgx/migrations/', root);

/** The DSN of the tests' server. */
export const dsn = process.env.IDEM_PG_DSN || 'postgres://postgres@127.0.0.1:5432/test';

export async function migratedSchema(pool, prefix) {
  const schema = `${prefix}_${randomBytes(6).toString('hex')}`;
  const ups = (await readdir(migrations)).filter((f) => f.endsWith('.up.sql')).sort();
  const client = await pool.connect();
  try {
    await client.query(`CREATE SCHEMA ${schema}; SET search_path TO ${schema}`);
    for (const f of ups) await client.query(await readFile(new URL(f, migrations), 'utf8'));
  } finally {
    client.release();
  }
  return schema;
}
