// node --test: the Node host of the fingerprint module (fingerprint.mjs)
// against Go's package fingerprint: every case of testdata/fingerprints.json
// (written by the Go tests from the native package: specs, bodies, and the
// digest or error Go gives each) and every RFC 8785 vector of
// ../shared/jcs must come out of the module byte for byte as Go's; the
// arguments Go's types could not hold are refused before the module is
// called.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import {
  loadFingerprint, FingerprintError, FingerprintModuleError, FINGERPRINT_KINDS, FINGERPRINT_ABI_VERSION,
} from './fingerprint.mjs';

// IDEM_REPO_ROOT: the repository, when this package runs from a copy (the
// mutant harness's). The vectors are ../shared/jcs's, as the repository
// keeps them (fingerprint/testdata/jcs).
const root = process.env.IDEM_REPO_ROOT ? pathToFileURL(`${process.env.IDEM_REPO_ROOT}/`) : new URL('../../', import.meta.url);
const jcs = new URL('fingerprint/testdata/jcs/', root);
const fixture = JSON.parse(await readFile(new URL('./testdata/fingerprints.json', import.meta.url), 'utf8'));
const dts = await readFile(new URL('./fingerprint.d.ts', import.meta.url), 'utf8');
const fp = await loadFingerprint();
const toHex = (b) => Buffer.from(b).toString('hex');
const fromBase64 = (s) => Uint8Array.from(Buffer.from(s, 'base64'));
const strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }); // ignoreBOM: keep it

test('the layout version and the kinds are the Go ones', () => {
  assert.equal(FINGERPRINT_ABI_VERSION, fixture.abiVersion);
  assert.equal(fp.abiVersion, fixture.abiVersion);
  assert.deepEqual(FINGERPRINT_KINDS, fixture.kinds);
  assert.ok(Object.isFrozen(FINGERPRINT_KINDS));
  const m = dts.match(/export type FingerprintErrorKind =([^;]*);/);
  assert.ok(m, 'fingerprint.d.ts declares no FingerprintErrorKind');
  assert.deepEqual([...m[1].matchAll(/'(\w+)'/g)].map((x) => x[1]), fixture.kinds);
});

test('every RFC 8785 vector of shared/jcs canonicalizes byte for byte', async () => {
  const names = (await readdir(new URL('input/', jcs))).filter((n) => n.endsWith('.json'));
  assert.ok(names.length > 0, 'no vectors in shared/jcs/input');
  for (const name of names) {
    const input = await readFile(new URL(`input/${name}`, jcs));
    const want = await readFile(new URL(`output/${name}`, jcs));
    assert.equal(toHex(fp.canonicalize(input)), toHex(want), name);
    assert.equal(toHex(fp.canonicalize(input.toString('utf8'))), toHex(want), `${name} as a string`);
  }
});

// optionsOf is newSpec's options of a fixture spec.
function optionsOf(s) {
  const o = {};
  for (const k of ['include', 'exclude', 'requireIncluded', 'allowImpreciseNumbers', 'bytesMax', 'depthMax']) {
    if (s[k] !== undefined) o[k] = s[k];
  }
  return o;
}

// expectError runs f and requires Go's error e: kind, offset and message.
function expectError(f, e, at) {
  assert.throws(f, (err) => {
    assert.ok(err instanceof FingerprintError, `${at}: ${err} is not a FingerprintError`);
    assert.equal(err.name, 'FingerprintError', at);
    assert.deepEqual({ kind: err.kind, offset: err.offset, message: err.message }, e, at);
    return true;
  }, at);
}

test(`the ${fixture.cases.length} cases of testdata/fingerprints.json answer as Go`, () => {
  let digests = 0;
  let errors = 0;
  for (const [i, c] of fixture.cases.entries()) {
    const at = `case ${i} (${c.name})`;
    const body = fromBase64(c.body);
    let text = null; // the body as a string too, when it is UTF-8
    try { text = strict.decode(body); } catch { /* bytes only */ }
    const canonicals = [body, ...(text === null ? [] : [text])];
    for (const b of canonicals) {
      if (c.canonicalError) expectError(() => fp.canonicalize(b), c.canonicalError, `${at}: canonicalize`);
      else assert.equal(toHex(fp.canonicalize(b)), toHex(fromBase64(c.canonical)), `${at}: canonicalize`);
    }
    const newSpec = () => fp.newSpec(c.spec.useCase, c.spec.schemaVersion, optionsOf(c.spec));
    if (c.specError) {
      expectError(newSpec, c.specError, `${at}: newSpec`);
      errors++;
      continue;
    }
    const spec = newSpec();
    for (const b of canonicals) {
      if (c.error) expectError(() => spec.of(b), c.error, `${at}: of`);
      else assert.equal(toHex(spec.of(b)), c.fingerprint, `${at}: of`);
    }
    if (c.error) errors++;
    else digests++;
    if (i % 2 === 0) spec.release(); // the others are left to the garbage collector
  }
  assert.ok(digests > 50 && errors > 50, `${digests} digests and ${errors} errors: the fixture should hold many of both`);
});

// preimage is the documented pre-image of a document-mode fingerprint
// (fingerprint/doc.go), built here independently of the module.
function preimage(useCase, version, canonical) {
  const field = (b) => {
    const n = Buffer.alloc(8);
    n.writeBigUInt64BE(BigInt(b.length));
    return Buffer.concat([n, b]);
  };
  const v = Buffer.alloc(4);
  v.writeUInt32BE(version);
  return Buffer.concat([field(Buffer.from('idem/fingerprint/v1')), field(Buffer.from(useCase)), v, Buffer.from('D'), field(Buffer.from(canonical))]);
}

test('a body larger than the input buffer, and the documented pre-image', () => {
  const spec = fp.newSpec('uploads.create', 7, { bytesMax: -1 });
  const body = `["${'x'.repeat(3 << 20)}"]`; // 3 MiB, canonical already
  const want = createHash('sha256').update(preimage('uploads.create', 7, body)).digest('hex');
  assert.equal(toHex(spec.of(body)), want);
  assert.equal(toHex(spec.of(Buffer.from(body))), want);
  expectError(() => fp.canonicalize(body), {
    kind: 'ErrTooLarge', offset: 1 << 20, message: `fingerprint: input too large: ${body.length} bytes, the limit is ${1 << 20} at byte offset ${1 << 20}`,
  }, 'canonicalize over the default limit');
  const small = '{"b":[1.0,-0,1e21],"a":"\u2028"}';
  const canonical = fp.canonicalize(small);
  assert.equal(Buffer.from(canonical).toString(), '{"a":"\u2028","b":[1,0,1e+21]}');
  // 1e21 is beyond 2^53: the precision rule would refuse it.
  assert.equal(toHex(fp.newSpec('x', 0, { allowImpreciseNumbers: true }).of(small)), createHash('sha256').update(preimage('x', 0, canonical)).digest('hex'));
  spec.release();
});

test('newSpec refuses arguments Go could not hold, before the module is called', () => {
  const typeErrors = [
    () => fp.newSpec(1, 1), () => fp.newSpec(null, 1), () => fp.newSpec('a\ud800', 1),
    () => fp.newSpec('x', '1'), () => fp.newSpec('x', 1n), () => fp.newSpec('x'),
    () => fp.newSpec('x', 1, 'opts'), () => fp.newSpec('x', 1, [1]), () => fp.newSpec('x', 1, { includes: ['/a'] }),
    () => fp.newSpec('x', 1, { include: '/a' }), () => fp.newSpec('x', 1, { include: [1] }), () => fp.newSpec('x', 1, { exclude: ['/a', null] }),
    () => fp.newSpec('x', 1, { include: ['/\udc00'] }), () => fp.newSpec('x', 1, { requireIncluded: 1 }),
    () => fp.newSpec('x', 1, { allowImpreciseNumbers: 'yes' }), () => fp.newSpec('x', 1, { bytesMax: 10n }), () => fp.newSpec('x', 1, { depthMax: '3' }),
  ];
  for (const f of typeErrors) assert.throws(f, TypeError, String(f));
  const rangeErrors = [
    () => fp.newSpec('x', -1), () => fp.newSpec('x', 2 ** 32), () => fp.newSpec('x', 1.5), () => fp.newSpec('x', NaN),
    () => fp.newSpec('x', 1, { bytesMax: 1.5 }), () => fp.newSpec('x', 1, { depthMax: 2 ** 53 }), () => fp.newSpec('x', 1, { bytesMax: Infinity }),
  ];
  for (const f of rangeErrors) assert.throws(f, RangeError, String(f));
  assert.throws(() => fp.newSpec('x', 1, { includes: ['/a'] }), /unknown option "includes"/);
  assert.throws(() => fp.newSpec('x', 1.5), /schema version 1.5 is not an integer 0..4294967295/);
  // What passes: the ends of the ranges, null options, an empty use case.
  for (const s of [fp.newSpec('', 0), fp.newSpec('x', 2 ** 32 - 1, null), fp.newSpec('x', 1, { bytesMax: -1, depthMax: -5 })]) {
    assert.equal(s.of('{}').length, 32);
    s.release();
  }
});

test('of and canonicalize refuse bodies that are not bytes or well-formed strings', () => {
  const spec = fp.newSpec('x', 1);
  for (const bad of [undefined, null, 42, {}, [123], new ArrayBuffer(2), new Uint16Array(2), '["\ud800"]'.replace('\\ud800', '\ud800')]) {
    assert.throws(() => spec.of(bad), TypeError, `of(${String(bad)})`);
    assert.throws(() => fp.canonicalize(bad), TypeError, `canonicalize(${String(bad)})`);
  }
  assert.throws(() => spec.of('"\ud800"'), /lone surrogate/);
  // The escaped surrogate is the module's to refuse, as Go does.
  expectError(() => spec.of('"\\ud800"'), {
    kind: 'ErrSurrogate', offset: 1, message: 'fingerprint: invalid surrogate escape: lone high surrogate \\ud800 (not followed by a low surrogate) at byte offset 1',
  }, 'an escaped lone surrogate');
  spec.release();
  spec.release(); // twice does nothing
  assert.throws(() => spec.of('{}'), /after spec.release/);
});

test('a pointer error from newSpec is a FingerprintError of kind ErrPointer', () => {
  const cases = [
    [{ include: ['a'] }, `fingerprint: JSON pointer: pointer "a" must be empty or start with '/'`],
    [{ include: [] }, 'fingerprint: JSON pointer: Include was given no pointer: the fingerprint would ignore the body'],
    [{ exclude: ['/a~2'] }, `fingerprint: JSON pointer: pointer "/a~2" has '~' not followed by '0' or '1'`],
  ];
  for (const [opts, message] of cases) {
    expectError(() => fp.newSpec('x', 1, opts), { kind: 'ErrPointer', offset: -1, message }, JSON.stringify(opts));
    try { fp.newSpec('x', 1, opts); } catch (err) { assert.ok(err instanceof Error && !(err instanceof FingerprintModuleError)); }
  }
  const spec = fp.newSpec('x', 1, { include: ['/a'], requireIncluded: true });
  expectError(() => spec.of('{"b":1}'), { kind: 'ErrPointer', offset: -1, message: 'fingerprint: JSON pointer: included pointer "/a" selects nothing in the body' }, 'required');
  assert.equal(spec.of('{"a":1}').length, 32);
});

test('a module that is not the fingerprint module is refused', async () => {
  await assert.rejects(loadFingerprint({ wasm: new URL('../idem.wasm', import.meta.url) }), (err) => {
    assert.ok(err instanceof FingerprintModuleError);
    assert.match(err.message, /lacks the export idem_fp_abi_version, idem_fp_input/);
    return true;
  });
});

test('specs outlive many others, and handles are reused', () => {
  const keep = fp.newSpec('keep', 1, { include: ['/id'] });
  const want = toHex(keep.of('{"id":1}'));
  for (let i = 0; i < 200; i++) fp.newSpec(`s${i}`, i, { exclude: ['/t'] }).release();
  assert.equal(toHex(keep.of('{"id":1}')), want);
  assert.notEqual(toHex(keep.of('{"id":2}')), want);
});

test('loading it prints no ExperimentalWarning, and leaves process.emitWarning as it was', () => {
  const url = new URL('./fingerprint.mjs', import.meta.url).href;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', `
    const emit = process.emitWarning;
    const { loadFingerprint } = await import(${JSON.stringify(url)});
    const fp = await loadFingerprint();
    console.log(Buffer.from(fp.canonicalize('{"b":1,"a":2}')).toString(), process.emitWarning === emit);
  `], { encoding: 'utf8' });
  assert.equal(child.status, 0, child.stderr);
  assert.equal(child.stdout, '{"a":2,"b":1} true\n');
  assert.equal(child.stderr, '');
});
