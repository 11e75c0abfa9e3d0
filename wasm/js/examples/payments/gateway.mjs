// The fake payment gateway of examples/payments, in Node: a ledger of
// charges by attempt, and customers that misbehave by their id's prefix
// (decline-, down-, timeout-). Its answers are the Go gateway's.

export class RefusedBeforeSendingError extends Error {
  constructor() { super('gateway: connection refused, nothing was sent'); this.name = 'RefusedBeforeSendingError'; }
}
export class GatewayTimeoutError extends Error {
  constructor() { super('gateway: timed out waiting for the answer'); this.name = 'GatewayTimeoutError'; }
}
export class PastDeadlineError extends Error {
  constructor() { super("gateway: the attempt's deadline has passed, refused"); this.name = 'PastDeadlineError'; }
}

const sleep = (ms, signal) => new Promise((resolve, reject) => {
  if (signal?.aborted) { reject(signal.reason); return; }
  const t = setTimeout(resolve, ms);
  signal?.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason); }, { once: true });
});

// attemptID names an attempt as Go's does: the scope and the fencing token.
const attemptID = (scope, token) => `${JSON.stringify([scope.tenant, scope.principal, scope.useCase, scope.key])}/${token}`;

export class Gateway {
  constructor(delayMs = 0) {
    this.delayMs = delayMs;
    this.ledger = new Map(); // by attempt
    this.byID = new Map(); // id -> { payment, principal }
  }

  /** Charges p once per attempt ({scope, token, lockedUntil}); its fencing token is the gateway's own idempotency key. */
  async charge(attempt, signal, p) {
    if (p.customerId.startsWith('down-')) throw new RefusedBeforeSendingError();
    await sleep(this.delayMs, signal); // a signal's abort: it may or may not have reached the gateway
    if (attempt.lockedUntil !== null && BigInt(Date.now()) * 1_000_000n > attempt.lockedUntil) throw new PastDeadlineError();
    const id = attemptID(attempt.scope, attempt.token);
    let charged = this.ledger.get(id);
    if (charged === undefined) {
      charged = {
        id: `pay_${attempt.token}`, customerId: p.customerId, amountCents: p.amountCents, currency: p.currency,
        status: p.customerId.startsWith('decline-') ? 'declined' : 'succeeded',
      };
      this.ledger.set(id, charged);
      this.byID.set(charged.id, { payment: charged, principal: attempt.scope.principal });
    }
    if (p.customerId.startsWith('timeout-')) throw new GatewayTimeoutError(); // charged, but the answer never arrives
    return charged;
  }

  payment(id) { return this.byID.get(id); }
  get charges() { return this.ledger.size; }
}
