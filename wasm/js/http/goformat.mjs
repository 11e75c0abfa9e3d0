// Go's spellings of values in messages, so that a Node server's problem
// details are the Go middleware's byte for byte (the conformance fixture,
// testdata/httpcases.json, holds them to it). Header values reach Node as
// latin1 strings: one character a byte, as Go sees them.

const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u;

const hex2 = (n) => n.toString(16).padStart(2, '0');

const SHORT = { 0x07: '\\a', 0x08: '\\b', 0x0c: '\\f', 0x0a: '\\n', 0x0d: '\\r', 0x09: '\\t', 0x0b: '\\v' };

/**
 * strconv.Quote of the bytes of s (a latin1 string, one character a
 * byte): UTF-8 is decoded, printable runes are kept, the rest escaped.
 */
export function goQuote(s) {
  const bytes = Buffer.from(s, 'latin1');
  let out = '"';
  for (let i = 0; i < bytes.length;) {
    const [rune, width] = decodeRune(bytes, i);
    i += width;
    if (rune < 0) { out += '\\x' + hex2(bytes[i - 1]); continue; }
    if (rune === 0x22 || rune === 0x5c) { out += '\\' + String.fromCharCode(rune); continue; }
    if (rune === 0x20 || (rune > 0x20 && rune < 0x7f) || (rune >= 0x80 && PRINTABLE.test(String.fromCodePoint(rune)))) {
      out += String.fromCodePoint(rune);
      continue;
    }
    if (SHORT[rune] !== undefined) out += SHORT[rune];
    else if (rune < 0x20 || rune === 0x7f) out += '\\x' + hex2(rune);
    else if (rune < 0x10000) out += '\\u' + rune.toString(16).padStart(4, '0');
    else out += '\\U' + rune.toString(16).padStart(8, '0');
  }
  return out + '"';
}

// decodeRune is utf8.DecodeRune: [rune, width], rune -1 for an invalid
// byte (width 1).
function decodeRune(b, i) {
  const c = b[i];
  if (c < 0x80) return [c, 1];
  const need = c >= 0xf0 && c <= 0xf4 ? 3 : c >= 0xe0 ? (c <= 0xef ? 2 : 0) : c >= 0xc2 && c <= 0xdf ? 1 : 0;
  if (need === 0 || i + need >= b.length) return [-1, 1];
  let r = c & (0x3f >> need);
  for (let k = 1; k <= need; k++) {
    const d = b[i + k];
    if ((d & 0xc0) !== 0x80) return [-1, 1];
    r = (r << 6) | (d & 0x3f);
  }
  const min = [0, 0x80, 0x800, 0x10000][need];
  if (r < min || r > 0x10ffff || (r >= 0xd800 && r <= 0xdfff)) return [-1, 1];
  return [r, need + 1];
}

/** encoding/json's string escaping: JSON.stringify, with <, >, & and U+2028/9 escaped as Go does, and goText's marks of bytes that are not UTF-8 as Go writes such a byte (\\ufffd). */
export function goJSON(value) {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))
    .replaceAll('\\udfff', '\\ufffd');
}

/**
 * The text of bytes (a latin1 string, one character a byte) as a Go string
 * holds them, for a message: valid UTF-8 decoded, and each byte that is not
 * UTF-8 marked by a lone surrogate (U+DFFF), which goJSON writes as Go's
 * JSON encoder writes an invalid byte.
 */
export function goText(latin1) {
  const bytes = Buffer.from(latin1, 'latin1');
  let out = '';
  for (let i = 0; i < bytes.length;) {
    const [rune, width] = decodeRune(bytes, i);
    out += rune < 0 ? '\udfff' : String.fromCodePoint(rune);
    i += width;
  }
  return out;
}
