// The fixtures' JSON (written by the Go tests of package wasmcore) as the
// host's values: 64-bit integers are decimal strings, an int of the core a
// number or, past 2^53, a decimal string; the zero time is null; bytes are
// base64, fingerprints hex.
const big = (s) => BigInt(s);
const time = (s) => (s === null ? null : BigInt(s));
const hex = (s) => Uint8Array.from(Buffer.from(s, 'hex'));
const bytes = (s) => (s === null ? null : Uint8Array.from(Buffer.from(s, 'base64')));
const int = (v) => (typeof v === 'string' ? BigInt(v) : v);

export function response(r) {
  return { statusCode: int(r.statusCode), headers: r.headers, body: bytes(r.body), schemaVersion: r.schemaVersion };
}

export function record(r) {
  return {
    tenant: r.tenant, principal: r.principal, useCase: r.useCase, key: r.key, status: r.status,
    fingerprint: hex(r.fingerprint), token: big(r.token), version: big(r.version), response: response(r.response),
    lastErrorCode: r.lastErrorCode, lockedUntil: time(r.lockedUntil), reconcileAfter: time(r.reconcileAfter),
    reconcileAttempts: r.reconcileAttempts, createdAt: time(r.createdAt), completedAt: time(r.completedAt),
    expiresAt: time(r.expiresAt),
  };
}

export function event(e) {
  return {
    kind: e.kind, now: time(e.now), fingerprint: hex(e.fingerprint), token: big(e.token),
    response: response(e.response), errorCode: e.errorCode, verdict: e.verdict,
  };
}

export function policy(p) {
  return {
    ...p, leaseDuration: big(p.leaseDuration), ttl: big(p.ttl), inFlightWait: big(p.inFlightWait),
    retryAfter: big(p.retryAfter), reconcileBackoffBase: big(p.reconcileBackoffBase),
    reconcileBackoffMax: big(p.reconcileBackoffMax), tombstoneRetention: big(p.tombstoneRetention),
    keyBytesMax: int(p.keyBytesMax), requestBytesMax: int(p.requestBytesMax), responseBytesMax: int(p.responseBytesMax),
  };
}

export function transition(r) {
  return {
    decision: { kind: r.decisionKind, token: big(r.decisionToken), retryAfter: big(r.retryAfter) },
    write: { kind: r.writeKind, expectVersion: big(r.expectVersion), expectToken: big(r.expectToken) },
  };
}
