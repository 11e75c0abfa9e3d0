package sim

import (
	"strconv"
	"testing"

	"github.com/idemkit/idem/core"
)

// The tests of the *_rules_test.go files call one checker rule at a time
// on records, answers and writes made by hand, at the rule's boundary
// (exactly at a deadline or a limit, and one past it), where a run reaches
// it only by chance: each shows the rule fires on the bug it is for, and
// stays quiet on the right answer next to it.

// ruleWorld is a world that is never run, with the seed's default policy
// (none drawn), no faults, and n requests made, each on a scope of its own.
func ruleWorld(t *testing.T, n int) (*world, []*request) {
	t.Helper()
	cfg := ConfigDefault()
	cfg.Faults, cfg.DrawLifecycle, cfg.Requests = 0, false, n
	w := newWorld(cfg, false)
	w.start()
	reqs := make([]*request, n)
	for i := range reqs {
		reqs[i] = w.clients[i%len(w.clients)].makeRequest()
	}
	for i, r := range reqs {
		if r.scope != int32(i) {
			t.Fatalf("request %d is on scope %d, want its own", i, r.scope)
		}
	}
	return w, reqs
}

// expect checks that what ran since the last call reported exactly the
// invariant want (0 < want), or nothing (want < 0), and clears the world's
// violations so that the next case starts afresh.
func expect(t *testing.T, w *world, want int, what string) {
	t.Helper()
	vs := w.report.Violations
	w.report.Violations, w.stopped = nil, false
	switch {
	case want < 0 && len(vs) > 0:
		t.Errorf("%s: reported invariant %d (%s): %s", what, vs[0].Invariant, vs[0].Name, vs[0].Detail)
	case want >= 0 && len(vs) == 0:
		t.Errorf("%s: invariant %d not reported", what, want)
	case want >= 0 && (len(vs) != 1 || vs[0].Invariant != want):
		t.Errorf("%s: reported %+v, want invariant %d once", what, vs, want)
	}
}

// paidResponse is the outcome of req's charge, as the gateway answers it.
func paidResponse(req *request) core.Response {
	return core.Response{StatusCode: 201, Headers: []core.Header{{Name: "X-Payload", Value: strconv.FormatInt(req.payload, 10)}, {Name: "Content-Type", Value: "application/json"}},
		Body: []byte(`{"paymentId":"p-1"}`)}
}
