// Package watch is `wiggum watch`: it folds a run's event log into what a
// person watching the run needs to see, live or after the fact, and follows
// the log by polling it. It only ever reads: no lock, no write, so it cannot
// disturb the run it shows.
package watch

import "github.com/wiggum-dev/wiggum/internal/events"

// Event is one line of the event log.
type Event = events.Event
