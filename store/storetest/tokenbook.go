package storetest

import (
	"math/rand/v2"
	"sync"

	"github.com/idemkit/idem/core"
)

// tokenBook remembers, per scope, the tokens told to execute.
type tokenBook struct {
	mu sync.Mutex
	m  map[core.Scope][]core.Token
}

func newTokenBook() *tokenBook { return &tokenBook{m: map[core.Scope][]core.Token{}} }

func (b *tokenBook) add(sc core.Scope, t core.Token) {
	b.mu.Lock()
	b.m[sc] = append(b.m[sc], t)
	b.mu.Unlock()
}

// pick is the latest token of sc most of the time, an older one otherwise,
// zero if none.
func (b *tokenBook) pick(rng *rand.Rand, sc core.Scope) core.Token {
	b.mu.Lock()
	defer b.mu.Unlock()
	ts := b.m[sc]
	switch {
	case len(ts) == 0:
		return 0
	case rng.IntN(10) < 7:
		return ts[len(ts)-1]
	}
	return ts[rng.IntN(len(ts))]
}
