// The payments service of examples/payments, in Node.js with Express:
// POST /payments charges a fake gateway at most once per idempotency key,
// with the same bodies and answers as the Go service, on the same
// PostgreSQL table if you point both at it.
//
//   node wasm/js/examples/payments/server.mjs                    # memory store on 127.0.0.1:8081
//   node wasm/js/examples/payments/server.mjs --store pg --dsn postgres://postgres@127.0.0.1:5432/test
//   curl -i localhost:8081/payments -H 'X-Principal: alice' \
//     -H 'Idempotency-Key: 8e03978e-40d5-43e8-bc93-6894a57f9324' \
//     -H 'Content-Type: application/json' \
//     -d '{"customerId":"c-1","amountCents":1250,"currency":"EUR"}'
//
// Send it again: the same 201, byte for byte, with Idempotent-Replayed:
// true. Change the amount under the same key: 422. Customers decline-,
// down- and timeout- misbehave as in the Go example. This service runs no
// workers (the Node package has no sweeper or reconciler yet): on a shared
// PostgreSQL table, the Go service's workers settle what it leaves unknown.

import { parseArgs } from 'node:util';
import express from 'express';
import pg from 'pg';
import { createIdem, attemptOf, notExecuted, outcomeUnknown, newProblem, writeProblem, Code } from '@idemkit/idem-core/http';
import { createPgStore } from '@idemkit/idem-core/pgstore';
import { migrate } from '@idemkit/idem-core/pgmigrate';
import { Gateway, RefusedBeforeSendingError } from './gateway.mjs';

// goJSON is JSON as Go's encoding/json writes these values (<, > and & escaped), so that both services' bodies are one.
const goJSON = (v) => JSON.stringify(v).replace(/[<>&\u2028\u2029]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));

function sendJSON(res, status, value, headers = {}) {
  const body = Buffer.from(goJSON(value));
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.setHeader('Content-Type', 'application/json');
  res.status(status).end(body);
}

// The stand-in for authentication: X-Principal names the caller.
function authenticate(req, res, next) {
  const p = req.get('X-Principal');
  if (!p) {
    res.setHeader('WWW-Authenticate', 'X-Principal realm="payments example"');
    writeProblem(res, newProblem(Code.Unauthenticated, 401, 'X-Principal is required (a stand-in for authentication)'));
    return;
  }
  req.principal = p;
  next();
}

const FIELDS = new Set(['customerId', 'amountCents', 'currency', 'clientRequestTime']);

// paymentRequest is the body, checked as the Go service checks it.
function paymentRequest(body) {
  if (body === null || typeof body !== 'object' || Array.isArray(body) || Object.keys(body).some((k) => !FIELDS.has(k))) return null;
  const { customerId = '', amountCents = 0, currency = '' } = body;
  if (typeof customerId !== 'string' || typeof currency !== 'string' || !Number.isSafeInteger(amountCents)) return null;
  if (customerId === '' || amountCents <= 0 || Buffer.byteLength(currency) !== 3) return null;
  return { customerId, amountCents, currency };
}

const paymentBody = (p) => ({ id: p.id, customerId: p.customerId, amountCents: p.amountCents, currency: p.currency, status: p.status });

function createPayment(gateway) {
  return async (req, res) => {
    const p = paymentRequest(req.body);
    if (p === null) return sendJSON(res, 400, { error: 'want customerId, a positive amountCents and a 3-letter currency' });
    const at = attemptOf(req);
    let charged;
    try {
      charged = await gateway.charge(at, at.signal, p);
    } catch (err) {
      if (err instanceof RefusedBeforeSendingError) {
        notExecuted(req, err); // nothing left the process: a retry may charge
        return sendJSON(res, 502, { error: 'the payment gateway is unavailable; nothing was charged, retry' });
      }
      outcomeUnknown(req, err); // it may have charged: the reconciler will tell
      return sendJSON(res, 504, { error: `the payment's outcome is unknown (${err?.message ?? err}); retry with the same key` });
    }
    return sendJSON(res, charged.status === 'declined' ? 402 : 201, paymentBody(charged), { Location: `/payments/${charged.id}` });
  };
}

function getPayment(gateway) {
  return (req, res) => {
    const p = gateway.payment(req.params.id);
    if (p === undefined || p.principal !== req.principal) {
      return writeProblem(res, { type: 'about:blank', title: 'Not Found', status: 404, detail: 'no such payment', code: '', retryAfterSeconds: 0 });
    }
    return sendJSON(res, 200, paymentBody(p.payment));
  };
}

/** The app over a store (a function of the core, or undefined for memory), with its gateway. */
export async function createApp({ store, gateway = new Gateway() } = {}) {
  // README:begin
  // One executor for the whole process, built at start-up.
  const idem = await createIdem({ store });
  const protect = idem.route({
    useCase: 'payments.create',
    principal: (req) => req.principal, // whose key it is: two users' keys never meet
    exclude: ['/clientRequestTime'], // a client timestamp never decides
    logger: console, // each 5xx it answers, once
  });
  const app = express();
  app.use(authenticate);
  app.post('/payments', protect(createPayment(gateway)));
  app.get('/payments/:id', getPayment(gateway)); // the Location: safe, so not protected
  // README:end
  return { app, idem, gateway };
}

async function main() {
  const { values } = parseArgs({
    options: {
      addr: { type: 'string', default: '127.0.0.1:8081' },
      store: { type: 'string', default: 'mem' },
      dsn: { type: 'string', default: '' },
      'pg-schema': { type: 'string', default: '' },
      'gateway-delay-ms': { type: 'string', default: '0' },
    },
  });
  let pool = null;
  let store;
  if (values.store === 'pg') {
    if (values.dsn === '') throw new Error('--store pg needs --dsn');
    pool = new pg.Pool({ connectionString: values.dsn, max: 16 });
    const schema = values['pg-schema'] || 'public';
    await migrate(pool, { schema }); // store/pgx's migrations: safe when many instances, Go or Node, start at once
    store = (core) => createPgStore(core, pool, { schema });
  } else if (values.store !== 'mem') throw new Error(`--store ${values.store}: want mem or pg`);
  const { app, idem } = await createApp({ store, gateway: new Gateway(Number(values['gateway-delay-ms'])) });
  const [host, port] = [values.addr.slice(0, values.addr.lastIndexOf(':')), Number(values.addr.slice(values.addr.lastIndexOf(':') + 1))];
  const server = app.listen(port, host, () => {
    const a = server.address();
    console.log(`payments: listening on ${a.address}:${a.port} (store ${values.store})`);
  });
  // Requests under way finish (and record their outcome, even for a client
  // that has gone) before the connections close and the store with them.
  const stop = () => {
    server.close();
    idem.drain().then(async () => {
      server.closeAllConnections();
      await idem.store.close?.(); // its LISTEN connection
      await pool?.end();
      console.log('payments: stopped');
    });
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err) => { console.error('payments:', err.message); process.exit(1); });
}
