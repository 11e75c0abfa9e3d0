// node --test: a JavaScript store's history, recorded in the format of
// Go's package linearizability (history.mjs), is checked by Go's
// cmd/lincheck: the memory store under the executor passes; a store that
// writes without a precondition (it loads, awaits, then writes what it
// stepped) is caught.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { load, policyDefault, absentRecord, EventKind, WriteKind } from './idem.mjs';
import { NotExecutedError } from './flow.mjs';
import { createMemoryStore, clockNow } from './memstore.mjs';
import { createExecutor } from './executor.mjs';
import { recordingStore, policyLine } from './history.mjs';
import { lincheck } from './testdata/lincheck.mjs';

const core = await load();
const MS = 1_000_000n;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// stress runs requests from many callers at once over a few keys through
// an executor over store: actions that answer, that did nothing, that fail.
async function stress(store, policy) {
  const ex = createExecutor({ core, store, policy });
  const runs = [];
  for (let i = 0; i < 60; i++) {
    const key = `stress-key-${i % 4}-0123456789abcdef`;
    const fingerprint = createHash('sha256').update(`body-${i % 4}`).digest();
    runs.push((async () => {
      await sleep(i % 7);
      try {
        await ex.do({ principal: 'p', useCase: 'u', key, fingerprint }, async () => {
          await sleep(i % 5);
          if (i % 9 === 0) throw new NotExecutedError('declined', { code: 'declined' });
          if (i % 13 === 0) throw new Error('gateway timeout');
          return { statusCode: 201, headers: null, body: new TextEncoder().encode(`{"n":${i}}`) };
        });
      } catch { /* in_progress, not_executed, outcome_unknown: the history is what is checked */ }
    })());
  }
  await Promise.all(runs);
}

test('the memory store\'s history under the executor is linearizable (Go\'s cmd/lincheck)', async () => {
  const policy = { ...policyDefault(), inFlightWait: 20n * MS };
  const lines = [policyLine(policy)];
  await stress(recordingStore(createMemoryStore(core), lines), policy);
  assert.ok(lines.length > 60, `only ${lines.length - 1} operations recorded`);
  const { status, out } = lincheck(lines);
  assert.equal(status, 0, out);
  assert.match(out, /events: Ok/);
});

// brokenStore loads a record, lets other calls run, then writes what it
// stepped over whatever is there: a write without the version and token
// precondition.
function brokenStore() {
  const records = new Map();
  let lastToken = 0n;
  const keyOf = (s) => JSON.stringify([s.tenant ?? '', s.principal, s.useCase, s.key]);
  return {
    async apply(scope, event, policy) {
      const key = keyOf(scope);
      const before = records.get(key) ?? absentRecord(scope);
      await sleep(1); // another caller's write lands here, and is overwritten
      const ev = { ...event, now: clockNow() };
      if (ev.kind === EventKind.Reserve) ev.token = ++lastToken;
      const { transition, record } = core.step(before, ev, policy);
      if (transition.write.kind === WriteKind.Insert || transition.write.kind === WriteKind.Update) records.set(key, record);
      if (transition.write.kind === WriteKind.Delete) records.delete(key);
      return { before: before.status, record, transition, now: ev.now, appliedEvent: ev };
    },
    async wait(scope, version, token, waitMs) { await sleep(Math.min(waitMs, 5)); },
  };
}

test('a store that writes without the token check is caught by Go\'s cmd/lincheck', async () => {
  const policy = { ...policyDefault(), inFlightWait: 20n * MS };
  const lines = [policyLine(policy)];
  await stress(recordingStore(brokenStore(), lines), policy);
  const { status, out } = lincheck(lines);
  assert.equal(status, 1, out);
  assert.match(out, /Illegal/);
});
