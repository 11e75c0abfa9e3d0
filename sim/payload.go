package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/fingerprint"
)

// A request's payload is a JSON document. The world holds it as a value
// (jsonValue); a client writes it out anew for every send, as an SDK
// would: members in any order, white space here and there, characters
// escaped or not, and a client timestamp the fingerprint excludes. The
// servers fingerprint the bytes they receive with package fingerprint; the
// checkers hold that to the pre-image SPEC §3 and fingerprint/doc.go
// define, computed here from the value by a reference of the simulator's
// own (refFingerprint), which shares no code with package fingerprint.

// jsonValue is a JSON value of the world's payloads: no floats (amounts
// are integers in minor units, as the fingerprint package asks).
type jsonValue struct {
	kind    byte // 'n' null, 'i' integer, 's' string, 'o' object
	num     int64
	str     string
	members []jsonMember // in the order the world made them: not canonical
}

type jsonMember struct {
	name  string
	value jsonValue
}

func jsonInt(n int64) jsonValue          { return jsonValue{kind: 'i', num: n} }
func jsonStr(s string) jsonValue         { return jsonValue{kind: 's', str: s} }
func jsonNull() jsonValue                { return jsonValue{kind: 'n'} }
func jsonObj(ms ...jsonMember) jsonValue { return jsonValue{kind: 'o', members: ms} }

// The excluded members: a client's send time, at the top and nested. They
// change on every send and must never change a fingerprint.
const (
	excludedTop    = "client_ts"
	excludedParent = "meta"
	excludedChild  = "sent_at"
)

// includedMembers are the members a seed that fingerprints selected values
// (fingerprint.Include) counts, in this order. "note" is optional: absent,
// null and a string are three different requests.
var includedMembers = [...]string{"amount", "currency", "customer", "note"}

// useCases and schemaVersions are what clients send under: the same body
// under another use case or version is another request (SPEC §3).
var (
	useCases       = [...]string{"payments.create", "payments.capture"}
	schemaVersions = [...]uint32{1, 2}
)

// Member names and string values, some beyond ASCII: names whose UTF-16
// order is not their UTF-8 order (U+FB01 and U+1F600, U+E000), and values
// with the characters JSON escapes.
var (
	customerNames  = [...]string{"id", "\uFB01rma", "\U0001F600", "\uE000x", "\u00e9tage", "Zeile", "z"}
	customerValues = [...]string{"c-1", "Zo\u00eb \"Z\"", "a\\b", "line\nbreak", "\u20ac", "\U0001F4B3 card", "tab\there"}
)

// payloadSpace is a seed's vocabulary of payloads: small, so that equal
// bodies under other keys, use cases and versions, and bodies that differ
// only in an absent or null note, are common within a run.
type payloadSpace struct {
	customers []jsonValue
	include   bool    // the seed's servers fingerprint the included members only
	longShare float64 // the share of long actions (longActionShares)
	specs     [len(useCases)][len(schemaVersions)]*fingerprint.Spec
}

// init draws the seed's customers and fingerprint selection, and builds the
// servers' specs.
func (ps *payloadSpace) init(r *rand.Rand) {
	ps.include = r.IntN(2) == 0
	ps.longShare = longActionShares[r.IntN(len(longActionShares))]
	for range 3 {
		n := 1 + r.IntN(3)
		names := r.Perm(len(customerNames))[:n]
		ms := make([]jsonMember, n)
		for i, k := range names {
			ms[i] = jsonMember{customerNames[k], jsonStr(customerValues[r.IntN(len(customerValues))])}
		}
		ps.customers = append(ps.customers, jsonObj(ms...))
	}
	opts := []fingerprint.Option{fingerprint.Exclude("/"+excludedTop, "/"+excludedParent+"/"+excludedChild)}
	if ps.include {
		ptrs := make([]string, len(includedMembers))
		for i, m := range includedMembers {
			ptrs[i] = "/" + m
		}
		opts = append(opts, fingerprint.Include(ptrs...))
	}
	for u, uc := range useCases {
		for v, ver := range schemaVersions {
			sp, err := fingerprint.NewSpec(uc, ver, opts...)
			if err != nil {
				panic(err) // unreachable: the pointers are fixed and valid
			}
			ps.specs[u][v] = sp
		}
	}
}

// draw makes a payload: its members in a random order.
func (ps *payloadSpace) draw(r *rand.Rand) jsonValue {
	ms := []jsonMember{
		{"amount", jsonInt([]int64{100, 250, 1000}[r.IntN(3)])},
		{"currency", jsonStr([]string{"EUR", "USD"}[r.IntN(2)])},
		{"customer", ps.customers[r.IntN(len(ps.customers))]},
	}
	switch r.IntN(3) {
	case 1:
		ms = append(ms, jsonMember{"note", jsonNull()})
	case 2:
		ms = append(ms, jsonMember{"note", jsonStr("gift")})
	}
	return jsonObj(ms...)
}

// render writes v as a client sends it at sentAt: the excluded members
// added, members shuffled, white space and escapes drawn from r.
func render(dst []byte, v *jsonValue, sentAt int64, r *rand.Rand) []byte {
	body := *v
	body.members = append(slices.Clone(v.members),
		jsonMember{excludedTop, jsonInt(sentAt)},
		jsonMember{excludedParent, jsonObj(jsonMember{excludedChild, jsonInt(sentAt)})})
	return renderValue(dst, &body, r)
}

var whiteSpace = [...]string{"", "", " ", "\n  ", "\t"}

func renderValue(dst []byte, v *jsonValue, r *rand.Rand) []byte {
	ws := func() { dst = append(dst, whiteSpace[r.IntN(len(whiteSpace))]...) }
	switch v.kind {
	case 'n':
		return append(dst, "null"...)
	case 'i':
		return strconv.AppendInt(dst, v.num, 10)
	case 's':
		return renderString(dst, v.str, r)
	}
	dst = append(dst, '{')
	for i, k := range r.Perm(len(v.members)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		ws()
		m := &v.members[k]
		dst = renderString(dst, m.name, r)
		ws()
		dst = append(dst, ':')
		ws()
		dst = renderValue(dst, &m.value, r)
		ws()
	}
	return append(dst, '}')
}

// renderString writes s as a JSON string, escaping what must be and, now
// and then, what need not be (\u escapes, surrogate pairs included).
func renderString(dst []byte, s string, r *rand.Rand) []byte {
	escapeAll := r.IntN(4) == 0
	dst = append(dst, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', byte(c))
		case c < 0x20 || escapeAll && c >= 0x80:
			if c >= 0x10000 {
				hi, lo := utf16.EncodeRune(c)
				dst = appendU(appendU(dst, hi), lo)
			} else {
				dst = appendU(dst, c)
			}
		default:
			dst = utf8.AppendRune(dst, c)
		}
	}
	return append(dst, '"')
}

func appendU(dst []byte, c rune) []byte {
	const digits = "0123456789abcdef"
	return append(dst, '\\', 'u', digits[c>>12&15], digits[c>>8&15], digits[c>>4&15], digits[c&15])
}

// refPreimage is the pre-image of v's fingerprint under the seed's
// selection, by the definition in fingerprint/doc.go: field(domain tag),
// field(use case), uint32 version, a mode byte, then the canonical body
// less the excluded members ('D') or each included pointer with a presence
// marker and its canonical value ('I'); field(b) is a uint64 length, then b.
func (ps *payloadSpace) refPreimage(v *jsonValue, useCase string, version uint32) []byte {
	pre := refField(nil, "idem/fingerprint/v1")
	pre = refField(pre, useCase)
	pre = binary.BigEndian.AppendUint32(pre, version)
	if !ps.include {
		// The excluded members go; their parent stays, empty.
		body := *v
		body.members = append(slices.Clone(v.members), jsonMember{excludedParent, jsonObj()})
		return refField(append(pre, 'D'), string(canonical(nil, &body)))
	}
	pre = append(pre, 'I')
	pre = binary.BigEndian.AppendUint64(pre, uint64(len(includedMembers)))
	for _, name := range includedMembers {
		pre = refField(pre, "/"+name)
		i := slices.IndexFunc(v.members, func(m jsonMember) bool { return m.name == name })
		if i < 0 {
			pre = append(pre, 0)
			continue
		}
		pre = refField(append(pre, 1), string(canonical(nil, &v.members[i].value)))
	}
	return pre
}

// refFingerprint is the fingerprint v must have.
func (ps *payloadSpace) refFingerprint(v *jsonValue, useCase string, version uint32) core.Fingerprint {
	return sha256.Sum256(ps.refPreimage(v, useCase, version))
}

func refField(dst []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint64(dst, uint64(len(s))), s...)
}

// canonical is RFC 8785 for the world's values: members sorted by the
// UTF-16 code units of their names, strings escaping only '"', '\' and
// U+0000..U+001F, integers in plain decimal, no white space.
func canonical(dst []byte, v *jsonValue) []byte {
	switch v.kind {
	case 'n':
		return append(dst, "null"...)
	case 'i':
		return strconv.AppendInt(dst, v.num, 10)
	case 's':
		return canonicalString(dst, v.str)
	}
	ms := slices.Clone(v.members)
	slices.SortFunc(ms, func(a, b jsonMember) int {
		return slices.Compare(utf16.Encode([]rune(a.name)), utf16.Encode([]rune(b.name)))
	})
	dst = append(dst, '{')
	for i := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(canonicalString(dst, ms[i].name), ':')
		dst = canonical(dst, &ms[i].value)
	}
	return append(dst, '}')
}

func canonicalString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\b':
			dst = append(dst, `\b`...)
		case c == '\t':
			dst = append(dst, `\t`...)
		case c == '\n':
			dst = append(dst, `\n`...)
		case c == '\f':
			dst = append(dst, `\f`...)
		case c == '\r':
			dst = append(dst, `\r`...)
		case c < 0x20:
			dst = appendU(dst, rune(c))
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
