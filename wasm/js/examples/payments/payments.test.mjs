// The Node payments example, tried with curl as its header says: the
// server runs as its own process and every request is curl's.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const run = promisify(execFile);
let server;
let base;

before(async () => {
  server = spawn(process.execPath, [fileURLToPath(new URL('./server.mjs', import.meta.url)), '--addr', '127.0.0.1:0', '--gateway-delay-ms', '20'], { stdio: ['ignore', 'pipe', 'inherit'] });
  base = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (\S+) /.exec(out);
      if (m) resolve(`http://${m[1]}`);
    });
    server.once('exit', (code) => reject(new Error(`the server exited (${code}): ${out}`)));
  });
});

after(() => server.kill('SIGTERM'));

// curl sends a request and parses its answer: status, headers (lower-case names), body.
async function curl(path, { key, principal = 'alice', body, method } = {}) {
  const args = ['-sS', '-i', `${base}${path}`];
  if (principal) args.push('-H', `X-Principal: ${principal}`);
  if (key) args.push('-H', `Idempotency-Key: ${key}`);
  if (body !== undefined) args.push('-H', 'Content-Type: application/json', '-d', body);
  if (method) args.push('-X', method);
  const { stdout } = await run('curl', args);
  const [head, ...rest] = stdout.split('\r\n\r\n');
  const [statusLine, ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') };
}

const key = (n) => `8e03978e-40d5-43e8-bc93-${String(n).padStart(12, '0')}`;
const charge = (customerId, amountCents = 1250, extra = '') => `{"customerId":"${customerId}","amountCents":${amountCents},"currency":"EUR"${extra}}`;

test('a payment is charged once and replayed byte for byte', async () => {
  const first = await curl('/payments', { key: key(1), body: charge('c-1') });
  assert.equal(first.status, 201);
  assert.match(first.body, /^\{"id":"pay_\d+","customerId":"c-1","amountCents":1250,"currency":"EUR","status":"succeeded"\}$/);
  assert.equal(first.headers['idempotent-replayed'], undefined);
  const again = await curl('/payments', { key: key(1), body: '{ "currency":"EUR", "amountCents":1250, "customerId":"c-1" }' });
  assert.equal(again.status, 201);
  assert.equal(again.body, first.body);
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.equal(again.headers.location, first.headers.location);
  const got = await curl(first.headers.location);
  assert.equal(got.status, 200);
  assert.equal(got.body, first.body);
  assert.equal((await curl(first.headers.location, { principal: 'bob' })).status, 404, 'another caller does not see it');
});

test('the same key with another amount is 422; a client time does not count', async () => {
  await curl('/payments', { key: key(2), body: charge('c-2', 100, ',"clientRequestTime":"10:00"') });
  const later = await curl('/payments', { key: key(2), body: charge('c-2', 100, ',"clientRequestTime":"10:05"') });
  assert.equal(later.status, 201);
  assert.equal(later.headers['idempotent-replayed'], 'true');
  const other = await curl('/payments', { key: key(2), body: charge('c-2', 101) });
  assert.equal(other.status, 422);
  assert.equal(other.headers['content-type'], 'application/problem+json');
  assert.equal(JSON.parse(other.body).detail, 'this key was already used for another request (its body differs): use a new key for a new request');
});

test('refusals: no key, no caller, not JSON, a bad body', async () => {
  const noKey = await curl('/payments', { body: charge('c-3') });
  assert.equal(noKey.status, 400);
  assert.equal(JSON.parse(noKey.body).code, 'invalid_key');
  const noCaller = await curl('/payments', { key: key(3), principal: '', body: charge('c-3') });
  assert.equal(noCaller.status, 401);
  assert.equal(noCaller.headers['www-authenticate'], 'X-Principal realm="payments example"');
  const dup = await curl('/payments', { key: key(4), body: '{"customerId":"c","customerId":"d","amountCents":1,"currency":"EUR"}' });
  assert.equal(dup.status, 400);
  assert.match(JSON.parse(dup.body).detail, /^the JSON body cannot be fingerprinted: /);
  const bad = await curl('/payments', { key: key(5), body: charge('c-5', -1) });
  assert.equal(bad.status, 400);
  assert.equal(bad.body, '{"error":"want customerId, a positive amountCents and a 3-letter currency"}');
});

test('the misbehaving customers: declined is replayed, down frees the key, timeout stays unknown', async () => {
  const declined = await curl('/payments', { key: key(6), body: charge('decline-1') });
  assert.equal(declined.status, 402);
  const declinedAgain = await curl('/payments', { key: key(6), body: charge('decline-1') });
  assert.equal(declinedAgain.status, 402);
  assert.equal(declinedAgain.body, declined.body);
  const down = await curl('/payments', { key: key(7), body: charge('down-1') });
  assert.equal(down.status, 502);
  assert.equal((await curl('/payments', { key: key(7), body: charge('down-1') })).status, 502, 'the key was freed: the retry ran again');
  const timeout = await curl('/payments', { key: key(8), body: charge('timeout-1') });
  assert.equal(timeout.status, 504);
  const retry = await curl('/payments', { key: key(8), body: charge('timeout-1') });
  assert.equal(retry.status, 409);
  assert.equal(JSON.parse(retry.body).code, 'outcome_unknown');
  assert.ok(Number(retry.headers['retry-after']) >= 1);
});

test("the README's Node block is this program's", async () => {
  const { readFile } = await import('node:fs/promises');
  const { pathToFileURL } = await import('node:url');
  const root = process.env.IDEM_REPO_ROOT ? pathToFileURL(`${process.env.IDEM_REPO_ROOT}/`) : new URL('../../../../', import.meta.url);
  const readme = await readFile(new URL('README.md', root), 'utf8');
  const src = await readFile(new URL('./server.mjs', import.meta.url), 'utf8');
  const marked = /\n[ ]*\/\/ README:begin\n([\s\S]*?)\n[ ]*\/\/ README:end\n/.exec(src);
  assert.ok(marked, 'server.mjs has README markers');
  const want = marked[1].split('\n').map((l) => l.replace(/^ {2}/, '')).join('\n');
  const block = /\n## A Node\.js service\n[\s\S]*?```js\n([\s\S]*?)\n```/.exec(readme);
  assert.ok(block, 'README.md has a js block in "A Node.js service"');
  assert.equal(block[1], want);
});
