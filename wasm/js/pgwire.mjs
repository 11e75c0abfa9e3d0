// A prepared statement's execution over a pg.Pool as pgx runs Go's
// (store/pgx): Parse once per connection, then Bind, Execute and Sync in
// one write, and no Describe. pg's own Query describes the portal on every
// execution and builds a typed row object from the answer; a store that
// knows its statements' columns needs neither, and pg's share of a new
// key's CPU halved without them (BENCHMARKS.md, "Node.js"). Rows come back as arrays of the server's text (null for
// NULL), in the statement's column order.

import pgUtils from 'pg/lib/utils.js';

const { prepareValue } = pgUtils;

// The messages that never change (PostgreSQL protocol 3.0): Execute of the
// unnamed portal with no row limit, and Sync.
const EXECUTE_SYNC = Buffer.from([0x45, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0x53, 0, 0, 0, 4]);

/** A named statement: its SQL and its Parse message, built once. */
export class Statement {
  constructor(name, text) {
    this.name = name;
    this.text = text;
    const body = Buffer.concat([Buffer.from(`${name}\0${text}\0`, 'utf8'), Buffer.alloc(2)]); // no parameter types: the server infers them
    this.parse = Buffer.concat([Buffer.from([0x50]), int32(body.length + 4), body]);
    this.bindHead = Buffer.from(`\0${name}\0`, 'utf8'); // the unnamed portal, then the statement
  }
}

function int32(n) {
  const b = Buffer.allocUnsafe(4);
  b.writeInt32BE(n, 0);
  return b;
}

// message is st's execution with values, in one buffer: its Parse when
// parse is set, Bind (values mapped as pg maps a query's, by
// pg/lib/utils.js prepareValue: a Buffer sent as binary, an array as
// PostgreSQL's array text, anything else as its text; every column of the
// answer in text), Execute and Sync. The buffer is sized for the most
// bytes the values' text can take (3 a UTF-16 unit), so that no string is
// measured before it is written.
function message(st, values, parse) {
  const n = values.length;
  const mapped = new Array(n);
  let most = 0;
  for (let i = 0; i < n; i++) {
    const v = prepareValue(values[i]);
    most += v === null ? 4 : v instanceof Buffer ? 4 + v.length : 4 + 3 * v.length;
    mapped[i] = v;
  }
  const head = parse ? st.parse.length : 0;
  const b = Buffer.allocUnsafe(head + 5 + st.bindHead.length + 4 + 2 * n + most + 2 + EXECUTE_SYNC.length);
  if (parse) b.set(st.parse, 0);
  b[head] = 0x42;
  b.set(st.bindHead, head + 5);
  let o = b.writeInt16BE(n, head + 5 + st.bindHead.length);
  for (let i = 0; i < n; i++) o = b.writeInt16BE(mapped[i] instanceof Buffer ? 1 : 0, o);
  o = b.writeInt16BE(n, o);
  for (let i = 0; i < n; i++) {
    const v = mapped[i];
    if (v === null) o = b.writeInt32BE(-1, o);
    else if (v instanceof Buffer) { o = b.writeInt32BE(v.length, o); b.set(v, o); o += v.length; } else {
      const len = writeText(b, o + 4, v);
      o = b.writeInt32BE(len, o) + len;
    }
  }
  o = b.writeInt16BE(0, o); // no result format codes: every column in text
  b.writeInt32BE(o - head - 1, head + 1); // the Bind's length, now known
  b.set(EXECUTE_SYNC, o);
  return b.subarray(0, o + EXECUTE_SYNC.length);
}

// writeText writes s's UTF-8 at o and returns its length. ASCII (what
// scopes, numbers and times are) is copied by code unit: a call into
// Buffer.write per short string cost more than its bytes.
function writeText(b, o, s) {
  const len = s.length;
  for (let i = 0; i < len; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return b.write(s, o, 'utf8');
    b[o + i] = c;
  }
  return len;
}

// Exec is a pg "submittable" (the interface pg-cursor uses): the client
// hands it the connection to write on and the server's messages for it.
class Exec {
  constructor(st, values) {
    this.name = st.name; // the client records the Parse it completes under name and text
    this.text = st.text;
    this.st = st;
    this.values = values;
    this.rows = [];
    this.rowCount = null;
    this.callback = null; // set by the client (pool.query's)
  }

  submit(connection) {
    const stream = connection.stream;
    if (!stream.writable) return new Error('pgwire: the connection is not writable');
    // Parsed on this connection already (pg's Query keeps the same books).
    const parsed = connection.parsedStatements[this.name] !== undefined || connection.submittedNamedStatements[this.name] !== undefined;
    let m;
    try {
      m = message(this.st, this.values, !parsed);
    } catch (err) {
      return err; // a value pg cannot map: refused before anything is sent (the client hands it to handleError)
    }
    stream.write(m);
    if (!parsed) connection.submittedNamedStatements[this.name] = this.text;
    return null;
  }

  handleDataRow(msg) { this.rows.push(msg.fields); }

  handleCommandComplete(msg) {
    // "INSERT 0 1", "UPDATE 1", "SELECT 1": the last number is the rows'
    const m = /(\d+)$/.exec(msg.text);
    this.rowCount = m === null ? null : Number(m[1]);
  }

  handleReadyForQuery() { this.callback?.(null, this); }

  handleError(err) { this.callback?.(err); }

  // Never sent for these statements; a pg client may still call them.
  handleRowDescription() {}
  handleEmptyQuery() {}
  handlePortalSuspended() {}
  handleCopyInResponse(connection) { connection.sendCopyFail('pgwire: no COPY'); }
  handleCopyData() {}
}

// Every column as the server's text: a type parser that returns it as is.
const RAW_TEXT = { getTypeParser: () => (text) => text };

/**
 * Runs st with values on a connection of pool (pool.query's: a connection
 * that fails is released as broken). Resolves to `{rows, rowCount}`.
 */
export function exec(pool, st, values) {
  // pg's pipeline mode takes no submittable of another class: there, pg's
  // own Query, asked for rows of the server's text, answers the same.
  if (pool.options?.pipeline) return pool.query({ name: st.name, text: st.text, values, rowMode: 'array', types: RAW_TEXT });
  return pool.query(new Exec(st, values));
}
