// Request media types, as idemhttp reads them (mediatype.go): which
// Content-Types a route takes (JSON only by default), and the one spelling
// of a media type that the raw fingerprint hashes (Go's
// mime.ParseMediaType then FormatMediaType).

import { isTchar, validToken } from './keyheader.mjs';
import { goQuote, goText } from './goformat.mjs';

export const MEDIA_TYPES_DEFAULT = Object.freeze(['application/json', '*/*+json']);

const eqFold = (a, b) => a.toLowerCase() === b.toLowerCase();

/** A route's media ranges: { ranges, list (for a 415's detail), accept (its Accept header, '' if none can be said) }. */
export function mediaRanges(types = MEDIA_TYPES_DEFAULT) {
  if (!Array.isArray(types) || types.length === 0) throw new TypeError('an empty mediaTypes takes nothing (leave it out for JSON only)');
  const ranges = types.map(parseMediaRange);
  const names = ranges.map((m) => m.typ + '/' + m.sub);
  const accept = ranges.filter((m) => !m.sub.startsWith('*+')).map((m) => m.typ + '/' + m.sub);
  return { ranges, list: names.join(', '), accept: accept.join(', ') };
}

function parseMediaRange(s) {
  if (typeof s !== 'string') throw new TypeError(`media type ${String(s)}: want a string`);
  const lower = s.toLowerCase();
  const slash = lower.indexOf('/');
  const typ = slash < 0 ? lower : lower.slice(0, slash);
  const sub = slash < 0 ? '' : lower.slice(slash + 1);
  const fail = (why) => { throw new TypeError(`media type ${goQuote(s)}: ${why}`); };
  if (slash < 0 || typ === '' || sub === '' || s.includes(';')) fail('want type/subtype, without parameters');
  if (typ !== '*' && !validToken(typ)) fail('the type is not an RFC 9110 token');
  if (sub === '*') { /* any subtype */ } else if (sub.startsWith('*+')) {
    if (!validToken(sub.slice(2))) fail('the suffix is not an RFC 9110 token');
  } else if (typ === '*') fail('a type * needs a subtype * or *+suffix');
  else if (!validToken(sub)) fail('the subtype is not an RFC 9110 token');
  return { typ, sub };
}

function matches(m, typ, sub) {
  if (m.typ !== '*' && !eqFold(m.typ, typ)) return false;
  if (m.sub === '*') return true;
  if (m.sub.startsWith('*+')) {
    const sfx = m.sub.slice(1);
    return sub.length > sfx.length && eqFold(sub.slice(sub.length - sfx.length), sfx);
  }
  return eqFold(m.sub, sub);
}

const isJSONType = (ct) => (eqFold(ct.typ, 'application') && eqFold(ct.sub, 'json')) ||
  (ct.sub.length > 5 && eqFold(ct.sub.slice(-5), '+json'));

const trimOWS = (s) => s.replace(/^[ \t]+/, '');

function parseContentType(v) {
  const slash = v.indexOf('/');
  if (slash < 0) throw new Error('no / between type and subtype');
  const ct = { typ: v.slice(0, slash), sub: '', charset: '', hasCharset: false };
  let rest = v.slice(slash + 1);
  let n = 0;
  while (n < rest.length && isTchar(rest[n])) n++;
  ct.sub = rest.slice(0, n);
  rest = rest.slice(n);
  if (!validToken(ct.typ) || ct.sub === '') throw new Error('the type or the subtype is not an RFC 9110 token');
  for (;;) {
    rest = trimOWS(rest);
    if (rest === '') return ct;
    if (rest[0] !== ';') throw new Error(`${goQuote(rest)} where a ; or the end was expected`);
    rest = trimOWS(rest.slice(1));
    if (rest === '' || rest[0] === ';') continue; // an empty parameter, which RFC 9110 allows
    const [name, value, after] = parseParameter(rest);
    if (eqFold(name, 'charset')) {
      if (ct.hasCharset) throw new Error('the charset parameter is given twice');
      ct.charset = value; ct.hasCharset = true;
    }
    rest = after;
  }
}

function parseParameter(s) {
  const eq = s.indexOf('=');
  if (eq <= 0 || !validToken(s.slice(0, eq))) throw new Error(`parameter ${goQuote(s)}: want name=value`);
  const name = s.slice(0, eq);
  s = s.slice(eq + 1);
  if (s !== '' && s[0] === '"') return [name, ...parseQuotedString(s)];
  let n = 0;
  while (n < s.length && isTchar(s[n])) n++;
  if (n === 0) throw new Error(`parameter ${name} has no value`);
  return [name, s.slice(0, n), s.slice(n)];
}

function parseQuotedString(s) {
  let out = '';
  for (let i = 1; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) return [out, s.slice(i + 1)];
    if (c === 0x5c && i + 1 < s.length) { out += s[i + 1]; i++; continue; }
    if ((c < 0x20 && c !== 0x09) || c === 0x7f) throw new Error(`a quoted value has byte 0x${c.toString(16).padStart(2, '0')}`);
    out += s[i];
  }
  throw new Error('a quoted value has no closing quote');
}

/**
 * Whether a request of Content-Type v (latin1, '' if none) is JSON; throws
 * an Error whose message is the 415's detail when the route does not take it.
 */
export function bodyMediaType(media, v) {
  if (v === '') return false;
  let ct;
  try {
    ct = parseContentType(v);
  } catch (err) {
    throw new Error(`Content-Type ${goQuote(v)} does not parse: ${err.message}`);
  }
  if (!media.ranges.some((m) => matches(m, ct.typ, ct.sub))) throw new Error(`Content-Type ${ct.typ}/${ct.sub} is not accepted: this route takes ${media.list}`);
  if (isJSONType(ct) && ct.hasCharset && !eqFold(ct.charset, 'utf-8')) throw new Error(`JSON is UTF-8 (RFC 8259): charset=${goText(ct.charset)} is not accepted`);
  return isJSONType(ct);
}

export const noContentTypeError = (media) => new Error(`the body has no Content-Type: this route takes ${media.list}`);

// What mime's functions call white space (unicode.IsSpace over latin1).
const isSpace = (c) => c === ' ' || c === '\t' || c === '\n' || c === '\v' || c === '\f' || c === '\r' || c === '\x85' || c === '\xa0';
const trimLeftSpace = (s) => { let i = 0; while (i < s.length && isSpace(s[i])) i++; return s.slice(i); };
const trimSpace = (s) => { let j = s.length; while (j > 0 && isSpace(s[j - 1])) j--; return trimLeftSpace(s.slice(0, j)); };
const TSPECIALS = '()<>@,;:\\"/[]?=';
const isTokenChar = (c) => c > ' ' && c < '\x7f' && !TSPECIALS.includes(c);
const consumeToken = (v) => { let i = 0; while (i < v.length && isTokenChar(v[i])) i++; return [v.slice(0, i), v.slice(i)]; };

/**
 * The Content-Type in one spelling, as Go's mediaTypeOf writes it
 * (mime.FormatMediaType of mime.ParseMediaType): type and parameter names
 * lower-cased, parameters sorted, a value with a byte outside printable
 * ASCII written in RFC 2231's form (q*=utf-8''%E9). A value that does not
 * parse is kept as sent, and so is one with RFC 2231 parameters of its own
 * (name*), which this port does not decode (Go does).
 */
export function mediaTypeOf(contentType) {
  const semi = contentType.indexOf(';');
  const base = trimSpace((semi < 0 ? contentType : contentType.slice(0, semi)).toLowerCase());
  const [typ, afterTyp] = consumeToken(base);
  if (typ === '') return contentType;
  let sub = '';
  if (afterTyp !== '') {
    if (afterTyp[0] !== '/') return contentType;
    const [s, after] = consumeToken(afterTyp.slice(1));
    if (s === '' || after !== '') return contentType;
    sub = s;
  }
  const params = new Map();
  let v = semi < 0 ? '' : contentType.slice(semi);
  for (;;) {
    v = trimLeftSpace(v);
    if (v === '') break;
    const p = consumeMediaParam(v);
    if (p === null) {
      if (trimSpace(v) === ';') break; // a trailing semicolon
      return contentType;
    }
    if (p.key.includes('*') || params.has(p.key)) return contentType;
    params.set(p.key, p.value);
    v = p.rest;
  }
  let out = sub === '' ? typ : typ + '/' + sub;
  if (sub === '') return contentType; // FormatMediaType wants type/subtype here
  for (const key of [...params.keys()].sort()) {
    const value = params.get(key);
    if (/[^\x20-\x7e\t]/.test(value)) { // RFC 2231 §4, as Go's FormatMediaType writes it
      out += '; ' + key + "*=utf-8''" + [...value].map((c) => (c <= ' ' || c >= '\x7f' || "*'%".includes(c) || TSPECIALS.includes(c)
        ? '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0') : c)).join('');
      continue;
    }
    out += '; ' + key + '=';
    if (value !== '' && [...value].every(isTokenChar)) out += value;
    else out += '"' + value.replace(/["\\]/g, (c) => '\\' + c) + '"';
  }
  return out;
}

function consumeMediaParam(v) {
  let rest = trimLeftSpace(v);
  if (!rest.startsWith(';')) return null;
  rest = trimLeftSpace(rest.slice(1));
  let key;
  [key, rest] = consumeToken(rest);
  key = key.toLowerCase();
  if (key === '') return null;
  rest = trimLeftSpace(rest);
  if (!rest.startsWith('=')) return null;
  rest = trimLeftSpace(rest.slice(1));
  const [value, after] = consumeValue(rest);
  if (value === '' && after === rest) return null;
  return { key, value, rest: after };
}

function consumeValue(v) {
  if (v === '') return ['', v];
  if (v[0] !== '"') return consumeToken(v);
  let out = '';
  for (let i = 1; i < v.length; i++) {
    const r = v[i];
    if (r === '"') return [out, v.slice(i + 1)];
    if (r === '\\' && i + 1 < v.length && TSPECIALS.includes(v[i + 1])) { out += v[i + 1]; i++; continue; }
    if (r === '\r' || r === '\n') return ['', v];
    out += r;
  }
  return ['', v];
}
