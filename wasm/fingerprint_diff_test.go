package wasmcore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/idemkit/idem/fingerprint"
	"github.com/idemkit/idem/wasm/internal/fpabi"
)

// TestFingerprintDifferential: fingerprint.wasm answers what package
// fingerprint answers natively, for drawn specs (pointers malformed and
// contradictory too, flags, small limits) and bodies (valid JSON of every
// shape and broken JSON, random bytes): the same handle-or-error from
// NewSpec, the same digest or error (kind, offset and text) from Spec.Of,
// and the same canonical form or error from Canonicalize. Specs are
// released and their handles reused as the checks go.
func TestFingerprintDifferential(t *testing.T) {
	m := newFPModule(t)
	gen := fpCaseGen(false, 16)
	var held []uint32 // specs kept across checks, so handles are reused among live ones
	seen := map[string]int{}
	defer func() {
		if !t.Failed() {
			checkFPOutcomes(t, seen)
		}
	}()
	check := func(t *rapid.T) {
		c := gen.Draw(t, "case")
		want, wantErr := fingerprint.NewSpec(c.Spec.UseCase, c.Spec.SchemaVersion, c.Opts...)
		h, err := m.spec(&c.Spec)
		if !sameFPError(err, wantErr) {
			t.Fatalf("NewSpec(%+v): module %v, native %v", c.Spec, err, wantErr)
		}
		seen["spec "+fpOutcome(wantErr)]++
		for _, body := range c.Bodies {
			if wantErr == nil {
				got, err := m.of(h, body)
				fp, nErr := want.Of(body)
				if !sameFPError(err, nErr) || (err == nil && got != fp) {
					t.Fatalf("Of(%q) under %+v: module %x, %v; native %x, %v", body, c.Spec, got, err, fp[:], nErr)
				}
				seen["of "+fpOutcome(nErr)]++
			}
			got, err := m.canonical(body)
			can, nErr := fingerprint.Canonicalize(body)
			if !sameFPError(err, nErr) || !bytes.Equal(got, can) {
				t.Fatalf("Canonicalize(%q): module %q, %v; native %q, %v", body, got, err, can, nErr)
			}
			seen["canonical "+fpOutcome(nErr)]++
		}
		if wantErr != nil {
			return
		}
		if rapid.IntRange(0, 3).Draw(t, "hold") == 0 {
			held = append(held, h)
			return
		}
		if !m.release(h) || m.release(h) {
			t.Fatalf("releasing handle %d twice did not answer 1 then 0", h)
		}
		if len(held) > 4 {
			if !m.release(held[0]) {
				t.Fatalf("held handle %d was not live", held[0])
			}
			held = held[1:]
		}
	}
	// The rarest outcome (Spec.Of's ErrPointer: a required member absent
	// from a body that is otherwise good) is not reached by every 100
	// draws: draw again, a few rounds at most, until every outcome is.
	rapid.Check(t, check)
	for round := 0; round < 4 && len(fpOutcomesMissing(seen)) > 0 && !t.Failed(); round++ {
		rapid.Check(t, check)
	}
}

// fpOutcome names an outcome: ok, or the error's kind.
func fpOutcome(err error) string {
	if err == nil {
		return "ok"
	}
	for i, k := range fpabi.Kinds {
		if errors.Is(err, k) {
			return fpabi.KindNames[i]
		}
	}
	return "unidentified"
}

// checkFPOutcomes fails unless the draws reached every outcome worth
// comparing: a digest, a canonical form, a spec refused, and Spec.Of's every
// error kind (ErrPointer: an absent required pointer).
func checkFPOutcomes(t *testing.T, seen map[string]int) {
	t.Helper()
	t.Logf("outcomes: %v", seen)
	for _, w := range fpOutcomesMissing(seen) {
		t.Errorf("no draw reached %q", w)
	}
}

// fpOutcomesMissing lists the outcomes worth comparing that seen lacks.
func fpOutcomesMissing(seen map[string]int) []string {
	want := []string{"spec ok", "spec ErrPointer", "of ok", "canonical ok"}
	for _, k := range fpabi.KindNames {
		want = append(want, "of "+k)
	}
	var missing []string
	for _, w := range want {
		if seen[w] == 0 {
			missing = append(missing, w)
		}
	}
	return missing
}

// sameFPError: both nil, or both *fingerprint.Error of the same kind, offset
// and message (and so the same Error() text, which is compared too).
func sameFPError(got, want error) bool {
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	var g, w *fingerprint.Error
	if !errors.As(got, &g) || !errors.As(want, &w) {
		return false
	}
	return g.Kind == w.Kind && g.Offset == w.Offset && g.Msg == w.Msg && got.Error() == want.Error()
}

// TestFingerprintJCSVectors: every vector of ../shared/jcs (input/*.json,
// the RFC 8785 examples and more; the repository's copy in
// fingerprint/testdata/jcs) canonicalizes in the module to its
// output/*.json byte for byte, as natively.
func TestFingerprintJCSVectors(t *testing.T) {
	m := newFPModule(t)
	inputs, err := filepath.Glob("../fingerprint/testdata/jcs/input/*.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no vectors in ../fingerprint/testdata/jcs/input (%v)", err)
	}
	for _, in := range inputs {
		name := filepath.Base(in)
		src, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(filepath.Dir(in), "..", "output", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.canonical(src)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: module %q, %v; want %q", name, got, err, want)
		}
	}
}

// TestFingerprintMalformedCalls: calls the module cannot read (a size past
// the input buffer, an unknown or released handle, a spec request cut
// short, with bytes after it, with an unknown flag or a pointer count its
// bytes cannot hold) answer a malformed request, never a trap; and the
// module still answers afterwards.
func TestFingerprintMalformedCalls(t *testing.T) {
	m := newFPModule(t)
	malformed := func(what string, answer uint64, want string) {
		t.Helper()
		_, err := fpabi.ReadAnswer(m.answer(answer))
		var me *fpabi.MalformedError
		if !errors.As(err, &me) || !errors.Is(err, fpabi.ErrMalformedRequest) || !strings.Contains(me.Message, want) {
			t.Errorf("%s: %v, want a malformed request saying %q", what, err, want)
		}
	}
	req := fpabi.AppendSpec(nil, &fpabi.SpecRequest{UseCase: "u", Include: []string{"/a"}, Exclude: []string{"/b"}})
	m.write(req)
	big := uint64(m.inBytes) + 1
	malformed("spec past the input", m.call(fpabi.ExportSpec, big), "size beyond")
	malformed("canonical past the input", m.call(fpabi.ExportCanonical, big), "size beyond")
	for n := range len(req) {
		m.write(req)
		malformed("spec cut short", m.call(fpabi.ExportSpec, uint64(n)), "truncated")
	}
	malformed("spec with a byte after it", m.call(fpabi.ExportSpec, m.write(append(req[:len(req):len(req)], 0))), "bytes after")
	flagged := append([]byte(nil), req...)
	flagged[4+1+4] |= 0x80 // the flags byte, after use case "u" and the version
	malformed("unknown flag", m.call(fpabi.ExportSpec, m.write(flagged)), "flags")
	huge := append([]byte(nil), req[:4+1+4+1+16]...)
	huge = append(huge, 0xFE, 0xFF, 0xFF, 0xFF)
	malformed("a pointer count past the bytes", m.call(fpabi.ExportSpec, m.write(huge)), "truncated")

	h, err := m.spec(&fpabi.SpecRequest{UseCase: "u"})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []uint32{0, h + 1, 1 << 31, ^uint32(0)} {
		malformed("of with an unknown handle", m.call(fpabi.ExportOf, uint64(bad), m.write([]byte("{}"))), "unknown spec handle")
		if m.release(bad) {
			t.Errorf("release(%d) of no spec answered 1", bad)
		}
	}
	malformed("of past the input", m.call(fpabi.ExportOf, uint64(h), uint64(m.inBytes)+1), "size beyond")
	want, _ := fingerprint.Of("u", 0, []byte(`{"a":1}`))
	if got, err := m.of(h, []byte(`{"a":1}`)); err != nil || got != want {
		t.Fatalf("after the malformed calls: %x, %v; want %x", got, err, want)
	}
	if !m.release(h) {
		t.Fatal("release of a live handle answered 0")
	}
	malformed("of with a released handle", m.call(fpabi.ExportOf, uint64(h), m.write([]byte("{}"))), "unknown spec handle")
}

// TestFingerprintAnswerDecoding: the host refuses answers it cannot
// decode, so that a broken module shows as one: an unknown status, lengths
// that do not match, an error whose text is not its kind's, offset's and
// message's.
func TestFingerprintAnswerDecoding(t *testing.T) {
	good := fpabi.AppendError(nil, &fingerprint.Error{Kind: fingerprint.ErrNumber, Offset: 7, Msg: "m"})
	if _, err := fpabi.ReadAnswer(good); !errors.Is(err, fingerprint.ErrNumber) || err.Error() != "fingerprint: invalid number: m at byte offset 7" {
		t.Fatalf("ReadAnswer(an error answer) = %v", err)
	}
	offset := append([]byte(nil), good...)
	offset[2]++ // the offset, after status and kind
	kind := append([]byte(nil), good...)
	kind[1] = 5
	for name, b := range map[string][]byte{
		"no status": {}, "unknown status": {3}, "cut error": good[:len(good)-1], "error and a byte": append(good[:len(good):len(good)], 0),
		"offset off by one": offset, "kind not its name": kind,
	} {
		if _, err := fpabi.ReadAnswer(b); !errors.Is(err, fpabi.ErrMalformedAnswer) {
			t.Errorf("%s: %v, want ErrMalformedAnswer", name, err)
		}
	}
	if _, err := fpabi.ReadDigest(fpabi.AppendHandle(nil, 1)); !errors.Is(err, fpabi.ErrMalformedAnswer) {
		t.Errorf("a handle read as a digest: %v", err)
	}
	if _, err := fpabi.ReadCanonical([]byte{0, 5, 0, 0, 0, 'x'}); !errors.Is(err, fpabi.ErrMalformedAnswer) {
		t.Errorf("a canonical answer longer than its bytes: %v", err)
	}
}
