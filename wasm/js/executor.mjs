// The executor for Node.js: Go's Executor.Do, as a host of the executor's
// protocol run in the module (flow.mjs). It performs what each effect
// asks and reports what happened, and keeps nothing of the lifecycle of
// its own: the module decides, as it does for Go's Do.
//
//   executor.do(request, action, { signal })
//
// runs action at most once per scope: a new key runs it, with a heartbeat
// extending its lease and an AbortSignal that fires when the lease is
// lost; a completed key replays its stored response; a key running
// elsewhere is waited for up to the policy's in-flight wait; the action's
// outcome is written on a timeout of its own, so that a caller that goes
// away cannot turn a charge into an unknown.

import { beginFlow, EffectKind } from './flow.mjs';
import { clockNow } from './memstore.mjs';

const msOf = (ns) => Math.max(0, Number(ns / 1_000_000n));

/**
 * Creates an executor over store ({apply, wait}, as createMemoryStore's)
 * under policy, with core the loaded module (idem.mjs's load). Options:
 * outcomeTimeout and heartbeatInterval (nanoseconds; 0 for the defaults),
 * clock (the host's Unix nanoseconds).
 */
export function createExecutor({ core, store, policy, outcomeTimeout = 0n, heartbeatInterval = 0n, clock = clockNow }) {
  const config = { policy, outcomeTimeout, heartbeatInterval };

  // apply performs an Apply effect and reports it.
  async function apply(flow, scope, signal) {
    const e = flow.next;
    if (!e.detached && signal?.aborted) { flow.gone(signal.reason); return null; }
    const sent = clock();
    // The detached outcome's deadline is made only for a store that reads
    // it: a timer and a signal per request cost a new key a tenth of its time.
    const options = e.detached
      ? { held: e.held, timeoutMs: msOf(e.timeout), get signal() { return AbortSignal.timeout(this.timeoutMs); } }
      : { held: e.held, signal };
    try {
      // Applied is applied, whether the caller is still there or not (as
      // Go's Do): a reserve reported as gone would leave its key in
      // progress until the lease ran out. The action then starts with its
      // signal aborted, and an action that does nothing frees the key.
      flow.applied(await store.apply(scope, e.event, policy, options));
    } catch (err) {
      if (!e.detached && signal?.aborted) flow.gone(signal.reason);
      else flow.applied(undefined, err);
    }
    return sent;
  }

  // wait performs a Wait effect and reports it.
  async function wait(flow, scope, signal) {
    const e = flow.next;
    const start = clock();
    try {
      await store.wait(scope, e.version, e.token, msOf(e.wait), signal);
    } catch { /* woken, timed out, or the caller gone: told below */ }
    if (signal?.aborted) flow.gone(signal.reason);
    else flow.waited(clock() - start);
  }

  // run performs a Run effect: the action, with the attempt's lease kept
  // beside it (heartbeats, and an abort when it is lost), and reports it.
  async function run(flow, scope, sent, action, signal) {
    const attempt = flow.next.attempt;
    const lease = flow.lease(sent);
    // The action's signal is made when the action first reads it: most
    // actions never do, and a controller per request cost a new key a
    // twentieth of the host's time. Until then an abort is kept, and the
    // signal is made aborted with its reason.
    let controller = null;
    let aborted = false;
    let reason;
    const abortWith = (why) => { if (!aborted) { aborted = true; reason = why; controller?.abort(why); } };
    const signalOf = () => {
      if (controller === null) { controller = new AbortController(); if (aborted) controller.abort(reason); }
      return controller.signal;
    };
    const onCallerAbort = () => abortWith(signal.reason);
    if (signal?.aborted) onCallerAbort(); else signal?.addEventListener('abort', onCallerAbort, { once: true });
    let stopped = false;
    let beatTimer = null;
    let tellTimer = null;
    const checkLost = () => {
      const { lost, cause } = lease.lost(clock());
      if (lost) { abortWith(cause); return true; }
      return false;
    };
    const armTell = () => {
      clearTimeout(tellTimer);
      if (lease.tellBy !== null) tellTimer = setTimeout(() => { if (!stopped && !checkLost()) armTell(); }, msOf(lease.tellBy - clock()) + 1);
    };
    const beat = async () => {
      if (stopped) return;
      armTell(); // from the first beat on, the tell's timer stays armed: a hung beat must not hold it back
      const beatSent = clock();
      const timeout = lease.beatTimeout(beatSent);
      let a; let err = null;
      try {
        a = await store.apply(scope, lease.event, policy, { signal: AbortSignal.timeout(msOf(timeout)) });
      } catch (e) { err = e; }
      if (stopped) return;
      const next = lease.beaten(beatSent, clock(), a, err);
      if (checkLost()) return;
      armTell();
      if (next > 0n) beatTimer = setTimeout(beat, msOf(next));
    };
    beatTimer = setTimeout(beat, msOf(lease.interval));
    // The tell's timer waits for the first beat when that beat is due
    // first: most actions end before either, and a second timer per
    // request (each at a delay of its own, a list of its own among Node's
    // timers) cost more than the first.
    if (lease.tellBy !== null && clock() + lease.interval >= lease.tellBy) armTell();
    let response; let failure = null;
    try {
      response = await action({ get signal() { return signalOf(); }, attempt });
    } catch (err) {
      failure = err;
    } finally {
      stopped = true;
      clearTimeout(beatTimer); clearTimeout(tellTimer);
      signal?.removeEventListener('abort', onCallerAbort);
    }
    if (failure !== null) flow.ran(undefined, failure);
    else flow.ran(response);
  }

  return {
    /** The policy the executor runs under (the HTTP middleware reads its limits). */
    get policy() { return policy; },
    /**
     * Runs action for request ({tenant?, principal, useCase, key,
     * fingerprint}) at most once per scope and returns the answer
     * ({kind, response, token, recorded}: Executed or Replayed), or throws
     * a FlowError (in_progress, key_misuse, outcome_unknown, not_executed,
     * idempotency_store_unavailable, ...), or the caller's abort reason
     * when it went away before anything ran. action({signal, attempt})
     * returns the response to store ({statusCode, headers, body}), or
     * throws: a NotExecutedError when it did nothing (the key is released),
     * anything else leaves its outcome to the reconciler.
     */
    async do(request, action, { signal } = {}) {
      const flow = beginFlow(core, config, request);
      const scope = { tenant: request.tenant ?? '', principal: request.principal, useCase: request.useCase, key: request.key };
      let sent = null;
      try {
        for (;;) {
          switch (flow.next.kind) {
            case EffectKind.Apply: sent = await apply(flow, scope, signal); break;
            case EffectKind.Run: await run(flow, scope, sent, action, signal); break;
            case EffectKind.Wait: await wait(flow, scope, signal); break;
            default: return flow.result();
          }
        }
      } finally {
        flow.close();
      }
    },
  };
}
