// node --test: loading the core prints no ExperimentalWarning (node:wasi
// emits one when it is first loaded), and hides no other warning: the
// filter is scoped to that one warning, while node:wasi loads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { ABI_VERSION } from './idem.mjs';

const idemURL = new URL('./idem.mjs', import.meta.url).href;

function run(source) {
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', source], { encoding: 'utf8' });
  assert.equal(child.status, 0, `the child failed: ${child.stderr}`);
  return child;
}

test('loading the core prints no ExperimentalWarning', () => {
  const { stdout, stderr } = run(`
    import { load } from ${JSON.stringify(idemURL)};
    const core = await load();
    await load();
    console.log(core.abiVersion);
  `);
  assert.equal(stdout, `${ABI_VERSION}\n`);
  assert.doesNotMatch(stderr, /ExperimentalWarning|WASI is an experimental feature/);
  assert.equal(stderr, '');
});

test('other warnings still print, and process.emitWarning is restored', () => {
  const { stdout, stderr } = run(`
    const emit = process.emitWarning;
    const { load } = await import(${JSON.stringify(idemURL)});
    await load();
    console.log(process.emitWarning === emit);
    process.emitWarning('a warning of the program', 'ExperimentalWarning');
    process.emitWarning(new Error('WASI is an experimental feature, said the program'), 'ExperimentalWarning');
  `);
  assert.equal(stdout, 'true\n');
  assert.match(stderr, /ExperimentalWarning: a warning of the program/);
  assert.match(stderr, /said the program/);
});
