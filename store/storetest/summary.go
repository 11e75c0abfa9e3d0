package storetest

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/idemkit/idem/linearizability"

	"github.com/idemkit/idem/core"
)

// overlap is the share of operations whose interval meets another's on the
// same scope: how much concurrency the checker saw.
func overlap[T any](ops []T, key func(*T) (core.Scope, int64, int64)) string {
	type iv struct{ a, b int64 }
	by := map[core.Scope][]iv{}
	for i := range ops {
		sc, a, b := key(&ops[i])
		by[sc] = append(by[sc], iv{a, b})
	}
	n := 0
	for _, ivs := range by {
		sort.Slice(ivs, func(i, j int) bool { return ivs[i].a < ivs[j].a })
		met := make([]bool, len(ivs))
		end, who := int64(-1<<63), -1
		for i, x := range ivs {
			if who >= 0 && x.a <= end {
				met[i], met[who] = true, true
			}
			if x.b > end {
				end, who = x.b, i
			}
		}
		for _, m := range met {
			if m {
				n++
			}
		}
	}
	if len(ops) == 0 {
		return "no operations"
	}
	return fmt.Sprintf("%d of %d operations (%d%%) overlapped another on their scope", n, len(ops), 100*n/len(ops))
}

func storeOverlap(ops []linearizability.StoreOperation) string {
	if len(ops) == 0 {
		return ""
	}
	return "store: " + overlap(ops, func(o *linearizability.StoreOperation) (core.Scope, int64, int64) { return o.Scope, o.Call, o.Return })
}

func lifeOverlap(ops []linearizability.LifecycleOperation) string {
	if len(ops) == 0 {
		return ""
	}
	return "lifecycle: " + overlap(ops, func(o *linearizability.LifecycleOperation) (core.Scope, int64, int64) {
		return o.Scope, o.Call, o.Return
	})
}

// counter counts named things from many goroutines, for the summaries.
type counter struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counter) add(k string) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[k]++
	c.mu.Unlock()
}

func (c *counter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.m))
	for k := range c.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, c.m[k])
	}
	return b.String()
}

// problemLog collects, from many goroutines, the invariant violations found
// beside a history.
type problemLog struct {
	mu   sync.Mutex
	list []string
}

func (l *problemLog) add(format string, args ...any) {
	l.mu.Lock()
	l.list = append(l.list, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

// all is what was added so far.
func (l *problemLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.list...)
}
