// The HTTP conformance corpus (idemhttp/testdata/conformance.json, written
// by the Go middleware): every case run through this middleware over a
// node:http server must get the Go middleware's answers, byte for byte:
// status, the compared headers, the body.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { load, policyDefault } from '../idem.mjs';
import { createExecutor } from '../executor.mjs';
import { createMemoryStore } from '../memstore.mjs';
import { loadFingerprint } from '../fingerprint.mjs';
import { newRoute, notExecuted, outcomeUnknown } from './route.mjs';

// IDEM_REPO_ROOT: the repository, when this package runs from a copy (the
// mutant harness's).
const root = process.env.IDEM_REPO_ROOT ? pathToFileURL(`${process.env.IDEM_REPO_ROOT}/`) : new URL('../../../', import.meta.url);
const corpus = JSON.parse(await readFile(new URL('idemhttp/testdata/conformance.json', root), 'utf8'));
const core = await load();
const fingerprints = await loadFingerprint();

// handlerOf is conformance_test.go's scripted handler.
function handlerOf(state) {
  return async (req, res) => {
    state.runs++;
    // An unprotected request's body was not read by the middleware.
    let body = req.rawBody;
    if (body === undefined) { const chunks = []; for await (const c of req) chunks.push(c); body = Buffer.concat(chunks); }
    const script = state.script;
    res.setHeader('X-Runs', String(state.runs));
    const json = (status, body) => { res.setHeader('Content-Type', 'application/json'); res.writeHead(status); res.end(body); };
    switch (script) {
      case 'empty': res.end(); return;
      case 'nocontent': res.writeHead(204); res.end(); return;
      case 'notExecuted': notExecuted(req); json(502, '{"error":"nothing was done"}'); return;
      case 'unknown': outcomeUnknown(req); json(504, '{"error":"may have happened"}'); return;
      case 'big': res.setHeader('Content-Type', 'text/plain'); res.end('x'.repeat(300)); return;
      default:
        res.setHeader('Location', `/things/${state.runs}`);
        res.setHeader('X-Extra', 'extra');
        json(201, `{"run":${state.runs},"bodyBytes":${body.length}}`);
    }
  };
}

// serverOf serves one case's route.
async function serverOf(route) {
  const policy = policyDefault();
  if (route.responseBytesMax) policy.responseBytesMax = route.responseBytesMax;
  const executor = createExecutor({ core, store: createMemoryStore(core), policy });
  const rt = {
    useCase: 'conformance.create', keyOptional: route.keyOptional, methods: route.methods, mediaTypes: route.mediaTypes,
    bodyBytesMax: route.bodyBytesMax, replayHeaders: route.replayHeaders, exclude: route.exclude,
  };
  if (route.anonymous) rt.anonymous = true;
  else rt.principal = (req) => req.headers['x-principal'] ?? '';
  if (route.tenant) rt.tenant = (req) => req.headers['x-tenant'] ?? '';
  for (const k of Object.keys(rt)) if (rt[k] === undefined || rt[k] === null) delete rt[k];
  const state = { runs: 0, script: 'created' };
  const protect = newRoute(executor, fingerprints, rt);
  const handler = protect(handlerOf(state));
  const server = http.createServer((req, res) => handler(req, res));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, state, port: server.address().port };
}

// send sends one request as the corpus spells it (latin1: a character a byte).
function send(port, rq) {
  return new Promise((resolve, reject) => {
    const headers = {};
    for (const [name, value] of rq.headers ?? []) (headers[name] ??= []).push(value);
    const body = Buffer.from(rq.body, 'latin1');
    if (body.length > 0) headers['Content-Length'] = String(body.length);
    const req = http.request({ host: '127.0.0.1', port, method: rq.method, path: rq.target, headers, insecureHTTPParser: true }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, raw: res.rawHeaders, body: Buffer.concat(chunks).toString('latin1') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

for (const c of corpus.cases) {
  test(`conformance: ${c.name}`, async () => {
    const { server, state, port } = await serverOf(c.route);
    try {
      for (const [i, rq] of c.requests.entries()) {
        state.script = rq.handler;
        const got = await send(port, rq);
        const want = c.answers[i];
        const headers = {};
        for (const name of corpus.headers) {
          const vs = [];
          for (let j = 0; j < got.raw.length; j += 2) if (got.raw[j].toLowerCase() === name.toLowerCase()) vs.push(got.raw[j + 1]);
          if (vs.length > 0) headers[name] = vs.join(', ');
        }
        assert.deepEqual({ status: got.status, headers, body: got.body }, want, `request ${i} of ${c.name}`);
      }
    } finally {
      server.close();
    }
  });
}
