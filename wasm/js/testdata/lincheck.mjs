// lincheck writes a history's lines (history.mjs) to a file and checks it
// with Go's cmd/lincheck: {status (0 linearizable, 1 not, 2 unreadable), out}.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// IDEM_REPO_ROOT: the repository, when this package runs from a copy (the
// mutant harness's).
const root = process.env.IDEM_REPO_ROOT ?? fileURLToPath(new URL('../../..', import.meta.url));

export function lincheck(lines) {
  const dir = mkdtempSync(join(tmpdir(), 'idem-history-'));
  try {
    const path = join(dir, 'history.jsonl');
    writeFileSync(path, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    const r = spawnSync('go', ['run', './cmd/lincheck', '-html', dir, path], { cwd: root, encoding: 'utf8' });
    return { status: r.status, out: `${r.stdout}${r.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
