// Package fingerprint computes the request fingerprint of idem: the value
// that decides whether a retry under an idempotency key is "the same
// request". It is the RFC 8785 JSON Canonicalization Scheme (JCS) over a
// strict I-JSON parser, hashed with SHA-256 in a domain-separated,
// length-prefixed encoding.
//
// A wrong answer is costly either way. Two different requests judged equal
// replay one payment's response to another (or charge once where two charges
// were asked for); the same request judged different refuses an honest retry
// with 422. So key order and insignificant white space never change a
// fingerprint, every semantic change always does, and input that could be
// read two ways is refused rather than repaired.
//
// # Canonical form
//
// Canonicalize and AppendCanonical implement RFC 8785 exactly:
//
//   - object members are sorted by the UTF-16 code units of their unescaped
//     names (not by UTF-8 bytes or code points: U+1F602 sorts before U+FB33,
//     because its UTF-16 form starts with the surrogate 0xD83D);
//   - numbers are written as ECMAScript Number::toString writes the nearest
//     IEEE 754 double: the shortest digits that round-trip, plain decimal for
//     1e-6 <= |x| < 1e21 and exponent form (1e+21, 1e-7) otherwise; -0 is 0;
//   - strings escape only U+0000..U+001F (as \b \t \n \f \r where those
//     exist, else as lowercase \u00hh), '"' and '\'; everything else, '/',
//     '<', '>', '&', U+2028, U+2029 and DEL included, is written as UTF-8;
//     no Unicode normalization is applied;
//   - there is no white space.
//
// Integers beyond 2^53 are accepted and rounded to the nearest double, as
// the RFC says (9007199254740993 becomes 9007199254740992), and so are
// literals with more digits than a double keeps. A non-zero literal too
// small for a double (1e-400) rounds to 0, as ECMAScript's JSON.parse does:
// that is the RFC's rounding, not an overflow. Spec.Of is stricter about all
// three; see "Precision" below.
//
// # Strict input
//
// The input must be I-JSON (RFC 7493, required by RFC 8785 section 3.1).
// Each violation is an *Error that names what went wrong and the byte offset
// where, with a Kind to test with errors.Is; nothing is silently repaired:
//
//   - ErrInvalidUTF8: bytes that are not UTF-8, including surrogates encoded
//     directly in UTF-8 (CESU-8);
//   - ErrSurrogate: a \u escape that is a lone, reversed or mispaired
//     surrogate;
//   - ErrDuplicateName: two members of one object whose names are equal after
//     unescaping ("a" and "\u0061");
//   - ErrNumber: numbers outside JSON's grammar (01, +1, .5, 1., 0x10, NaN,
//     Infinity);
//   - ErrNumberOverflow: a number beyond the largest double (1e400); it is
//     never clamped to 1.7976931348623157e+308 or turned into Infinity;
//   - ErrTrailingData: anything but white space after the value;
//   - ErrBOM: a leading UTF-8 byte-order mark;
//   - ErrTooDeep and ErrTooLarge: nesting or size beyond the limits of the
//     Canonicalizer (DepthMaxDefault 128, BytesMaxDefault 1 MiB; both can be
//     set, the depth up to DepthMax);
//   - ErrSyntax: anything else that is not JSON.
//
// # The fingerprint
//
// A Spec holds a use case, a fingerprint schema version and a field
// selection; Spec.Of hashes a request body:
//
//	fingerprint = SHA-256(pre-image)
//
//	pre-image = field("idem/fingerprint/v1")    DomainTag
//	            field(use case)
//	            uint32 schema version
//	            mode byte, then either
//	  'D':      field(canonical body, less the excluded values)
//	  'I':      uint64 number of included pointers, then for each, in order:
//	            field(pointer text) 0x00                            absent
//	            field(pointer text) 0x01 field(canonical value)     present
//
//	field(b)  = uint64 big-endian len(b), then b
//
// All integers are big-endian. Every variable-length part carries its
// length, so the pre-image can be parsed back into its parts in exactly one
// way: no two different (use case, version, selection) ever share a
// pre-image. A plain join would not have that property. With a separator,
// use case "a|b" and body "c" would meet use case "a" and body "b|c"; with
// nothing between them, "ab"+"c" meets "a"+"bc". Someone who controls part
// of one field could then move bytes across the boundary and make two
// different requests collide. The domain tag keeps these hashes apart from
// any other SHA-256 computed over similar bytes, and is renamed if the
// encoding ever changes.
//
// The same body under another use case or schema version never shares a
// fingerprint. Bump the schema version whenever the meaning of a request or
// the selection changes. Changing a selection without bumping it is allowed
// but takes care: with an exclude list, the list itself is not hashed, so
// bodies that lack the newly excluded field keep their fingerprints.
//
// Of is a convenience that builds a Spec for one call. On a hot path, build
// the Spec once with NewSpec: Spec.Of does not allocate. It keeps its scratch
// buffers in a sync.Pool.
//
// # Field selection
//
// Fields are chosen by JSON Pointer (RFC 6901). A pointer token that is an
// array index ("0", or digits without a leading zero) selects an array
// element, and any token selects the member of that name in an object, so
// "/items/1" works on an array and on an object with a member "1". Pointers
// are checked by NewSpec. Malformed ones, duplicates, Exclude(""), and an
// included pointer at or under an excluded one are errors of kind
// ErrPointer.
//
// Exclude(pointers...) removes the values at those pointers before the body
// is canonicalized, whether they are there or not. An excluded field never
// changes the fingerprint, present or absent: use it for a client timestamp
// or a trace id. Only the excluded member goes. Its parent stays, so
// {"meta":{"trace":"x"}} and {"meta":{}} are the same request, and both
// differ from {} (where meta is absent). An excluded array element is
// removed from its array, and the elements after it move down.
//
// Include(pointers...) makes only those values count, in that order, each
// encoded with its pointer and a presence marker. A pointer that selects
// nothing (the member is missing, the index is past the end, or a step goes
// through a scalar) is encoded as absent. That is not an error, since an
// optional field may be missing, unless RequireIncluded is set. Absent
// differs from every present value: a missing "currency" and "currency":
// null are different requests. Exclude pointers within included values
// still apply.
//
// The whole body must be strict I-JSON, selected or not: a body with a
// duplicate member or a lone surrogate in an excluded field is still
// refused. Only the precision rule below is limited to what counts.
//
// # Precision
//
// JSON numbers are decimal. RFC 8785 reads them as IEEE 754 doubles, so
// distinct literals can become one double: 9007199254740992 and
// 9007199254740993, or 0.1 and 0.10000000000000000001. With RFC rounding,
// two different amounts would share a fingerprint, and one payment's
// response would be replayed to another (a flaw of an existing Go JCS
// library). By default Spec.Of therefore refuses, with ErrPrecision, any
// number in the selected values that is:
//
//   - an integer beyond +-(2^53-1), the range where every integer has its own
//     double, however it is written. 9007199254740993,
//     9007199254740993.0, 9.007199254740993e15 and 1e16 are all refused,
//     because there consecutive integers share doubles and an exponent does
//     not make the value exact. 9007199254740991.0 is accepted;
//   - a literal with 16 or more significant digits that is not the shortest
//     round-trip form of its double (0.10000000000000000001,
//     333333333.33333329). Literals of at most 15 significant digits (all
//     hand-written amounts) are exact enough by construction (DBL_DIG = 15).
//     Shortest forms, which every JSON encoder writes for a double
//     (0.30000000000000004), are accepted;
//   - a non-zero literal that underflows to 0 (1e-400).
//
// Together these make the accepted numbers map one-to-one to doubles: two
// accepted literals share a fingerprint only if they are the same number.
// AllowImpreciseNumbers accepts all of them with RFC rounding. Canonicalize
// itself always rounds as the RFC says.
//
// Send amounts as integers in minor units (cents: "amount": 1250), which are
// exact up to 2^53-1, or as strings ("amount": "12.50"). Never send them as
// binary floating point. Strings are compared exactly: "12.50" and "12.5"
// are different requests.
package fingerprint
