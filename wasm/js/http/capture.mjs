// The handler's response, held until the executor has recorded it (as
// idemhttp's capture.go holds it), so that a retry never sees a response
// that was not stored. The handler writes to the real ServerResponse;
// writeHead, write, end and flushHeaders are shadowed on that object while
// it runs, and headers stay where setHeader put them.

const bodyAllowed = (status) => status !== 204 && status !== 304;

// asWritten is a stored header value as HTTP carries it: CR and LF as
// spaces, no white space at either end.
const asWritten = (v) => String(v).replace(/[\r\n]/g, ' ').replace(/^[ \t]+|[ \t]+$/g, '');

/** Holds res's response; ended resolves when the handler ends it. */
export class Capture {
  constructor(res, replayed, responseBytesMax) {
    this.res = res;
    this.replayed = replayed;
    this.responseBytesMax = responseBytesMax;
    this.chunks = [];
    this.status = 0;
    this.sent = false;
    this.ended = new Promise((resolve) => { this.resolveEnded = resolve; });
    const self = this;
    const note = (code) => { if (self.status === 0 && code >= 200) self.status = code; };
    res.writeHead = function writeHeadHeld(code, reason, headers) {
      if (typeof reason !== 'string') headers = reason;
      if (Array.isArray(headers)) for (let i = 0; i + 1 < headers.length; i += 2) this.setHeader(headers[i], headers[i + 1]);
      else if (headers) for (const [k, v] of Object.entries(headers)) this.setHeader(k, v);
      if (code >= 200 && self.status === 0) this.statusCode = code;
      note(code);
      return this;
    };
    res.write = function writeHeld(chunk, encoding, callback) {
      if (typeof encoding === 'function') { callback = encoding; encoding = undefined; }
      note(this.statusCode);
      self.hold(chunk, encoding);
      if (callback) process.nextTick(callback);
      return true;
    };
    res.end = function endHeld(chunk, encoding, callback) {
      if (typeof chunk === 'function') { callback = chunk; chunk = undefined; }
      if (typeof encoding === 'function') { callback = encoding; encoding = undefined; }
      note(this.statusCode);
      if (chunk !== undefined && chunk !== null) self.hold(chunk, encoding);
      self.resolveEnded();
      if (callback) process.nextTick(callback);
      return this;
    };
    res.flushHeaders = function flushHeadersHeld() {};
  }

  hold(chunk, encoding) {
    if (!bodyAllowed(this.status)) return;
    this.chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, encoding ?? 'utf8') : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  }

  /** Gives res its own methods back. */
  release() {
    for (const m of ['writeHead', 'write', 'end', 'flushHeaders']) delete this.res[m];
  }

  /** The response to store: the status (200 if none), the replayed headers, the body. */
  response() {
    if (this.status === 0) this.status = this.res.statusCode || 200;
    const headers = [];
    for (const name of this.replayed) {
      const v = this.res.getHeader(name);
      if (v === undefined) continue;
      for (const one of Array.isArray(v) ? v : [v]) headers.push({ name, value: asWritten(one) });
    }
    return { statusCode: this.status, headers: headers.length > 0 ? headers : null, body: Buffer.concat(this.chunks) };
  }

  /** Sends what the handler wrote to this client, once. */
  send() {
    if (this.sent) return;
    this.sent = true;
    this.release();
    if (this.status === 0) this.status = this.res.statusCode || 200;
    const body = Buffer.concat(this.chunks);
    // A response over the limit goes out as Go's does, streamed: without a
    // Content-Length the handler did not set.
    const over = body.length + storedBytes(this.response().headers) > this.responseBytesMax;
    if (bodyAllowed(this.status) && !over && !this.res.hasHeader('content-length')) this.res.setHeader('Content-Length', String(body.length));
    this.res.writeHead(this.status);
    this.res.end(body);
  }
}

// storedBytes is what stored headers count against the response limit.
const storedBytes = (headers) => (headers ?? []).reduce((n, h) => n + Buffer.byteLength(h.name) + Buffer.byteLength(h.value), 0);

export { bodyAllowed };
