// The request's fingerprint, as idemhttp computes it (fingerprint.go,
// mismatch.go): the body's fingerprint (JSON by the fingerprint module, or
// raw bytes with their media type) bound to the method and the request
// target, with one tag byte a part so that a 422 can name what differs.

import { createHash } from 'node:crypto';
import { MISUSE_DETAIL_UNKNOWN } from './problem.mjs';

export const RAW_DOMAIN_TAG = 'idem/http/raw/v1';
export const TARGET_DOMAIN_TAG = 'idem/http/target/v2';

const PART_NAMES = ['method', 'path', 'query', 'body'];
const TARGET_LAYOUT = 0x02;
const TAGS_START = 32 - PART_NAMES.length;
const LAYOUT_BYTE = TAGS_START - 1;

const bytesOf = (part) => (typeof part === 'string' ? Buffer.from(part, 'latin1') : part);

// hashFields is SHA-256 over field(part) for each part: its length as a
// big-endian uint64, then its bytes.
function hashFields(parts) {
  const h = createHash('sha256');
  const n = Buffer.alloc(8);
  for (const part of parts) {
    const b = bytesOf(part);
    n.writeBigUInt64BE(BigInt(b.length));
    h.update(n);
    h.update(b);
  }
  return new Uint8Array(h.digest());
}

/** The fingerprint of a body that is not JSON: its use case, media type (mediaTypeOf's spelling) and bytes. */
export const rawFingerprint = (useCase, mediaType, body) => hashFields([RAW_DOMAIN_TAG, Buffer.from(useCase, 'utf8'), mediaType, body]);

// Go's url.shouldEscape for a path: what escape writes as %XX.
const pathKeeps = (c) => /[A-Za-z0-9\-_.~$&+,/:;=@]/.test(c);
// url.validEncoded for a path: a target Go keeps as it was sent.
const validEncoded = (p) => [...p].every((c) => "!$&'()*+,;=:@[]%".includes(c) || pathKeeps(c));
const hex2 = (b) => '%' + b.toString(16).toUpperCase().padStart(2, '0');

// unescapePath is url.unescape of a path (latin1 in, latin1 out), or null
// for a malformed escape (Go's server refuses such a request with 400).
function unescapePath(p) {
  let out = '';
  for (let i = 0; i < p.length; i++) {
    if (p[i] !== '%') { out += p[i]; continue; }
    const h = p.slice(i + 1, i + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(h)) return null;
    out += String.fromCharCode(parseInt(h, 16));
    i += 2;
  }
  return out;
}

/**
 * The request target as Go's r.URL.RequestURI() writes it, from the target
 * Node received (latin1): the absolute form's path and query, and a path
 * that is not a valid escaped form escaped as url.EscapedPath does; the
 * query as sent.
 */
export function goRequestURI(raw) {
  if (raw === '*') return raw;
  let rest = raw;
  const absolute = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?]*/.exec(rest);
  if (absolute) rest = rest.slice(absolute[0].length);
  const q = rest.indexOf('?');
  let path = q >= 0 ? rest.slice(0, q) : rest;
  const query = q >= 0 ? rest.slice(q) : '';
  if (!validEncoded(path)) {
    const unescaped = unescapePath(path);
    if (unescaped !== null) path = [...unescaped].map((c) => (pathKeeps(c) ? c : hex2(c.charCodeAt(0)))).join('');
  }
  return (path === '' ? '/' : path) + query;
}

// partTag is one byte of a part: FNV-1a (32 bits), folded.
function partTag(part) {
  const b = bytesOf(part);
  let h = 2166136261;
  for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i], 16777619) >>> 0;
  return (h ^ (h >>> 8) ^ (h >>> 16) ^ (h >>> 24)) & 0xff;
}

/** What the executor compares for a request: the body's fingerprint bound to the method and the target (path and query, as sent). */
export function requestFingerprint(bodyFingerprint, method, target) {
  const fp = hashFields([TARGET_DOMAIN_TAG, bodyFingerprint, method, target]);
  const q = target.indexOf('?');
  const [path, query] = q >= 0 ? [target.slice(0, q), target.slice(q)] : [target, ''];
  fp[LAYOUT_BYTE] = TARGET_LAYOUT;
  [method, path, query, bodyFingerprint].forEach((part, i) => { fp[TAGS_START + i] = partTag(part); });
  return fp;
}

/** The 422's detail: the parts in which the request of fp differs from the stored one, when both have part tags. */
export function describeMismatch(stored, fp) {
  if (!stored || stored[LAYOUT_BYTE] !== TARGET_LAYOUT || fp[LAYOUT_BYTE] !== TARGET_LAYOUT) return MISUSE_DETAIL_UNKNOWN;
  const parts = PART_NAMES.filter((_, i) => stored[TAGS_START + i] !== fp[TAGS_START + i]);
  if (parts.length === 0) return MISUSE_DETAIL_UNKNOWN;
  const joined = parts.length === 1 ? parts[0] : parts.slice(0, -1).join(', ') + ' and ' + parts[parts.length - 1];
  return `this key was already used for another request (its ${joined}${parts.length > 1 ? ' differ' : ' differs'}): use a new key for a new request`;
}
