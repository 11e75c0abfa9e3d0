// A memory store for Node.js (tests, single-process services): the
// records of a Map, each event stepped through the core (idem.mjs), the
// store's clock and fresh tokens its own, as Go's store/mem does. The
// core stays the only authority: the store loads, steps and writes what
// the core decided.

import { absentRecord, EventKind, WriteKind } from './idem.mjs';

const scopeKey = (s) => JSON.stringify([s.tenant ?? '', s.principal, s.useCase, s.key]);

/** Nanoseconds since the Unix epoch, from the host's clock. */
export function clockNow() {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e3)) * 1000n;
}

/**
 * Creates a memory store over core. `clock` returns the store's time in
 * Unix nanoseconds (clockNow by default).
 */
export function createMemoryStore(core, { clock = clockNow } = {}) {
  const records = new Map();
  const waiters = new Map(); // scope key -> Set of callbacks, run on every write
  let lastToken = 0n; // tokens never repeat, across scopes and deletes

  function notify(key) {
    const ws = waiters.get(key);
    if (!ws) return;
    waiters.delete(key);
    for (const w of ws) w();
  }

  return {
    /**
     * Applies event to scope's record under policy, as Go's store.Apply:
     * returns what it applied ({before, record, transition, now}), or
     * throws the core's refusal (an IdemError).
     */
    async apply(scope, event, policy) {
      const key = scopeKey(scope);
      const before = records.get(key) ?? absentRecord(scope);
      const ev = { ...event, now: clock() };
      if (ev.kind === EventKind.Reserve) ev.token = ++lastToken;
      const { transition, record } = core.step(before, ev, policy);
      switch (transition.write.kind) {
        case WriteKind.Insert: case WriteKind.Update: records.set(key, record); notify(key); break;
        case WriteKind.Delete: records.delete(key); notify(key); break;
      }
      // appliedEvent: the event as applied (the store's time and token),
      // for a recorder of the store's history (history.mjs).
      return { before: before.status, record, transition, now: ev.now, appliedEvent: ev };
    },

    /**
     * Resolves once scope's record no longer has version and token, or
     * after waitMs, or when signal aborts (then it rejects with its reason).
     */
    wait(scope, version, token, waitMs, signal) {
      const key = scopeKey(scope);
      const rec = records.get(key);
      if (!rec || rec.version !== version || rec.token !== token) return Promise.resolve();
      return new Promise((resolve, reject) => {
        let done = false;
        const finish = (err) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          waiters.get(key)?.delete(wake);
          if (err) reject(err); else resolve();
        };
        const wake = () => finish();
        const onAbort = () => finish(signal.reason);
        const timer = setTimeout(wake, waitMs);
        if (!waiters.has(key)) waiters.set(key, new Set());
        waiters.get(key).add(wake);
        if (signal?.aborted) onAbort(); else signal?.addEventListener('abort', onAbort, { once: true });
      });
    },

    /** The record of scope, or undefined (for tests). */
    get(scope) { return records.get(scopeKey(scope)); },
  };
}
