package scenario

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// world is what Flow and Op scenarios share: a memory store whose clock the
// scenario sets (at= on any command), the policy in force, and the commands
// of actors the scenario does not host (event commands, record).
type world struct {
	step   core.StepFunc
	policy core.Policy
	now    time.Time // the store's clock
	st     *memstore.Store
}

// init makes w a world whose store steps events with step, under the
// default policy, with its clock at T0. One shard keeps the store's fresh
// tokens in one sequence, so that a scenario's tokens do not depend on its
// keys. The store reads w's clock: w must not be copied after.
func (w *world) init(step core.StepFunc) {
	*w = world{step: step, policy: core.PolicyDefault(), now: T0}
	w.st = memstore.New(memstore.Options{Clock: func() time.Time { return w.now }, Shards: 1, Step: step})
}

// at reads a command's arguments and moves the store's clock to its at=.
func (w *world) at(t *testing.T, d *datadriven.TestData) args {
	a := argsOf(t, d)
	if a.has("at") {
		w.now = T0.Add(a.duration("at"))
	}
	return a
}

// common runs the commands of a world: record (key=), and an event applied
// to the store as another actor would (a sweeper, the reconciler, a client
// that does not go through the scenario's host).
func (w *world) common(a args) string {
	if a.d.Cmd == "record" {
		a.only("key", "at")
		snap, err := w.st.Load(context.Background(), scopeOf(a))
		if err != nil {
			return "error: " + err.Error()
		}
		return "record: " + snap.Record.Describe()
	}
	kind, ok := eventCommands[a.d.Cmd]
	if !ok {
		a.d.Fatalf(a.t, "unknown command %s", a.d.Cmd)
	}
	a.only(eventArgs...)
	var out store.Applied
	if err := store.Apply(context.Background(), w.st, scopeOf(a), event(a, kind), &w.policy, &out); err != nil {
		return "error: " + err.Error()
	}
	return DescribeApplied(&out)
}
