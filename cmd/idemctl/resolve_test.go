package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/idemkit/idem"
)

const lostKey = "lost-key-00000000001"

// showJSON is show -json of key.
func (f *fixture) showJSON(t *testing.T, key string) (recordView, []auditView) {
	t.Helper()
	code, out, errOut := f.ctl("-json", "show", "-principal", "alice", "-use-case", "payments.create", "-key", key)
	if code != exitOK {
		t.Fatalf("show %s: exit %d: %s", key, code, errOut)
	}
	var v struct {
		recordView
		Audits []auditView `json:"audits"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return v.recordView, v.Audits
}

func (f *fixture) resolveArgs(key string, token uint64, extra ...string) []string {
	return append([]string{"-json", "resolve", "-principal", "alice", "-use-case", "payments.create", "-key", key,
		"-token", strconv.FormatUint(token, 10)}, extra...)
}

// TestResolveNotExecuted: an unknown record is settled by hand only with
// the token of its attempt and an audit that says who and why; then it is
// failed_retryable, its trail says who settled it when, and a retry
// executes again.
func TestResolveNotExecuted(t *testing.T) {
	f := newFixture(t)
	f.records(t)
	rec, trail := f.showJSON(t, lostKey)
	if rec.Status != "unknown" || len(trail) != 0 {
		t.Fatalf("before: %+v %+v", rec, trail)
	}
	audit := []string{"-verdict", "not_executed", "-who", "bob", "-why", "the PSP has no charge (OPS-1234)"}
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{f.resolveArgs(lostKey, rec.Token+1, audit...), exitFailed, "nothing settled"},
		{f.resolveArgs(lostKey, rec.Token, "-verdict", "not_executed", "-why", "x"), exitUsage, "who is empty"},
		{f.resolveArgs(lostKey, rec.Token, "-verdict", "not_executed", "-who", "bob\nroot", "-why", "x"), exitUsage, "not printable"},
		{f.resolveArgs(lostKey, 0, audit...), exitUsage, "-token"},
		{f.resolveArgs(lostKey, rec.Token, "-verdict", "maybe", "-who", "bob", "-why", "x"), exitUsage, "-verdict"},
		{f.resolveArgs(lostKey, rec.Token, append(audit, "-status", "201")...), exitUsage, "for -verdict executed"},
	} {
		if code, _, errOut := f.ctl(c.args...); code != c.code || !strings.Contains(errOut, c.says) {
			t.Errorf("%v: exit %d, %q; want %d saying %q", c.args, code, errOut, c.code, c.says)
		}
	}
	if after, trail := f.showJSON(t, lostKey); after.Status != "unknown" || after.Version != rec.Version || len(trail) != 0 {
		t.Fatalf("a refused resolve changed the record: %+v %+v", after, trail)
	}
	code, out, errOut := f.ctl(f.resolveArgs(lostKey, rec.Token, audit...)...)
	if code != exitOK {
		t.Fatalf("resolve: exit %d: %s", code, errOut)
	}
	var got struct {
		Record recordView `json:"record"`
		Audit  auditView  `json:"audit"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Record.Status != "failed_retryable" || got.Audit.Who != "bob" || got.Audit.Decision != "resolved" {
		t.Fatalf("%v: %s", err, out)
	}
	after, trail := f.showJSON(t, lostKey)
	if len(trail) != 1 || trail[0] != got.Audit || trail[0].Version != after.Version || trail[0].Token != rec.Token || trail[0].Verdict != "not_executed" {
		t.Fatalf("trail %+v, want the resolve's audit %+v at version %d", trail, got.Audit, after.Version)
	}
	ran := false
	res, err := f.ex.Do(context.Background(), req(lostKey), func(context.Context, idem.Attempt) (idem.Response, error) {
		ran = true
		return idem.Response{StatusCode: 201}, nil
	})
	if err != nil || !ran || res.Kind != idem.ResultExecuted {
		t.Fatalf("a retry after not_executed: ran %t, %+v, %v", ran, res, err)
	}
}

// TestResolveExecuted: settled as executed, the record replays the
// response the operator gave, byte for byte, and a bad response is the
// operator's error, refused by the core before anything is written.
func TestResolveExecuted(t *testing.T) {
	f := newFixture(t)
	f.records(t)
	rec, _ := f.showJSON(t, lostKey)
	body := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(body, []byte(`{"paymentId":"p-77","state":"charged"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	audit := []string{"-verdict", "executed", "-who", "bob", "-why", "the PSP shows charge ch_77"}
	if code, _, errOut := f.ctl(f.resolveArgs(lostKey, rec.Token, append(audit, "-status", "42")...)...); code != exitUsage || !strings.Contains(errOut, "invalid response") {
		t.Fatalf("status 42: exit %d: %s", code, errOut)
	}
	if code, _, errOut := f.ctl(f.resolveArgs(lostKey, rec.Token, audit...)...); code != exitUsage || !strings.Contains(errOut, "-status") {
		t.Fatalf("no -status: exit %d: %s", code, errOut)
	}
	args := f.resolveArgs(lostKey, rec.Token, append(audit, "-status", "201", "-header", "Content-Type: application/json", "-body-file", body)...)
	if code, _, errOut := f.ctl(args...); code != exitOK {
		t.Fatalf("resolve: exit %d: %s", code, errOut)
	}
	res, err := f.ex.Do(context.Background(), req(lostKey), func(context.Context, idem.Attempt) (idem.Response, error) {
		t.Error("a settled key executed again")
		return idem.Response{}, nil
	})
	if err != nil || res.Kind != idem.ResultReplayed || res.Response.StatusCode != 201 || string(res.Response.Body) != `{"paymentId":"p-77","state":"charged"}` ||
		len(res.Response.Headers) != 1 || res.Response.Headers[0].Value != "application/json" {
		t.Fatalf("replay: %+v, %v", res, err)
	}
}

// TestResolveRefusesARecordInProgress: an operator cannot re-open or
// settle a record whose attempt still runs, even with its token.
func TestResolveRefusesARecordInProgress(t *testing.T) {
	f := newFixture(t)
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := f.ex.Do(context.Background(), req("running-key-0000001"), func(context.Context, idem.Attempt) (idem.Response, error) {
			close(started)
			<-release
			return idem.Response{StatusCode: 201}, nil
		})
		done <- err
	}()
	<-started
	rec, _ := f.showJSON(t, "running-key-0000001")
	for _, verdict := range [][]string{{"-verdict", "not_executed"}, {"-verdict", "executed", "-status", "200"}} {
		args := f.resolveArgs("running-key-0000001", rec.Token, append(verdict, "-who", "bob", "-why", "impatient")...)
		if code, _, errOut := f.ctl(args...); code != exitFailed || !strings.Contains(errOut, "nothing settled") {
			t.Errorf("%v: exit %d: %s", verdict, code, errOut)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if after, trail := f.showJSON(t, "running-key-0000001"); after.Status != "completed" || len(trail) != 0 {
		t.Fatalf("after: %+v, trail %+v", after, trail)
	}
}

// TestEvict: a completed record is removed by hand with its token and an
// audit, the key is free (the next request executes), and the trail stays
// when the record is gone; a record whose outcome is unknown, or a token
// that is not the record's, removes nothing.
func TestEvict(t *testing.T) {
	f := newFixture(t)
	f.records(t)
	const paid = "paid-key-0000000000000001"
	rec, _ := f.showJSON(t, paid)
	lost, _ := f.showJSON(t, lostKey)
	audit := []string{"-who", "bob", "-why", "erasure request DPO-77"}
	evictArgs := func(key string, token uint64, extra ...string) []string {
		return append([]string{"-json", "evict", "-principal", "alice", "-use-case", "payments.create", "-key", key,
			"-token", strconv.FormatUint(token, 10)}, extra...)
	}
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{evictArgs(lostKey, lost.Token, audit...), exitFailed, "nothing evicted"},
		{evictArgs(paid, rec.Token+1, audit...), exitFailed, "nothing evicted"},
		{evictArgs(paid, rec.Token, "-who", "bob"), exitUsage, "why is empty"},
		{evictArgs(paid, 0, audit...), exitUsage, "-token"},
	} {
		if code, _, errOut := f.ctl(c.args...); code != c.code || !strings.Contains(errOut, c.says) {
			t.Errorf("%v: exit %d, %q; want %d saying %q", c.args, code, errOut, c.code, c.says)
		}
	}
	if after, trail := f.showJSON(t, lostKey); after.Status != "unknown" || after.Version != lost.Version || len(trail) != 0 {
		t.Fatalf("a refused evict changed the unknown record: %+v %+v", after, trail)
	}
	code, out, errOut := f.ctl(evictArgs(paid, rec.Token, audit...)...)
	if code != exitOK || !strings.Contains(out, `"evicted"`) {
		t.Fatalf("evict: exit %d: %s%s", code, out, errOut)
	}
	after, trail := f.showJSON(t, paid)
	if after.Status != "absent" || len(trail) != 1 || trail[0].Event != "evict" || trail[0].Decision != "evicted" || trail[0].Token != rec.Token || trail[0].Who != "bob" {
		t.Fatalf("after: %+v, trail %+v", after, trail)
	}
	ran := false
	if _, err := f.ex.Do(context.Background(), req(paid), func(context.Context, idem.Attempt) (idem.Response, error) {
		ran = true
		return idem.Response{StatusCode: 201}, nil
	}); err != nil || !ran {
		t.Fatalf("a request after the evict: ran %t, %v", ran, err)
	}
}
