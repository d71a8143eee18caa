// Package testclock is a clock tests move by hand, for every package whose
// code takes its time from a Now function (the gateway's AppOptions.Now,
// the approvals service's, the policy stores').
package testclock

import (
	"sync"
	"time"
)

// Clock is a clock a test moves by hand.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New is a Clock at now.
func New(now time.Time) *Clock { return &Clock{now: now} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
