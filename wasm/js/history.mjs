// A store's history in the JSON Lines format of Go's package
// linearizability (../../linearizability/HISTORY.md), so that a store
// written in JavaScript is checked by the same models as a Go one
// (cmd/lincheck). recordingStore wraps a store ({apply, wait}) and records
// one lifecycle line per apply.

const STATUS = ['absent', 'in_progress', 'completed', 'failed_retryable', 'unknown', 'expired'];
const EVENT = ['invalid', 'reserve', 'complete', 'fail', 'mark_unknown', 'heartbeat', 'resolve', 'sweep', 'evict'];
const DECISION = ['invalid', 'execute', 'replay', 'mismatch', 'in_flight', 'reconciling', 'completed', 'acknowledged',
  'failed', 'marked_unknown', 'extended', 'stale', 'conflict', 'resolved', 'rescheduled', 'abandoned', 'not_applicable',
  'lease_expired', 'expired', 'nothing_due', 'pruned', 'evicted'];
const WRITE = ['none', 'insert', 'update', 'delete'];
const VERDICT = ['invalid', 'executed', 'not_executed', 'still_unknown'];

const nameOf = (names, kind, n) => names[n] ?? `${kind}(${n})`;
const str = (v) => (v === null || v === undefined ? null : String(v));
const hex = (b) => Buffer.from(b ?? new Uint8Array(32)).toString('hex');

function response(r) {
  r = r ?? { statusCode: 0, headers: null, body: null, schemaVersion: 0 };
  return {
    statusCode: Number(r.statusCode), headers: r.headers ?? null,
    body: r.body === null || r.body === undefined ? null : Buffer.from(r.body).toString('base64'),
    schemaVersion: r.schemaVersion ?? 0,
  };
}

const scope = (s) => ({ tenant: s.tenant ?? '', principal: s.principal, useCase: s.useCase, key: s.key });

function record(r) {
  return {
    scope: scope(r), status: nameOf(STATUS, 'status', r.status), fingerprint: hex(r.fingerprint),
    token: String(r.token), version: String(r.version), response: response(r.response), lastErrorCode: r.lastErrorCode,
    lockedUntil: str(r.lockedUntil), reconcileAfter: str(r.reconcileAfter), reconcileAttempts: r.reconcileAttempts,
    createdAt: str(r.createdAt), completedAt: str(r.completedAt), expiresAt: str(r.expiresAt),
  };
}

// eventLine is an event as applied: at the store's time now (null: not
// known), with token (a reserve's fresh one, or the owner's).
function eventLine(event, now, token) {
  return {
    kind: nameOf(EVENT, 'event', event.kind), now: str(now), fingerprint: hex(event.fingerprint), token: String(token ?? 0n),
    response: response(event.response), errorCode: event.errorCode ?? '', verdict: nameOf(VERDICT, 'verdict', event.verdict ?? 0),
  };
}

/** The policy line. */
export function policyLine(p) {
  return {
    type: 'policy',
    policy: {
      leaseDuration: String(p.leaseDuration), ttl: String(p.ttl), inFlightWait: String(p.inFlightWait),
      inFlightAnswer: p.inFlightAnswer, retryAfter: String(p.retryAfter), expiry: p.expiry, fail: p.fail,
      reconcileBackoffBase: String(p.reconcileBackoffBase), reconcileBackoffMax: String(p.reconcileBackoffMax),
      reconcileAttemptsMax: p.reconcileAttemptsMax, tombstoneRetention: String(p.tombstoneRetention),
      keyBytesMax: Number(p.keyBytesMax), requestBytesMax: Number(p.requestBytesMax), responseBytesMax: Number(p.responseBytesMax),
    },
  };
}

/**
 * Wraps store so that every apply is recorded in lines (an array of line
 * objects; JSON.stringify each for the file): its call and return times
 * (the host's monotonic clock), the event as applied (with the store's
 * time and token), and what it did, or that it failed (an error the store
 * threw: ended "indeterminate", as a failed write may have applied).
 */
export function recordingStore(store, lines) {
  let clients = 0;
  return {
    ...store,
    async apply(s, event, policy, options) {
      const client = clients++;
      const call = process.hrtime.bigint();
      const line = { type: 'lifecycle', client, call: String(call), scope: scope(s) };
      try {
        const a = await store.apply(s, event, policy, options);
        const applied = a.appliedEvent ?? event;
        Object.assign(line, {
          return: String(process.hrtime.bigint()), ended: 'ok',
          event: eventLine(event, a.now, applied.token),
          before: nameOf(STATUS, 'status', a.before),
          transition: {
            decision: nameOf(DECISION, 'decision', a.transition.decision.kind), decisionToken: String(a.transition.decision.token),
            retryAfter: String(a.transition.decision.retryAfter), write: nameOf(WRITE, 'write', a.transition.write.kind),
            expectVersion: String(a.transition.write.expectVersion), expectToken: String(a.transition.write.expectToken),
          },
          record: record(a.record),
        });
        lines.push(line);
        return a;
      } catch (err) {
        Object.assign(line, {
          return: String(process.hrtime.bigint()), ended: 'indeterminate',
          event: eventLine(event, null, event.token),
        });
        lines.push(line);
        throw err;
      }
    },
  };
}
