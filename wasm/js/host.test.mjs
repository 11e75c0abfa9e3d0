// node --test: the host's own duties (../ABI.md), against the fake guest
// (testdata/fake.wasm, assembled by the Go test TestFakeGuestFresh; its
// commands are documented in ../fakeguest_test.go), which traps, exits,
// grows its memory during a step, counts its calls, answers at the end of
// its memory or a byte past it, and answers the bytes a test chose.
// testdata/answers.json (TestAnswers) holds the answer decoder to the Go
// host's reference, abi.ApplyAnswer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import * as idem from './idem.mjs';
import { record, event, transition } from './testdata/convert.mjs';

const { load, IdemError, AbiVersionError, TrapError, MalformedAnswerError, ABI_VERSION } = idem;
const fake = await readFile(new URL('./testdata/fake.wasm', import.meta.url));
const answers = JSON.parse(await readFile(new URL('./testdata/answers.json', import.meta.url), 'utf8'));
const CMD = answers.commands;

const EMPTY_EVENT = {
  kind: 0, now: null, fingerprint: new Uint8Array(32), token: 0n,
  response: { statusCode: 0, headers: null, body: null, schemaVersion: 0 }, errorCode: '', verdict: 0,
};

// fakeStep steps the fake guest with a command; key sets the request's size.
function fakeStep(core, cmd, key = 'k') {
  const rec = idem.absentRecord({ principal: '', useCase: '', key });
  const policy = { ...idem.policyDefault(), leaseDuration: BigInt(cmd) };
  const copy = structuredClone(rec);
  try {
    return core.step(rec, EMPTY_EVENT, policy);
  } finally {
    assert.deepEqual(rec, copy, 'the host changed the record passed in');
  }
}

// state is what the canned answer reports: the instance's idem_step and
// idem_input calls, the input address, the request's size.
function canned(core, key = 'k') {
  const { transition: r, record: rec } = fakeStep(core, CMD.canned, key);
  assert.equal(r.decision.kind, 1);
  assert.equal(rec.key, key, 'an answer without changes changed the record');
  return { steps: r.decision.token, inputs: r.decision.retryAfter, addr: r.write.expectVersion, size: r.write.expectToken };
}

// renameExport returns wasm without the export name (renamed, same length).
function renameExport(wasm, name) {
  const needle = Buffer.concat([Buffer.from([name.length]), Buffer.from(name)]);
  const i = Buffer.from(wasm).indexOf(needle);
  assert.ok(i >= 0, `no export ${name}`);
  const out = Buffer.from(wasm);
  out.fill('x'.charCodeAt(0), i + 1, i + 1 + name.length);
  return out;
}

test('the fake guest is accepted: _initialize before the version, the version before a step', async () => {
  const core = await load({ wasm: fake });
  const s = canned(core);
  assert.deepEqual({ steps: s.steps, inputs: s.inputs, addr: s.addr }, { steps: 1n, inputs: 1n, addr: 1024n });
  assert.ok(s.size > 200n, `the request was ${s.size} bytes`);
});

for (const cmd of ['trap', 'exit']) {
  test(`a ${cmd} is a TrapError; the instance is discarded and the next one is fresh`, async () => {
    const core = await load({ wasm: fake });
    const a = canned(core);
    const b = canned(core);
    assert.equal(b.steps, a.steps + 1n);
    assert.throws(() => fakeStep(core, CMD[cmd]), (err) => {
      assert.ok(err instanceof TrapError, `${err?.name}: ${err?.message}`);
      assert.ok(!(err instanceof IdemError), 'a trap must not look like a refusal');
      assert.ok(err.cause !== undefined, 'the trap is the cause');
      return true;
    });
    // The replacement is made asynchronously: until it is ready, a step
    // throws a TrapError that says so.
    assert.throws(() => canned(core), (err) => err instanceof TrapError && /ready/.test(err.message));
    await core.ready();
    const c = canned(core);
    assert.deepEqual({ steps: c.steps, inputs: c.inputs }, { steps: 1n, inputs: 1n }, 'the step after a trap ran on the old instance');
  });
}

test('a failed replacement rejects ready() without an unhandled rejection, and the next step tries again', async () => {
  const core = await load({ wasm: fake });
  const unhandled = [];
  const onUnhandled = (err) => unhandled.push(err);
  process.on('unhandledRejection', onUnhandled);
  const instantiate = WebAssembly.instantiate;
  const boom = new Error('no memory for another instance');
  WebAssembly.instantiate = async () => { throw boom; };
  try {
    assert.throws(() => fakeStep(core, CMD.trap), TrapError);
    await assert.rejects(core.ready(), (err) => err instanceof TrapError && err.cause === boom);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(unhandled, []);
    // The next step starts a new replacement itself, before any ready().
    let made = 0;
    WebAssembly.instantiate = (...args) => { made++; return instantiate(...args); };
    assert.throws(() => canned(core), (err) => err instanceof TrapError && err.cause === boom);
    assert.equal(made, 1, 'the step after a failed replacement started none');
    await core.ready();
    assert.equal(made, 1, 'ready() started a second replacement');
    assert.equal(canned(core).steps, 1n);
    // The failure is forgotten once a replacement succeeded: a later trap's
    // TrapError does not name it as its cause.
    assert.throws(() => fakeStep(core, CMD.trap), TrapError);
    assert.throws(() => canned(core), (err) => err instanceof TrapError && /ready/.test(err.message) && err.cause === undefined);
    await core.ready();
    assert.equal(canned(core).steps, 1n);
  } finally {
    WebAssembly.instantiate = instantiate;
    process.off('unhandledRejection', onUnhandled);
  }
});

test('idem_input is called only for a larger request, and the request is written where it pointed', async () => {
  const core = await load({ wasm: fake });
  const first = canned(core);
  const again = canned(core);
  assert.deepEqual([again.inputs, again.addr, again.size], [1n, first.addr, first.size]);
  const larger = canned(core, 'k'.repeat(101));
  assert.equal(larger.inputs, 2n);
  assert.notEqual(larger.addr, first.addr);
  assert.equal(larger.size, first.size + 100n);
  // One byte more than the buffer holds is a larger request too (the fake
  // traps on a step larger than its buffer).
  const oneMore = canned(core, 'k'.repeat(102));
  assert.deepEqual([oneMore.inputs, oneMore.size], [3n, larger.size + 1n]);
  assert.notEqual(oneMore.addr, larger.addr);
  const smaller = canned(core, 'kk');
  assert.deepEqual([smaller.inputs, smaller.addr, smaller.size], [3n, oneMore.addr, first.size + 1n]);
  // Larger than the guest's memory: idem_input grows it.
  const huge = canned(core, 'k'.repeat(200 << 10));
  assert.deepEqual([huge.inputs, huge.size], [4n, first.size + BigInt((200 << 10) - 1)]);
});

test('an answer in memory the guest grew during idem_step is read', async () => {
  const core = await load({ wasm: fake });
  for (let i = 1n; i <= 3n; i++) {
    const { transition: r } = fakeStep(core, CMD.grow);
    assert.equal(r.decision.kind, 1);
    assert.equal(r.decision.token, i);
  }
});

test('an answer outside the guest\'s memory is a MalformedAnswerError, and the instance is kept', async () => {
  const core = await load({ wasm: fake });
  const before = canned(core);
  assert.throws(() => fakeStep(core, CMD.outside), (err) => {
    assert.ok(MalformedAnswerError && err instanceof MalformedAnswerError, `${err?.name}: ${err?.message}`);
    assert.ok(!(err instanceof TrapError) && !(err instanceof IdemError));
    return true;
  });
  assert.equal(canned(core).steps, before.steps + 2n);
});

test('an answer that ends at the end of the guest\'s memory is read; one a byte past it is a MalformedAnswerError, and the instance is kept', async () => {
  const core = await load({ wasm: fake });
  const { transition: r } = fakeStep(core, CMD.atEnd);
  assert.deepEqual([r.decision.kind, r.decision.token, r.decision.retryAfter], [1, 1n, 1n]);
  assert.throws(() => fakeStep(core, CMD.pastEnd), (err) => {
    assert.ok(err instanceof MalformedAnswerError, `${err?.name}: ${err?.message}`);
    assert.ok(!(err instanceof TrapError) && !(err instanceof IdemError));
    return true;
  });
  assert.equal(canned(core).steps, 3n);
});

for (const name of ['idem_abi_version', 'idem_input', 'idem_step', 'idem_flow', 'memory']) {
  test(`a module without ${name} is refused`, async () => {
    await assert.rejects(load({ wasm: renameExport(fake, name) }), (err) => {
      assert.ok(err instanceof AbiVersionError, `${err?.name}: ${err?.message}`);
      assert.match(err.message, new RegExp(`${name}.*v${ABI_VERSION}|v${ABI_VERSION}.*${name}`));
      return true;
    });
  });
}

test('a module without _initialize is not initialised, and its version (0) is refused', async () => {
  await assert.rejects(load({ wasm: renameExport(fake, '_initialize') }), (err) => err instanceof AbiVersionError && /v0\b/.test(err.message));
});

test('the answers fixture has what it claims', () => {
  const ok = answers.cases.filter((c) => c.transition !== null);
  const refused = answers.cases.filter((c) => c.error !== null);
  const malformed = answers.cases.filter((c) => c.malformed);
  assert.ok(ok.length >= 8 && refused.length >= 18 && malformed.length >= 100, `${ok.length} ${refused.length} ${malformed.length}`);
});

test('decodes every answer of the fixture as the Go host does', async () => {
  const core = await load({ wasm: fake });
  const policy = { ...idem.policyDefault(), leaseDuration: BigInt(CMD.echo) };
  for (const c of answers.cases) {
    const rec = record(c.record);
    const ev = event(c.event);
    const copy = structuredClone(rec);
    if (c.transition !== null) {
      const got = core.step(rec, ev, policy);
      assert.deepEqual(got.transition, transition(c.transition), `${c.name}: transition`);
      assert.deepEqual(got.record, record(c.after), `${c.name}: record`);
      if (c.name.includes('the event\'s response')) assert.equal(got.record.response, ev.response, `${c.name}: the event's response is shared`);
    } else {
      assert.throws(() => core.step(rec, ev, policy), (err) => {
        if (c.malformed) {
          assert.ok(MalformedAnswerError && err instanceof MalformedAnswerError, `${c.name}: ${err?.name}: ${err?.message}`);
          assert.match(err.message, /^idem\/wasm: malformed answer from the guest/);
        } else {
          assert.ok(err instanceof IdemError, `${c.name}: ${err?.name}: ${err?.message}`);
          assert.equal(err.code, c.error.code, c.name);
          assert.equal(err.message, c.error.message, c.name);
        }
        return true;
      }, c.name);
    }
    assert.deepEqual(rec, copy, `${c.name}: the record passed in changed`);
  }
});

test('an input buffer outside the guest\'s memory, or a trap in idem_input, is a trap, and the instance is replaced', async () => {
  const core = await load({ wasm: fake });
  for (const size of [BigInt(answers.fakeBadInputSize), BigInt(answers.fakeBadInputSize) + 1n]) {
    const small = canned(core);
    const key = 'k'.repeat(Number(size - small.size) + 1); // the request of exactly that size
    const cause = size === BigInt(answers.fakeBadInputSize) ? RangeError : WebAssembly.RuntimeError;
    assert.throws(() => fakeStep(core, CMD.canned, key), (err) => err instanceof TrapError && err.cause instanceof cause, `${size} bytes`);
    await core.ready();
    assert.equal(canned(core).steps, 1n, 'the step after the trap ran on the old instance');
  }
});
