package redisstore

import (
	"context"
	"strings"
	"testing"

	"github.com/idemkit/idem/core"
)

// TestLayoutPinned: the layout is part of the data. A change to the
// bucket of a scope, the tag of a bucket or a token's bits would lose
// every stored record and repeat tokens: these values must never change.
func TestLayoutPinned(t *testing.T) {
	if got := crc16("123456789"); got != 0x31c3 {
		t.Fatalf("crc16 check value %#x, want 0x31c3 (CRC16/XMODEM, as Redis Cluster)", got)
	}
	for b, want := range map[int]string{0: "b0.52", 1: "b1.128", 63: "b63.10"} {
		if bucketTags[b] != want {
			t.Errorf("bucket %d has tag %q, want %q", b, bucketTags[b], want)
		}
	}
	sc := testScope("pinned")
	m := member(&sc)
	if want := "1:t1:p10:redis.test23:pinned-0123456789abcdef"; m != want {
		t.Errorf("member %q, want %q", m, want)
	}
	if b := bucketOf(m); b != 27 {
		t.Errorf("bucket %d, want 27", b)
	}
	if tok := token(0x1234, 27); tok != 0x12341b {
		t.Errorf("token %#x, want 0x12341b (counter above, bucket in the low 8 bits)", tok)
	}
}

// TestTagsHashToTheirSlots: each bucket's tag falls in its 256 slots, as
// the cluster computes it (CLUSTER KEYSLOT), and so does every key of the
// bucket.
func TestTagsHashToTheirSlots(t *testing.T) {
	c := clusterClient(t)
	l, err := newLayout("p")
	if err != nil {
		t.Fatal(err)
	}
	sc := testScope("slots")
	for b := range bucketCount {
		slot := keySlot(bucketTags[b])
		if int(slot)/(slotCount/bucketCount) != b {
			t.Errorf("bucket %d: tag %q hashes to slot %d", b, bucketTags[b], slot)
		}
		for _, key := range append(l.scopeKeys(b, member(&sc)), l.recordPrefix(b)) {
			got, err := c.ClusterKeySlot(context.Background(), key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if got != int64(slot) {
				t.Fatalf("bucket %d: key %q is in slot %d, want %d", b, key, got, slot)
			}
		}
	}
}

// TestBucketsSpreadOverPrimaries: on three primaries with equal slot
// ranges, each serves a third of the buckets.
func TestBucketsSpreadOverPrimaries(t *testing.T) {
	s := newTestStore(t, clusterClient(t), Options{})
	groups, err := s.dueGroups(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 3 {
		t.Fatalf("the buckets are on %d primaries, want 3", len(groups))
	}
	for _, g := range groups {
		if n := len(g.buckets); n < 21 || n > 22 {
			t.Errorf("a primary serves %d buckets, want 21 or 22", n)
		}
	}
}

// TestMembers: a member names one scope, whatever its parts hold (a naive
// join would make the first two scopes one), and reads back as it.
func TestMembers(t *testing.T) {
	scopes := []core.Scope{
		{Tenant: "a:1", Principal: "b", UseCase: "u", Key: "k"},
		{Tenant: "a", Principal: "1:b", UseCase: "u", Key: "k"},
		{Tenant: "", Principal: "p", UseCase: "u", Key: strings.Repeat("9", 255)},
		{Tenant: "12", Principal: "3:", UseCase: ":", Key: "{tag}"},
		{},
	}
	seen := map[string]core.Scope{}
	for _, sc := range scopes {
		m := member(&sc)
		if other, dup := seen[m]; dup {
			t.Fatalf("%+v and %+v share the member %q", sc, other, m)
		}
		seen[m] = sc
		got, err := scopeOf(m)
		if err != nil || got != sc {
			t.Fatalf("scopeOf(member(%+v)) = %+v, %v", sc, got, err)
		}
	}
	for _, bad := range []string{"", "1:a", "x:abc", "9:a1:b1:c1:d", "1:a1:b1:c1:dz", "-1:a"} {
		if _, err := scopeOf(bad); err == nil {
			t.Errorf("scopeOf(%q): no error", bad)
		}
	}
}
