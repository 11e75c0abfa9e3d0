package sim

import "github.com/idemkit/idem/core"

// scopeBook is what the checker keeps of one scope. A key lives in
// incarnations: expiry (or a prune, or a hard delete) ends one, and the
// next reserve starts another. An incarnation is named by the token of the
// attempt that began it, not by its CreatedAt: a zombie's insert carries
// the time it loaded at, and on a coarse store clock a key's new life can
// get the CreatedAt of the one before. What binds is per incarnation: at
// most one execution with an effect, one outcome replayed to every client.
//
// A scope sees a few attempts and fewer lives, so these are short slices,
// searched from the newest: cheaper than maps keyed by (scope, token),
// which every answer and every charge of a run would hash.
type scopeBook struct {
	// granted: the attempts that the store durably made the owner of an
	// in_progress record, each with its incarnation.
	granted []grantedAttempt
	lives   []incarnation
	// everEffect: the gateway processed a request of the scope, in any
	// incarnation.
	everEffect bool
}

// reset empties b for another seed, keeping its arrays (spare.go).
func (b *scopeBook) reset() {
	clear(b.lives[:cap(b.lives)])
	*b = scopeBook{granted: b.granted[:0], lives: b.lives[:0]}
}

// grantedAttempt is an attempt's token and the incarnation it belongs to.
type grantedAttempt struct {
	token core.Token
	first core.Token // the token of the incarnation's first attempt
}

// incarnation is one life of a key.
type incarnation struct {
	first  core.Token // the token of the attempt that began it
	effect *charge    // the first request the gateway processed (a charge, a decline or another business answer)
	seen   seenAnswer // the first outcome a client saw
}

// firstOf returns the incarnation of the granted attempt token, and
// whether token was granted.
func (b *scopeBook) firstOf(token core.Token) (core.Token, bool) {
	for i := len(b.granted) - 1; i >= 0; i-- {
		if b.granted[i].token == token {
			return b.granted[i].first, true
		}
	}
	return 0, false
}

// incarnationOf names the incarnation of attempt token: 0, one of its own,
// for a token never granted.
func (b *scopeBook) incarnationOf(token core.Token) core.Token {
	first, _ := b.firstOf(token)
	return first
}

// life returns the incarnation named first, added if the book has none.
func (b *scopeBook) life(first core.Token) *incarnation {
	for i := len(b.lives) - 1; i >= 0; i-- {
		if b.lives[i].first == first {
			return &b.lives[i]
		}
	}
	b.lives = append(b.lives, incarnation{first: first})
	return &b.lives[len(b.lives)-1]
}

// seenIn returns the first outcome a client saw in the incarnation named
// first (ok false if none), adding nothing.
func (b *scopeBook) seenIn(first core.Token) seenAnswer {
	for i := len(b.lives) - 1; i >= 0; i-- {
		if b.lives[i].first == first {
			return b.lives[i].seen
		}
	}
	return seenAnswer{}
}
