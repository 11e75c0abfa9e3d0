// The idempotency key header, read as idemhttp reads it (key.go,
// structured.go): bare, or an RFC 9651 String whose parameters are checked
// and ignored; a header sent twice, or a list, is refused rather than one
// picked (two intermediaries could pick differently). Then the core's rules
// for a key (core.ValidateKey). Messages are Go's, byte for byte.

import { goQuote } from './goformat.mjs';

export const KEY_BYTES_MIN = 16;

export class KeyError extends Error {
  constructor(message) { super(message); this.name = 'KeyError'; }
}

const errMissing = 'the idempotency key header is missing';
const errEmpty = 'the idempotency key header is empty';
const errRepeated = 'the idempotency key header is sent more than once';
const errList = 'the idempotency key header holds a list (a comma outside a quoted string): send one key';

/**
 * The key of a request: { key, present } or throws a KeyError. rawHeaders
 * is Node's (names and values alternating, values latin1: a byte each);
 * name is the header's name.
 */
export function keyOf(rawHeaders, name) {
  const lower = name.toLowerCase();
  let value = null;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i].toLowerCase() !== lower) continue;
    if (value !== null) throw new KeyError(errRepeated);
    value = rawHeaders[i + 1].replace(/^[ \t]+|[ \t]+$/g, '');
  }
  if (value === null) return { key: '', present: false };
  if (value === '') throw new KeyError(errEmpty);
  if (value[0] === '"') return { key: parseKeyItem(value), present: true };
  if (value.includes(',')) throw new KeyError(errList);
  return { key: value, present: true };
}

export const missingKey = () => new KeyError(errMissing);

/** core.ValidateKey, with the core's message. */
export function validateKey(key, keyBytesMax) {
  const refuse = (detail) => { throw new KeyError('idem/core: invalid idempotency key: ' + detail); };
  if (key === '') refuse(`empty, want ${KEY_BYTES_MIN}..${keyBytesMax} bytes`);
  if (key.length < KEY_BYTES_MIN || key.length > keyBytesMax) refuse(`${key.length} bytes, want ${KEY_BYTES_MIN}..${keyBytesMax}`);
  if (key[0] === ' ' || key[key.length - 1] === ' ') refuse('a space at its start or end (keys made of spaces included)');
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) refuse(`${c >= 0x80 ? 'non-ASCII byte' : 'control character'} 0x${c.toString(16).padStart(2, '0')} at byte ${i}`);
  }
}

function parseKeyItem(v) {
  let [key, rest] = parseSFString(v);
  rest = skipParameters(rest);
  const trimmed = rest.replace(/^ +/, '');
  if (trimmed === '') return key;
  if (trimmed[0] === ',') throw new KeyError(errList);
  throw new KeyError(`the key's quoted string is followed by ${goQuote(rest)}, want parameters (;key or ;key=value) or nothing`);
}

// parseSFString reads the String at v's start: [value, rest].
function parseSFString(v) {
  let out = '';
  for (let i = 1; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c === 0x5c) {
      if (i + 1 >= v.length || (v[i + 1] !== '"' && v[i + 1] !== '\\')) throw new KeyError(`the key's quoted string has an invalid escape at byte ${i}`);
      out += v[i + 1];
      i++;
    } else if (c === 0x22) {
      return [out, v.slice(i + 1)];
    } else if (c < 0x20 || c > 0x7e) {
      throw new KeyError(`the key's quoted string has byte 0x${c.toString(16).padStart(2, '0')} at byte ${i}, want printable ASCII`);
    } else {
      out += v[i];
    }
  }
  throw new KeyError("the key's quoted string has no closing quote");
}

const isDigit = (c) => c >= '0' && c <= '9';
const isLower = (c) => c >= 'a' && c <= 'z';
const isAlpha = (c) => isLower(c) || (c >= 'A' && c <= 'Z');
const isLowerHex = (c) => isDigit(c) || (c >= 'a' && c <= 'f');
export const isTchar = (c) => isAlpha(c) || isDigit(c) || "!#$%&'*+-.^_`|~".includes(c);
/** An RFC 9110 token (a field name, a method, a media type's part). */
export const validToken = (s) => typeof s === 'string' && s !== '' && [...s].every(isTchar);

function skipParameters(s) {
  while (s !== '' && s[0] === ';') {
    s = s.slice(1).replace(/^ +/, '');
    const n = keyLen(s);
    if (n === 0) throw new KeyError(`the key's parameter ${goQuote(s)} does not start with a key (a lowercase letter or *, then lowercase letters, digits, _ - . *)`);
    const name = s.slice(0, n);
    s = s.slice(n);
    if (s === '' || s[0] !== '=') continue; // a parameter without a value is true
    try {
      s = skipBareItem(s.slice(1));
    } catch (err) {
      throw new KeyError(`the key's parameter ${name}: ${err.message}`);
    }
  }
  return s;
}

function keyLen(s) {
  if (s === '' || !(isLower(s[0]) || s[0] === '*')) return 0;
  let n = 1;
  while (n < s.length && (isLower(s[n]) || isDigit(s[n]) || '_-.*'.includes(s[n]))) n++;
  return n;
}

function skipBareItem(s) {
  if (s === '') throw new Error('no value after =');
  const c = s[0];
  if (c === '-' || isDigit(c)) return skipNumber(s)[0];
  if (c === '"') return parseSFString(s)[1];
  if (c === '*' || isAlpha(c)) return skipToken(s);
  if (c === ':') return skipByteSequence(s);
  if (c === '?') {
    if (s.length < 2 || (s[1] !== '0' && s[1] !== '1')) throw new Error(`${goQuote(s)} is not a boolean (?0 or ?1)`);
    return s.slice(2);
  }
  if (c === '@') {
    let rest;
    try {
      const [r, decimal] = skipNumber(s.slice(1));
      if (decimal) throw new Error('a decimal');
      rest = r;
    } catch (err) {
      throw new Error(`${goQuote(s)} is not a date (@ and an integer): ${err.message}`);
    }
    return rest;
  }
  if (c === '%') return skipDisplayString(s);
  throw new Error(`${goQuote(s)} is not a structured field value`);
}

function skipNumber(s) {
  let i = 0;
  if (s !== '' && s[0] === '-') i++;
  const start = i;
  let dot = -1;
  for (; i < s.length; i++) {
    const c = s[i];
    if (isDigit(c)) { /* a digit */ } else if (c === '.' && dot < 0) {
      if (i - start > 12) throw new Error(`${goQuote(s)} is not a decimal: more than 12 digits before the dot`);
      dot = i;
    } else break;
    if (dot < 0 && i + 1 - start > 15) throw new Error(`${goQuote(s)} is not an integer: more than 15 digits`);
  }
  if (i === start) throw new Error(`${goQuote(s)} is not an integer: no digits`);
  if (dot < 0) return [s.slice(i), false];
  if (dot === i - 1 || i - dot - 1 > 3) throw new Error(`${goQuote(s)} is not a decimal: want 1 to 3 digits after the dot`);
  return [s.slice(i), true];
}

function skipToken(s) {
  let i = 1;
  while (i < s.length && (isTchar(s[i]) || s[i] === ':' || s[i] === '/')) i++;
  return s.slice(i);
}

const BASE64 = /^[A-Za-z0-9+/]*$/;

function skipByteSequence(s) {
  const end = s.indexOf(':', 1);
  if (end < 0) throw new Error(`${goQuote(s)} is not a byte sequence: no closing colon`);
  const content = s.slice(1, end);
  for (const c of content) {
    if (!isAlpha(c) && !isDigit(c) && c !== '+' && c !== '/' && c !== '=') throw new Error(`${goQuote(s)} is not a byte sequence: byte ${goQuoteRune(c)} is not base64`);
  }
  const bare = content.replace(/=+$/, '');
  // base64.RawStdEncoding (not strict: bits past the last byte are ignored).
  if (!BASE64.test(bare) || bare.length % 4 === 1) throw new Error(`${goQuote(s)} is not a byte sequence: ${rawBase64Error(bare)}`);
  return s.slice(end + 1);
}

// rawBase64Error is base64.CorruptInputError's text: the offset of the
// first byte the decoder cannot take.
function rawBase64Error(b) {
  const bad = b.search(/[^A-Za-z0-9+/]/);
  return `illegal base64 data at input byte ${bad >= 0 ? bad : b.length - 1}`;
}

function goQuoteRune(c) {
  if (c === "'") return "'\\''";
  if (c === '\\') return "'\\\\'";
  return "'" + goQuote(c).slice(1, -1).replace(/\\"/, '"') + "'";
}

function skipDisplayString(s) {
  if (s.length < 2 || s[1] !== '"') throw new Error(`${goQuote(s)} is not a display string: want %" to open it`);
  const decoded = [];
  for (let i = 2; i < s.length; i++) {
    const c = s[i];
    const code = s.charCodeAt(i);
    if (c === '"') {
      if (!isUTF8(decoded)) throw new Error(`${goQuote(s)} is not a display string: not UTF-8`);
      return s.slice(i + 1);
    }
    if (code < 0x20 || code > 0x7e) throw new Error(`${goQuote(s)} is not a display string: byte 0x${code.toString(16).padStart(2, '0')}`);
    if (c === '%') {
      if (i + 2 >= s.length || !isLowerHex(s[i + 1]) || !isLowerHex(s[i + 2])) throw new Error(`${goQuote(s)} is not a display string: want % and two lowercase hex digits`);
      decoded.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else decoded.push(code);
  }
  throw new Error(`${goQuote(s)} is not a display string: no closing quote`);
}

function isUTF8(bytes) {
  try { new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bytes)); return true; } catch { return false; }
}
