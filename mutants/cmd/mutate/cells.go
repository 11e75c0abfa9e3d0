package main

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// cell is one layer's verdict on one mutant.
type cell struct {
	mark   string // K, T, E, B, "." (survived), "-" (left out by -layers) or "~" (does not reach the mutant's area)
	detail string // failing packages, or failing seeds and invariants
}

func (c cell) killed() bool { return c.mark == "K" || c.mark == "T" || c.mark == "E" }

func (c cell) String() string {
	if c.detail == "" {
		return c.mark
	}
	return c.mark + " " + c.detail
}

// plainCell is a go test layer's verdict: go test's own -timeout (a test
// that hangs) counts as a timeout, a package that does not compile as B.
func plainCell(res result) cell {
	switch {
	case res.timedOut || bytes.Contains(res.out, []byte("panic: test timed out")):
		return cell{mark: "T"}
	case bytes.Contains(res.out, []byte("[build failed]")) || bytes.Contains(res.out, []byte("[setup failed]")):
		return cell{mark: "B"}
	case res.code != 0:
		return cell{mark: "K"}
	}
	return cell{mark: "."}
}

var pkgShort = map[string]string{
	"github.com/idemkit/idem":                   "root",
	"github.com/idemkit/idem/core":              "core",
	"github.com/idemkit/idem/internal/refmodel": "refmodel",
	"github.com/idemkit/idem/store":             "store",
	"github.com/idemkit/idem/store/mem":         "mem",
	"github.com/idemkit/idem/fingerprint":       "fp",
}

// unitCell names the packages whose tests failed.
func unitCell(res result) cell {
	c := plainCell(res)
	if c.mark == "." || c.mark == "B" {
		return c
	}
	var pkgs []string
	sc := bufio.NewScanner(bytes.NewReader(res.out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "FAIL" {
			if s, ok := pkgShort[f[1]]; ok && !contains(pkgs, s) {
				pkgs = append(pkgs, s)
			}
		}
	}
	c.detail = strings.Join(pkgs, ",")
	return c
}

var (
	summaryRE   = regexp.MustCompile(`summary over (\d+) seeds \((\d+) with violations[;)]`)
	invariantRE = regexp.MustCompile(`(?m)^  invariant (\d+) \(`)
)

// simCell says how many seeds failed and which invariants broke: exit 1 is
// a violation, any other failure a crash or an error of the run.
func simCell(res result) cell {
	switch {
	case res.timedOut:
		return cell{mark: "T"}
	case res.code == 0:
		return cell{mark: "."}
	case res.code != 1:
		return cell{mark: "E"}
	}
	c := cell{mark: "K"}
	if m := summaryRE.FindSubmatch(res.out); m != nil {
		c.detail = string(m[2]) + "/" + string(m[1])
	}
	var invs []string
	for _, m := range invariantRE.FindAllSubmatch(res.out, -1) {
		if s := string(m[1]); !contains(invs, s) {
			invs = append(invs, s)
		}
	}
	sort.Strings(invs)
	if len(invs) > 0 {
		c.detail += " inv" + strings.Join(invs, ",")
	}
	return c
}

// liveCell sums the cells of the -live runs.
func liveCell(cells []cell) cell {
	if len(cells) == 1 {
		return cells[0]
	}
	killed, mark := 0, "."
	var invs []string
	for _, c := range cells {
		if !c.killed() {
			continue
		}
		killed++
		if mark == "." || c.mark == "K" {
			mark = c.mark
		}
		if i := strings.Index(c.detail, " inv"); i >= 0 {
			for _, inv := range strings.Split(c.detail[i+len(" inv"):], ",") {
				if !contains(invs, inv) {
					invs = append(invs, inv)
				}
			}
		}
	}
	if killed == 0 {
		return cell{mark: "."}
	}
	sort.Strings(invs)
	detail := fmt.Sprintf("%d/%d runs", killed, len(cells))
	if len(invs) > 0 {
		detail += " inv" + strings.Join(invs, ",")
	}
	return cell{mark: mark, detail: detail}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func tail(b []byte, lines int) string {
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}
