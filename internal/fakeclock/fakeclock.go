// Package fakeclock is a clock that tests move by hand.
package fakeclock

import (
	"sync"
	"time"
)

// Clock starts at 2026-01-01T00:00:00Z and moves only when told.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a Clock at 2026-01-01T00:00:00Z.
func New() *Clock { return &Clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

// Now is the clock's time; pass it as a store's clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
