// node --test: the exported constants are the Go core's numbers
// (testdata/constants.json, written by
// go test ./wasm/ -run TestConstantsFresh -update-fixture), in idem.mjs and
// in the types of idem.d.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import * as idem from './idem.mjs';
import { policy, record } from './testdata/convert.mjs';

const constants = JSON.parse(await readFile(new URL('./testdata/constants.json', import.meta.url), 'utf8'));
const dts = await readFile(new URL('./idem.d.ts', import.meta.url), 'utf8');

const ENUMS = ['Status', 'EventKind', 'Verdict', 'DecisionKind', 'WriteKind', 'InFlightAnswer', 'ExpiryMode', 'FailMode'];

test('the fixture has every enum', () => {
  assert.deepEqual(Object.keys(constants.enums).sort(), [...ENUMS].sort());
});

for (const name of ENUMS) {
  test(`exports ${name} with the Go core's numbers, frozen`, () => {
    assert.equal(typeof idem[name], 'object', `idem.mjs exports no ${name}`);
    assert.deepEqual({ ...idem[name] }, constants.enums[name]);
    assert.ok(Object.isFrozen(idem[name]), `${name} can be changed`);
  });

  test(`idem.d.ts types ${name} with the Go core's numbers`, () => {
    const m = dts.match(new RegExp(`export declare const ${name}: \\{([^}]*)\\}`));
    assert.ok(m, `idem.d.ts declares no const ${name}`);
    const typed = Object.fromEntries([...m[1].matchAll(/readonly (\w+): (\d+)/g)].map(([, k, v]) => [k, Number(v)]));
    assert.deepEqual(typed, constants.enums[name]);
  });
}

test('ERROR_CODES and ABI_VERSION are the Go ones', () => {
  assert.deepEqual(idem.ERROR_CODES, constants.errorCodes);
  assert.equal(idem.ABI_VERSION, constants.abiVersion);
  assert.ok(Object.isFrozen(idem.ERROR_CODES), 'ERROR_CODES can be changed');
});

test('policyDefault is the Go PolicyDefault', () => {
  assert.deepEqual(idem.policyDefault(), policy(constants.policyDefault));
  assert.notEqual(idem.policyDefault(), idem.policyDefault(), 'a new policy every time');
});

test('absentRecord is the Go Record{Scope: s}', () => {
  const r = constants.absentRecord;
  const scope = { tenant: r.tenant, principal: r.principal, useCase: r.useCase, key: r.key };
  assert.deepEqual(idem.absentRecord(scope), record(r));
  assert.equal(idem.absentRecord({ ...scope, tenant: undefined }).tenant, '', 'the tenant may be left out');
});

test('policyDefault is in the enums\' terms', () => {
  const p = idem.policyDefault();
  assert.equal(p.inFlightAnswer, idem.InFlightAnswer?.Conflict);
  assert.equal(p.expiry, idem.ExpiryMode?.Soft);
  assert.equal(p.fail, idem.FailMode?.Keep);
});
