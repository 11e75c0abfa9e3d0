package sim

import (
	"github.com/idemkit/idem"
	"github.com/idemkit/idem/store"
)

// pools keeps the big parts of a server call for the next one: its Flow
// (a kilobyte), and the store.Op or store.Applied of the event it applies.
// A server call used to allocate and clear three kilobytes, half of all the
// bytes a run allocates. What a crash drops is left to the collector. The
// order things are reused in changes nothing a run decides.
type pools struct {
	flows    freeList[idem.Flow]
	ops      freeList[store.Op]
	applieds freeList[store.Applied]
	// opRuns are server calls' main runs (serverCall.mainRun).
	opRuns  freeList[opRun]
	watches freeList[flowWatch] // zeroed when put back
	// deliveries are answers crossing the network (sendAnswer).
	deliveries freeList[delivery]
}

// freeList is a stack of values to use again.
type freeList[T any] []*T

// take is a value from the list, or a new one.
func (l *freeList[T]) take() *T {
	n := len(*l)
	if n == 0 {
		return new(T)
	}
	x := (*l)[n-1]
	*l = (*l)[:n-1]
	return x
}

func (l *freeList[T]) put(x *T) { *l = append(*l, x) }

func (p *pools) flow() *idem.Flow { return p.flows.take() }

// putFlow gives f back once its call is over (idem.Executor.BeginIn makes
// a used Flow new again).
func (p *pools) putFlow(f *idem.Flow) { p.flows.put(f) }

func (p *pools) op() *store.Op { return p.ops.take() }

func (p *pools) applied() *store.Applied { return p.applieds.take() }

// release gives back what r took for the event it applied, once its caller
// heard the outcome.
func (p *pools) release(r *opRun) {
	if r.op != nil {
		p.ops.put(r.op)
		r.op = nil
	}
	if r.applied != nil {
		p.applieds.put(r.applied)
		r.applied = nil
	}
}
