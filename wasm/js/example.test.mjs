// node --test: example.mjs runs and prints what README.md says it prints,
// and README.md shows example.mjs as it is.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = (name) => new URL(`./${name}`, import.meta.url);
const readme = await readFile(here('README.md'), 'utf8');
const example = await readFile(here('example.mjs'), 'utf8');

// block is the first block of lang in README.md's "Example" section.
function block(lang) {
  const m = readme.slice(readme.indexOf('\n## Example\n')).match(new RegExp('```' + lang + '\\n([\\s\\S]*?)```'));
  assert.ok(m, `README.md has no ${lang} block`);
  return m[1];
}

test('README.md shows example.mjs as it is', () => {
  assert.equal(block('js'), example);
});

test('example.mjs prints what README.md says, and nothing on stderr', () => {
  const child = spawnSync(process.execPath, [fileURLToPath(here('example.mjs'))], { encoding: 'utf8' });
  assert.equal(child.status, 0, child.stderr);
  assert.equal(child.stderr, '');
  assert.equal(child.stdout, block('text'));
  // What the example is about, should the README be rewritten with it.
  for (const line of ['first request: Execute', 'retry while running: InFlight', 'retry after it: Replay',
    'same key, other request: Mismatch', 'refused by the core: ErrResponseInvalid', 'refused by the host: idem: event.verdict: 258']) {
    assert.ok(child.stdout.includes(line), `the example no longer prints ${line}`);
  }
});
