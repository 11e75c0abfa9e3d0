// HTTP for Node.js services: Go's idemhttp middleware over the Node
// executor, for node:http and Express. A route is protected in a few lines:
//
//   const idem = await createIdem({ store: (core) => createPgStore(core, pool) });
//   const protect = idem.route({ useCase: 'payments.create', principal: (req) => req.principal });
//   app.post('/payments', protect(async (req, res) => { ... }));
//
// README.md, "HTTP", says what a protected request gets; the answers are
// the Go middleware's (idemhttp/testdata/conformance.json holds both).

import { load, policyDefault } from './idem.mjs';
import { createExecutor } from './executor.mjs';
import { createMemoryStore } from './memstore.mjs';
import { loadFingerprint } from './fingerprint.mjs';
import { newRoute } from './http/route.mjs';

export { newRoute, attemptOf, notExecuted, outcomeUnknown, ExecutionTimeoutError, KEY_HEADER_DEFAULT, REPLAYED_HEADER, ANONYMOUS_PRINCIPAL } from './http/route.mjs';
export { Code, PROBLEM_TYPE_BASE, newProblem, writeProblem, retryAfterSeconds } from './http/problem.mjs';

/**
 * Loads the core and the fingerprint modules and builds one executor for
 * the process over store (a store, or a function of the loaded core that
 * makes one; the memory store if left out) under policy (policyDefault()
 * if left out). route(options) is newRoute over that executor.
 */
export async function createIdem({ store, policy = policyDefault(), core, fingerprints, executorOptions = {} } = {}) {
  core ??= await load();
  fingerprints ??= await loadFingerprint();
  const s = typeof store === 'function' ? await store(core) : store ?? createMemoryStore(core);
  const executor = createExecutor({ core, store: s, policy, ...executorOptions });
  const underWay = new Set();
  return {
    core, fingerprints, store: s, executor,
    route: (options) => newRoute(executor, fingerprints, options, { underWay }),
    /** Resolves once every protected request under way has answered and recorded its outcome (a server that stops awaits it before it closes the store). */
    drain: async () => { while (underWay.size > 0) await Promise.allSettled([...underWay]); },
  };
}
