package chaos

import (
	"testing"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
)

var lostScope = core.Scope{Tenant: "t", Principal: "p", UseCase: "u", Key: "lost-test-0123456789"}

// wrote is a call on lostScope, from call to ret, that wrote rec over the
// state (version, token, before).
func wrote(call, ret int64, kind core.WriteKind, version uint64, token core.Token, before core.Status, rec core.Record) linearizability.LifecycleOperation {
	return linearizability.LifecycleOperation{Scope: lostScope, Call: call, Return: ret, Ended: linearizability.EndedOK, Before: before,
		Transition: core.Transition{Write: core.Write{Kind: kind, ExpectVersion: version, ExpectToken: token}}, Record: rec}
}

// read is a call on lostScope, from call to ret, that found rec and wrote
// nothing.
func read(call, ret int64, rec core.Record) linearizability.LifecycleOperation {
	return linearizability.LifecycleOperation{Scope: lostScope, Call: call, Return: ret, Ended: linearizability.EndedOK, Before: rec.Status, Record: rec}
}

func rec(version uint64, token core.Token, status core.Status) core.Record {
	return core.Record{Scope: lostScope, Version: version, Token: token, Status: status}
}

// TestFindLost: what findLost counts as lost, and what it traces to a
// crash, over small histories.
func TestFindLost(t *testing.T) {
	inserted := wrote(0, 10, core.WriteInsert, 0, 0, core.StatusAbsent, rec(1, 5, core.StatusInProgress))
	completed := wrote(20, 30, core.WriteUpdate, 1, 5, core.StatusInProgress, rec(2, 5, core.StatusCompleted))
	for _, c := range []struct {
		name    string
		life    []linearizability.LifecycleOperation
		crashes []span
		want    []lost // scope left out
	}{
		{"in order", []linearizability.LifecycleOperation{inserted, completed, read(40, 50, rec(2, 5, core.StatusCompleted))}, nil, nil},
		{"a reader begun before the write returned may miss it", []linearizability.LifecycleOperation{inserted, read(5, 12, core.Record{})}, nil, nil},
		{"absent again", []linearizability.LifecycleOperation{inserted, wrote(40, 50, core.WriteInsert, 0, 0, core.StatusAbsent, rec(1, 9, core.StatusInProgress))},
			[]span{{15, 16}}, []lost{{state: state{1, 5, core.StatusInProgress}, acked: true, call: 0, detect: 50, crash: true}}},
		{"without a crash in between", []linearizability.LifecycleOperation{inserted, completed, read(40, 50, rec(1, 5, core.StatusInProgress))},
			[]span{{1, 5}, {60, 70}}, []lost{{state: state{2, 5, core.StatusCompleted}, acked: true, call: 20, detect: 50}}},
		{"the same version, another attempt", []linearizability.LifecycleOperation{inserted, read(40, 50, rec(1, 9, core.StatusInProgress))},
			nil, []lost{{state: state{1, 5, core.StatusInProgress}, acked: true, call: 0, detect: 50}}},
		{"a replay a later call no longer sees", []linearizability.LifecycleOperation{read(0, 10, rec(2, 5, core.StatusCompleted)), read(20, 30, rec(1, 5, core.StatusInProgress))},
			nil, []lost{{state: state{2, 5, core.StatusCompleted}, call: 0, detect: 30}}},
		{"a delete: not this check's", []linearizability.LifecycleOperation{completed, wrote(40, 50, core.WriteDelete, 2, 5, core.StatusCompleted, core.Record{}),
			wrote(60, 70, core.WriteInsert, 0, 0, core.StatusAbsent, rec(1, 9, core.StatusInProgress))}, nil, nil},
	} {
		got := findLost(c.life, c.crashes)
		for i := range got {
			got[i].scope = core.Scope{}
		}
		if len(got) != len(c.want) || len(got) == 1 && got[0] != c.want[0] {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}
