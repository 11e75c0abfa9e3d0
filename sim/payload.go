package sim

import (
	"cmp"
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
	scratch   []byte  // refFingerprint's pre-image
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
	ms := make([]jsonMember, 3, 4) // room for a note: one allocation
	ms[0] = jsonMember{"amount", jsonInt([]int64{100, 250, 1000}[r.IntN(3)])}
	ms[1] = jsonMember{"currency", jsonStr([]string{"EUR", "USD"}[r.IntN(2)])}
	ms[2] = jsonMember{"customer", ps.customers[r.IntN(len(ps.customers))]}
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
	sent := jsonInt(sentAt)
	child := [1]jsonMember{{excludedChild, sent}}
	extra := [2]jsonMember{{excludedTop, sent}, {excludedParent, jsonValue{kind: 'o', members: child[:]}}}
	wr := writer{dst: dst, r: r}
	wr.object(v.members, extra[:])
	return wr.dst
}

// writer writes a JSON value as a client would, its choices drawn a few
// bits at a time from one random word (a draw per token would cost more
// than the rest of the run's work on the request).
type writer struct {
	dst  []byte
	r    *rand.Rand
	bits uint64
	left int
}

// draw returns n random bits.
func (wr *writer) draw(n int) int {
	if wr.left < n {
		wr.bits, wr.left = wr.r.Uint64(), 64
	}
	b := int(wr.bits & (1<<n - 1))
	wr.bits >>= n
	wr.left -= n
	return b
}

// space writes white space: none half the time, then a space, a new line
// and indent, or a tab. The draw is random, so a branch on it would be
// mispredicted half the time: three bytes are written whatever was drawn,
// and the length cut back to the white space's.
func (wr *writer) space() {
	ws := &whiteSpace[wr.draw(3)]
	n := len(wr.dst)
	if cap(wr.dst)-n < 3 {
		wr.dst = slices.Grow(wr.dst, 3)
	}
	d := wr.dst[:n+3]
	d[n], d[n+1], d[n+2] = ws.b[0], ws.b[1], ws.b[2]
	wr.dst = d[:n+int(ws.n)]
}

// whiteSpace is what space writes for each draw.
var whiteSpace = [8]struct {
	b [3]byte
	n uint8
}{{}, {}, {}, {}, {[3]byte{' '}, 1}, {[3]byte{' '}, 1}, {[3]byte{'\n', ' ', ' '}, 3}, {[3]byte{'\t'}, 1}}

func (wr *writer) value(v *jsonValue) {
	switch v.kind {
	case 'n':
		wr.dst = append(wr.dst, "null"...)
	case 'i':
		wr.dst = strconv.AppendInt(wr.dst, v.num, 10)
	case 's':
		wr.string(v.str)
	default:
		wr.object(v.members, nil)
	}
}

// object writes the members of ms and then extra as one object, in an
// order drawn at random.
func (wr *writer) object(ms, extra []jsonMember) {
	var order [16]uint8
	n := len(ms) + len(extra)
	for i := range n {
		order[i] = uint8(i)
		j := int(modSmall[i][wr.draw(4)]) // draw % (i+1): near enough uniform for the few members of a payload
		order[i], order[j] = order[j], order[i]
	}
	wr.dst = append(wr.dst, '{')
	for i, k := range order[:n] {
		if i > 0 {
			wr.dst = append(wr.dst, ',')
		}
		wr.space()
		var m *jsonMember
		if int(k) < len(ms) {
			m = &ms[k]
		} else {
			m = &extra[int(k)-len(ms)]
		}
		wr.string(m.name)
		wr.space()
		wr.dst = append(wr.dst, ':')
		wr.space()
		wr.value(&m.value)
		wr.space()
	}
	wr.dst = append(wr.dst, '}')
}

// modSmall[i][d] is d % (i+1), for object's shuffle: a division per
// member cost more than the rest of the shuffle.
var modSmall = func() (t [16][16]uint8) {
	for i := range t {
		for d := range t[i] {
			t[i][d] = uint8(d % (i + 1))
		}
	}
	return t
}()

// string writes s as a JSON string, escaping what must be and, now and
// then, what need not be (\u escapes, surrogate pairs included).
func (wr *writer) string(s string) {
	escapeAll := wr.draw(2) == 0
	dst := append(wr.dst, '"')
	if plainASCII(s) {
		// Nothing to escape, whatever was drawn: most names and values.
		wr.dst = append(append(dst, s...), '"')
		return
	}
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
	wr.dst = append(dst, '"')
}

// plainASCII reports whether s is ASCII without a control character, a
// quote or a backslash: it is written as it is, escaped or not.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
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
func refPreimage(pre []byte, include bool, v *jsonValue, useCase string, version uint32) []byte {
	pre = refField(pre, "idem/fingerprint/v1")
	pre = refField(pre, useCase)
	pre = binary.BigEndian.AppendUint32(pre, version)
	if !include {
		// The excluded members go; their parent stays, empty.
		parent := jsonMember{excludedParent, jsonObj()}
		return refValue(append(pre, 'D'), func(dst []byte) []byte { return canonicalObject(dst, v.members, &parent) })
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
		pre = refValue(append(pre, 1), func(dst []byte) []byte { return canonical(dst, &v.members[i].value) })
	}
	return pre
}

// refValue appends field(value), value being what write appends.
func refValue(dst []byte, write func([]byte) []byte) []byte {
	at := len(dst)
	dst = write(append(dst, 0, 0, 0, 0, 0, 0, 0, 0))
	binary.BigEndian.PutUint64(dst[at:], uint64(len(dst)-at-8))
	return dst
}

// refFingerprint is the fingerprint v must have.
func (ps *payloadSpace) refFingerprint(v *jsonValue, useCase string, version uint32) core.Fingerprint {
	ps.scratch = refPreimage(ps.scratch[:0], ps.include, v, useCase, version)
	return sha256.Sum256(ps.scratch)
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
	return canonicalObject(dst, v.members, nil)
}

// canonicalObject writes the members of ms, and extra if not nil, as one
// object.
func canonicalObject(dst []byte, ms []jsonMember, extra *jsonMember) []byte {
	var sorted [16]*jsonMember
	order := sorted[:0]
	for i := range ms {
		order = append(order, &ms[i])
	}
	if extra != nil {
		order = append(order, extra)
	}
	slices.SortFunc(order, func(a, b *jsonMember) int { return compareUTF16(a.name, b.name) })
	dst = append(dst, '{')
	for i, m := range order {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(canonicalString(dst, m.name), ':')
		dst = canonical(dst, &m.value)
	}
	return append(dst, '}')
}

// compareUTF16 orders a and b by their UTF-16 code units (RFC 8785
// section 3.2.3), not by their UTF-8 bytes or code points.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return cmp.Compare(firstUnit(ra), firstUnit(rb))*2 + cmp.Compare(ra, rb)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// firstUnit is the first UTF-16 code unit of r: a high surrogate for
// runes past the Basic Multilingual Plane. Runes with the same first unit
// are both such runes, and their second units are in their order.
func firstUnit(r rune) rune {
	if r >= 0x10000 {
		hi, _ := utf16.EncodeRune(r)
		return hi
	}
	return r
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
