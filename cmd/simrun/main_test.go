package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem"
)

func simrun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestSameFlagsSameOutput(t *testing.T) {
	args := []string{"-seed", "11", "-seeds", "8", "-requests", "60", "-v"}
	code1, out1, _ := simrun(t, args...)
	code2, out2, _ := simrun(t, append(args, "-workers", "1")...)
	if code1 != 0 || code2 != 0 {
		t.Fatalf("exit %d, %d", code1, code2)
	}
	if out1 != out2 {
		t.Fatalf("two runs with the same flags printed different output:\n%s\n---\n%s", out1, out2)
	}
	for _, want := range []string{"run:", "lifecycle:", "seed 11: ok", "seed 18: ok", "violations: 0", "api.idempotency.reserve.created.count"} {
		if !strings.Contains(out1, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Index(out1, "seed 12:") > strings.Index(out1, "seed 13:") {
		t.Error("seeds are not printed in order")
	}
}

func TestViolationExitsOneWithReproduction(t *testing.T) {
	code, out, _ := simrun(t, "-seed", "1", "-seeds", "3", "-requests", "100", "-baseline", "naive")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{"VIOLATION", "invariant", "the scope's events:", "reproduce: simrun -seed 1 ", "-baseline naive"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The printed command reproduces the violation on its own.
	line := out[strings.Index(out, "reproduce: ")+len("reproduce: "):]
	line = line[:strings.IndexByte(line, '\n')]
	args := strings.Fields(line)[1:]
	if code, out2, _ := simrun(t, args...); code != 1 || !strings.Contains(out2, "VIOLATION") {
		t.Fatalf("%s: exit %d\n%s", line, code, out2)
	}
}

// TestViolationInALaterSeedExitsOne: the exit status is 1 when any seed
// broke an invariant, not only the first: here seed 4 of the
// evict-unknown baseline passes and seed 5 is caught.
func TestViolationInALaterSeedExitsOne(t *testing.T) {
	code, out, _ := simrun(t, "-seed", "4", "-seeds", "2", "-requests", "100", "-baseline", "evict-unknown", "-v")
	if !strings.Contains(out, "seed 4: ok") || !strings.Contains(out, "seed 5: VIOLATION") {
		t.Fatalf("want seed 4 to pass and seed 5 to be caught:\n%s", out)
	}
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
}

func TestHelpExitsZero(t *testing.T) {
	code, out, errOut := simrun(t, "-h")
	if code != 0 || out != "" || !strings.Contains(errOut, "-seeds") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestBadFlagsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"-nope"},
		{"-seeds", "0"},
		{"-faults", "crash,meteor"},
		{"-baseline", "optimistic"},
		{"-requests", "0"},
		{"-swarm", "maybe"},
		{"-fault-rate", "1.5"},
		{"extra"},
	} {
		code, out, errOut := simrun(t, args...)
		if code != 2 || out != "" || errOut == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

func TestJSONSummary(t *testing.T) {
	code, out, _ := simrun(t, "-seed", "3", "-seeds", "2", "-requests", "50", "-json", "-baseline", "no-fingerprint", "-faults", "key_misuse", "-swarm=false", "-fault-rate", "0.5")
	var doc struct {
		Command    string `json:"command"`
		Violations int    `json:"violations"`
		Summary    struct {
			Seeds         int   `json:"seeds"`
			Requests      int   `json:"requests"`
			Done          int   `json:"done"`
			ConvergeMaxNs int64 `json:"converge_max_ns"`
			Counters      []struct {
				Name  string `json:"name"`
				Value uint64 `json:"value"`
			} `json:"counters"`
		} `json:"summary"`
		Reports []struct {
			Seed       uint64 `json:"seed"`
			Violations []struct {
				Invariant int    `json:"invariant"`
				Reproduce string `json:"reproduce"`
			} `json:"violations"`
		} `json:"reports"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if code != 1 || doc.Violations == 0 || doc.Summary.Seeds != 2 || doc.Summary.Requests == 0 || doc.Summary.Requests > 100 || doc.Summary.Done == 0 ||
		doc.Summary.ConvergeMaxNs <= 0 || len(doc.Summary.Counters) != len(idem.Counters()) || doc.Summary.Counters[0].Name == "" ||
		len(doc.Reports) == 0 || doc.Reports[0].Violations[0].Invariant != 3 || doc.Reports[0].Violations[0].Reproduce == "" {
		t.Fatalf("exit %d: %+v", code, doc)
	}
	// Every key is snake_case: none of Go's field names leak out.
	if m := regexp.MustCompile(`"[A-Za-z0-9_]*[A-Z][A-Za-z0-9_]*":`).FindString(out); m != "" {
		t.Errorf("key %s is not snake_case", m)
	}
}

func TestTraceAndHTML(t *testing.T) {
	dir := t.TempDir()
	trace, page := filepath.Join(dir, "run.jsonl"), filepath.Join(dir, "run.html")
	code, _, errOut := simrun(t, "-seed", "5", "-requests", "40", "-trace", trace, "-html", page, "-baseline", "evict-unknown", "-faults", "gateway_timeout_after", "-fault-rate", "0.5")
	if code != 1 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
		var e struct {
			T     int64 `json:"t_ns"`
			Actor string
			What  string
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Actor == "" || e.What == "" {
			t.Fatalf("line %d: %v %s", lines, err, sc.Text())
		}
	}
	if lines < 10 {
		t.Fatalf("%d trace lines", lines)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "invariant 1", "gateway", "reproduce:"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestRandomSeedIsPrinted(t *testing.T) {
	code, out, errOut := simrun(t, "-seed", "0", "-requests", "20")
	if code != 0 || !strings.Contains(errOut, "random seed") || !strings.Contains(out, "seed=") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// TestLinCheckFlag: the store-history check is on by default, and off with
// -lincheck=false (which the reproduce command then says).
func TestLinCheckFlag(t *testing.T) {
	code, out, _ := simrun(t, "-seed", "2", "-seeds", "3", "-requests", "80")
	if code != 0 || !strings.Contains(out, "store operations checked") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	code, out, _ = simrun(t, "-seed", "2", "-seeds", "3", "-requests", "80", "-lincheck=false")
	if code != 0 || strings.Contains(out, "store operations checked") {
		t.Fatalf("-lincheck=false still checked: exit %d:\n%s", code, out)
	}
}

// TestProgressToALogHasNoCarriageReturns: progress written to anything but
// a terminal (a CI log) is plain lines, not a line rewritten with \r.
func TestProgressToALogHasNoCarriageReturns(t *testing.T) {
	var log bytes.Buffer
	p := newProgress(&log, 10)
	if p.tty {
		t.Fatal("a buffer taken for a terminal")
	}
	p.start = time.Now().Add(-2 * time.Second) // past the first second's silence
	p.update(3)
	p.update(4) // within 10 s of the last line: not printed
	p.end()
	got := log.String()
	if strings.Contains(got, "\r") || strings.Count(got, "\n") != 2 || !strings.Contains(got, "seeds 3/10") || !strings.Contains(got, "seeds 10/10 in") {
		t.Fatalf("progress to a log: %q", got)
	}
}
