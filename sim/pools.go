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
	flows    []*idem.Flow
	ops      []*store.Op
	applieds []*store.Applied
}

func (p *pools) flow() *idem.Flow {
	if n := len(p.flows); n > 0 {
		f := p.flows[n-1]
		p.flows = p.flows[:n-1]
		return f
	}
	return new(idem.Flow)
}

// putFlow gives f back once its call is over (idem.Executor.BeginIn makes
// a used Flow new again).
func (p *pools) putFlow(f *idem.Flow) { p.flows = append(p.flows, f) }

func (p *pools) op() *store.Op {
	if n := len(p.ops); n > 0 {
		o := p.ops[n-1]
		p.ops = p.ops[:n-1]
		return o
	}
	return new(store.Op)
}

func (p *pools) applied() *store.Applied {
	if n := len(p.applieds); n > 0 {
		a := p.applieds[n-1]
		p.applieds = p.applieds[:n-1]
		return a
	}
	return new(store.Applied)
}

// release gives back what r took for the event it applied, once its caller
// heard the outcome.
func (p *pools) release(r *opRun) {
	if r.op != nil {
		p.ops = append(p.ops, r.op)
		r.op = nil
	}
	if r.applied != nil {
		p.applieds = append(p.applieds, r.applied)
		r.applied = nil
	}
}
