// The handler's response, held until the executor has recorded it (as
// idemhttp's capture.go holds it), so that a retry never sees a response
// that was not stored. The handler writes to the real ServerResponse;
// writeHead, write, end and flushHeaders are shadowed on that object while
// it holds (whatever an outer middleware put there is kept and given back),
// and headers stay where setHeader put them.
//
// Past the policy's response limit (the body and the stored headers), what
// is held and everything after it goes straight to this client, as Go's
// does: the response cannot be stored (the record is padded past the
// limit, so the core leaves the key unknown) and is not kept in memory.

const bodyAllowed = (status) => status !== 204 && status !== 304;

// asWritten is a stored header value as HTTP carries it: CR and LF as
// spaces, no white space at either end.
const asWritten = (v) => String(v).replace(/[\r\n]/g, ' ').replace(/^[ \t]+|[ \t]+$/g, '');

const SHADOWED = ['writeHead', 'write', 'end', 'flushHeaders', 'writeEarlyHints'];

/** Holds res's response; ended resolves when the handler ends it. */
export class Capture {
  constructor(res, replayed, responseBytesMax) {
    this.res = res;
    this.replayed = replayed;
    this.responseBytesMax = responseBytesMax;
    this.chunks = [];
    this.size = 0;
    this.status = 0;
    this.sent = false;
    this.over = false;
    this.bodyMax = responseBytesMax;
    this.overStored = null;
    this.done = false;
    this.ended = new Promise((resolve) => { this.resolveEnded = resolve; });
    // What res had of its own (an outer middleware's wrappers), to give back.
    this.own = Object.fromEntries(SHADOWED.map((m) => [m, Object.getOwnPropertyDescriptor(res, m)]));
    this.through = Object.fromEntries(SHADOWED.map((m) => [m, res[m]]));
    const self = this;
    res.writeHead = function writeHeadHeld(code, reason, headers) {
      if (typeof reason === 'string') this.statusMessage = reason;
      else headers = reason;
      if (Array.isArray(headers)) {
        const seen = new Set();
        for (let i = 0; i + 1 < headers.length; i += 2) {
          const name = String(headers[i]).toLowerCase();
          if (seen.has(name)) this.appendHeader(headers[i], headers[i + 1]);
          else { this.setHeader(headers[i], headers[i + 1]); seen.add(name); }
        }
      } else if (headers) for (const [k, v] of Object.entries(headers)) this.setHeader(k, v);
      self.header(code);
      return this;
    };
    res.write = function writeHeld(chunk, encoding, callback) {
      if (typeof encoding === 'function') { callback = encoding; encoding = undefined; }
      if (self.over) return self.through.write.call(this, chunk, encoding, callback);
      self.header(this.statusCode);
      self.hold(chunk, encoding);
      if (callback) process.nextTick(callback);
      return true;
    };
    res.end = function endHeld(chunk, encoding, callback) {
      if (typeof chunk === 'function') { callback = chunk; chunk = undefined; }
      if (typeof encoding === 'function') { callback = encoding; encoding = undefined; }
      if (self.over) {
        self.done = true;
        self.resolveEnded();
        return self.through.end.call(this, chunk, encoding, callback);
      }
      if (self.done) return this; // a second end, as Node takes it: nothing more
      self.header(this.statusCode);
      if (chunk !== undefined && chunk !== null) self.hold(chunk, encoding);
      self.done = true;
      self.resolveEnded();
      if (self.over) return self.through.end.call(this, callback); // this chunk went over the limit: it is out
      if (callback) process.nextTick(callback);
      return this;
    };
    res.flushHeaders = function flushHeadersHeld() {};
    // Informational answers are not sent while the response is held (as
    // Go's middleware drops a 1xx): the final one may never be this.
    res.writeEarlyHints = function writeEarlyHintsHeld(hints, callback) { if (callback) process.nextTick(callback); };
  }

  // header notes the status the handler chose (the first final one), and
  // as Go's capture does then, the room its stored headers leave the body.
  header(code) {
    if (this.status === 0 && code >= 200) {
      this.status = code;
      this.res.statusCode = code;
      this.bodyMax = this.responseBytesMax - storedBytes(this.storedHeaders());
    }
  }

  hold(chunk, encoding) {
    if (this.done || !bodyAllowed(this.status)) return;
    // A copy: a handler may reuse its buffer once the write returns.
    const b = typeof chunk === 'string' ? Buffer.from(chunk, encoding ?? 'utf8') : Buffer.from(Uint8Array.prototype.slice.call(chunk));
    this.chunks.push(b);
    this.size += b.length;
    if (this.size > this.bodyMax) this.overflow();
  }

  // overflow sends what is held and lets the rest through: the response
  // cannot be stored, and is not kept whole in memory.
  overflow() {
    this.overStored = this.storedHeaders();
    const keep = this.responseBytesMax + 1 - storedBytes(this.overStored);
    const body = Buffer.concat(this.chunks);
    this.over = true;
    this.sent = true;
    this.chunks = [body.subarray(0, Math.max(0, keep))];
    this.size = this.chunks[0].length;
    // Through the methods held: they stay in place (passing through now),
    // so that the handler's end is still seen.
    this.through.writeHead.call(this.res, this.status);
    this.through.write.call(this.res, body);
  }

  /** Gives res its own methods back (an outer middleware's included). */
  release() {
    for (const m of SHADOWED) {
      if (this.own[m]) Object.defineProperty(this.res, m, this.own[m]);
      else delete this.res[m];
    }
  }

  storedHeaders() {
    const headers = [];
    for (const name of this.replayed) {
      const v = this.res.getHeader(name);
      if (v === undefined) continue;
      for (const one of Array.isArray(v) ? v : [v]) headers.push({ name, value: asWritten(one) });
    }
    return headers.length > 0 ? headers : null;
  }

  /** The response to store: the status (200 if none), the replayed headers, the body. */
  response() {
    if (this.status === 0) this.header(this.res.statusCode || 200);
    if (this.over) {
      // Padded past the limit: the core refuses it, and the key is left unknown.
      const body = Buffer.alloc(Math.max(this.size, this.responseBytesMax + 1 - storedBytes(this.overStored)));
      body.set(this.chunks[0]);
      return { statusCode: this.status, headers: this.overStored, body };
    }
    return { statusCode: this.status, headers: this.storedHeaders(), body: Buffer.concat(this.chunks) };
  }

  /** Sends what the handler wrote to this client, once. */
  send() {
    if (this.sent) { this.release(); return; }
    this.sent = true;
    this.release();
    if (this.status === 0) this.header(this.res.statusCode || 200);
    const body = Buffer.concat(this.chunks);
    if (bodyAllowed(this.status) && !this.res.hasHeader('content-length')) this.res.setHeader('Content-Length', String(body.length));
    this.res.writeHead(this.status);
    this.res.end(body);
  }
}

// storedBytes is what stored headers count against the response limit.
const storedBytes = (headers) => (headers ?? []).reduce((n, h) => n + Buffer.byteLength(h.name) + Buffer.byteLength(h.value), 0);

export { bodyAllowed };
