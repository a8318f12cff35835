package zkelect

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/libzkelect/libzkelect/bindings/go/internal/capi"
)

// waitSlice is the longest single wait inside the C library. Every
// blocking call (NextEvent, AwaitLeader, AwaitConnected, the Events
// goroutine) waits in slices of at most this long and lets go of the
// handle's lock between two slices, so Close, which needs the lock
// exclusively, waits for at most one slice of each blocked caller (plus
// a ZooKeeper query already running, at most the session timeout).
const waitSlice = 200 * time.Millisecond

// guard is what Elector and Observer share: the lock that keeps Close from
// freeing the handle under a running call, the flag that makes every call
// started after Close began fail with ErrClosed instead of queueing behind
// it, and the count of Wake calls not yet answered.
type guard struct {
	mu      sync.RWMutex // Close takes it exclusively; every other call shares it
	closing atomic.Bool
	wakes   atomic.Int64
}

// takeWake answers one pending Wake, if any.
func (g *guard) takeWake() bool {
	for {
		n := g.wakes.Load()
		if n <= 0 {
			return false
		}
		if g.wakes.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// sliceMs is the next slice of a wait of timeout (< 0: no limit) that began
// at start, in ms: 0 once the time has run out.
func sliceMs(start time.Time, timeout time.Duration) int {
	d := waitSlice
	if timeout >= 0 {
		left := timeout - time.Since(start)
		if left <= 0 {
			return 0
		}
		if left < d {
			d = left
		}
	}
	return int((d + time.Millisecond - 1) / time.Millisecond)
}

var (
	errTimedOut = &Error{Code: CodeTimeout, Message: "no event within the timeout"}
	errWoken    = &Error{Code: CodeTimeout, Message: "woken by Wake before an event came"}
)

// nextEvent waits for an event up to timeout (0: do not wait, < 0: no
// limit) in slices of at most waitSlice; pull runs one slice (under the
// handle's read lock) and returns nil when it ran out.
func nextEvent(g *guard, timeout time.Duration, pull func(ms int) (capi.NativeEvent, error)) (Event, error) {
	start := time.Now()
	for {
		ev, err := pull(sliceMs(start, timeout))
		if err != nil {
			return Event{}, err
		}
		if ev != nil && ev.Swigcptr() != 0 {
			return takeEvent(ev), nil
		}
		if g.takeWake() {
			return Event{}, errWoken
		}
		if timeout >= 0 && time.Since(start) >= timeout {
			return Event{}, errTimedOut
		}
	}
}
