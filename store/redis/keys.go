package redisstore

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/idemkit/idem/core"
)

// The data layout. Every scope falls in one of bucketCount buckets, and each
// bucket is one Redis Cluster hash slot: its keys carry the bucket's hash tag
// ({tag}), so that a script touches one slot only. A bucket holds its
// records, its token counter, its two due indexes, its claims, the set of
// records someone waits on, and its change channel.
//
// The layout is part of the data: the bucket of a scope, the tag of a bucket
// and the token's bits must never change while records exist (keys_test.go
// pins them).
const (
	// bucketCount is the number of buckets: the records spread over this many
	// hash slots, so over at most this many primaries of a cluster, and each
	// bucket's token counter takes 1/bucketCount of the load.
	bucketCount = 64
	// bucketBits are the low bits of a token that name its bucket (room for
	// 256 buckets; 64 are used). The counter is in the bits above.
	bucketBits = 8
	// slotCount is Redis Cluster's number of hash slots.
	slotCount = 16384
	// PrefixBytesMax bounds Options.Prefix.
	PrefixBytesMax = 64
)

// bucketTags are the hash tags of the buckets: tag b hashes to a slot in
// [b*256, (b+1)*256), so that the buckets spread evenly over a cluster whose
// slots are split in equal ranges (as redis-cli --cluster create splits them).
var bucketTags = func() [bucketCount]string {
	var tags [bucketCount]string
	width := slotCount / bucketCount
	for b := range tags {
		for n := 0; ; n++ {
			tag := "b" + strconv.Itoa(b) + "." + strconv.Itoa(n)
			if int(keySlot(tag))/width == b {
				tags[b] = tag
				break
			}
		}
	}
	return tags
}()

// keySlot is Redis Cluster's hash slot of a key: CRC16 (XMODEM) of its hash
// tag (the part between the first '{' and the next '}', when not empty), or
// of the whole key, modulo 16384.
func keySlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return crc16(key) % slotCount
}

func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// member names a scope inside its bucket: each part as its length, a colon
// and its bytes, so that no two scopes share a member whatever they hold.
func member(sc *core.Scope) string {
	var b strings.Builder
	b.Grow(len(sc.Tenant) + len(sc.Principal) + len(sc.UseCase) + len(sc.Key) + 16)
	for _, part := range [4]string{sc.Tenant, sc.Principal, sc.UseCase, sc.Key} {
		b.WriteString(strconv.Itoa(len(part)))
		b.WriteByte(':')
		b.WriteString(part)
	}
	return b.String()
}

var errMember = errors.New("not a member")

// scopeOf is the scope a member names.
func scopeOf(m string) (core.Scope, error) {
	var parts [4]string
	for i := range parts {
		colon := strings.IndexByte(m, ':')
		if colon <= 0 {
			return core.Scope{}, errMember
		}
		n, err := strconv.Atoi(m[:colon])
		if err != nil || n < 0 || n > len(m)-colon-1 {
			return core.Scope{}, errMember
		}
		parts[i], m = m[colon+1:colon+1+n], m[colon+1+n:]
	}
	if m != "" {
		return core.Scope{}, errMember
	}
	return core.Scope{Tenant: parts[0], Principal: parts[1], UseCase: parts[2], Key: parts[3]}, nil
}

// memberHash is FNV-1a (64 bits) of a member: its bucket and its
// notification payload are made of it.
func memberHash(m string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(m))
	return h.Sum64()
}

// bucketOf is the bucket of a member: FNV-1a of it, modulo bucketCount.
func bucketOf(m string) int { return bucketOfHash(memberHash(m)) }

func bucketOfHash(h uint64) int { return int(h % bucketCount) }

// notifyPayload names a member, by its hash h (memberHash), on its
// bucket's channel without revealing the scope to whoever may subscribe (a
// collision only wakes a waiter spuriously).
func notifyPayload(h uint64) string { return strconv.FormatUint(h, 16) }

// layout names the keys of one Store's prefix.
type layout struct {
	prefix string
	// bucket[b] is "prefix:{tag}:", the start of every key of bucket b.
	bucket [bucketCount]string
}

func newLayout(prefix string) (*layout, error) {
	if strings.ContainsAny(prefix, "{}") {
		return nil, fmt.Errorf("redisstore: prefix %q has a brace: a key's first {...} is its hash tag, which the store sets", prefix)
	}
	if len(prefix) > PrefixBytesMax {
		return nil, fmt.Errorf("redisstore: prefix %q is %d bytes, at most %d", prefix, len(prefix), PrefixBytesMax)
	}
	l := &layout{prefix: prefix}
	for b, tag := range bucketTags {
		l.bucket[b] = prefix + ":{" + tag + "}:"
	}
	return l, nil
}

// The keys of a bucket, after its start, by what they hold.
const (
	keyRecord    = "r:" // then the member
	keyTokens    = "tokens"
	keySweep     = "due:sweep"
	keyReconcile = "due:reconcile"
	keyClaims    = "claims"
	keyWaited    = "waited"
	keyChannel   = "changes"
)

func (l *layout) record(b int, m string) string { return l.bucket[b] + keyRecord + m }
func (l *layout) recordPrefix(b int) string     { return l.bucket[b] + keyRecord }
func (l *layout) tokens(b int) string           { return l.bucket[b] + keyTokens }
func (l *layout) claims(b int) string           { return l.bucket[b] + keyClaims }
func (l *layout) waited(b int) string           { return l.bucket[b] + keyWaited }
func (l *layout) channel(b int) string          { return l.bucket[b] + keyChannel }

// index is the due index of kind in bucket b: members scored by the
// microsecond they fall due.
func (l *layout) index(b int, sweep bool) string {
	if sweep {
		return l.bucket[b] + keySweep
	}
	return l.bucket[b] + keyReconcile
}

// scopeKeyCount is how many keys a write script of one scope touches.
const scopeKeyCount = 7

// scopeKeys are the keys a write script of one scope touches, in the
// scripts' KEYS order: record, tokens, index(sweep), index(reconcile),
// claims, waited, channel. They are cut from one string, built at once
// (one allocation a decision, not seven).
func (l *layout) scopeKeys(b int, m string) []string {
	start := l.bucket[b]
	tails := [scopeKeyCount]string{keyRecord, keyTokens, keySweep, keyReconcile, keyClaims, keyWaited, keyChannel}
	n := scopeKeyCount*len(start) + len(m)
	for _, t := range tails {
		n += len(t)
	}
	var sb strings.Builder
	sb.Grow(n)
	var ends [scopeKeyCount]int
	for i, t := range tails {
		sb.WriteString(start)
		sb.WriteString(t)
		if i == 0 {
			sb.WriteString(m)
		}
		ends[i] = sb.Len()
	}
	all, keys := sb.String(), make([]string, scopeKeyCount)
	from := 0
	for i, end := range ends {
		keys[i], from = all[from:end], end
	}
	return keys
}

// token is the fencing token a bucket's counter value c makes.
func token(c uint64, b int) core.Token { return core.Token(c<<bucketBits | uint64(b)) }
