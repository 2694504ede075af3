// Package clock is the time source of what polls and times out (discovery,
// the health checks of wait-control-plane): an interface so that tests can
// hand in a clock that does not wait, and the real one.
package clock

import "time"

// Clock tells the time and waits.
type Clock interface {
	Now() time.Time
	// After sends the time on the channel once d has passed.
	After(d time.Duration) <-chan time.Time
}

// Real is the system clock.
type Real struct{}

// Now returns the current time.
func (Real) Now() time.Time { return time.Now() }

// After is time.After.
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }
