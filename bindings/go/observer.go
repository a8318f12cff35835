package zkelect

import (
	"runtime"
	"time"

	"github.com/libzkelect/libzkelect/bindings/go/internal/capi"
)

// Observer watches who leads an election without taking part (like etcd's
// Observe): LeaderChanged first with the current leader (or none), then on
// every change, plus Suspended, Reconnected, Expired and Failed.
type Observer struct {
	client *Client
	g      guard
	h      capi.NativeObserver // nil once closed; under g.mu
	p      *pump
}

// NewObserver watches the election at path (which is not created).
func (c *Client) NewObserver(path string) (*Observer, error) {
	var o *Observer
	err := c.use(func(h capi.NativeClient) error {
		oh, err := call(func() capi.NativeObserver { return capi.Observer_new(h, path) })
		if err == nil {
			o = &Observer{client: c, h: oh, p: newPump()}
			// As for Elector: a forgotten Observer is freed.
			runtime.SetFinalizer(o, func(o *Observer) { go o.Close() })
		}
		return err
	})
	return o, err
}

func (o *Observer) use(f func(h capi.NativeObserver) error) error {
	if o.g.closing.Load() {
		return &Error{Code: CodeClosed, Message: "observer is closed"}
	}
	o.g.mu.RLock()
	defer o.g.mu.RUnlock()
	if o.h == nil {
		return &Error{Code: CodeClosed, Message: "observer is closed"}
	}
	return f(o.h)
}

// pull is one bounded wait for an event.
func (o *Observer) pull(ms int) (ev capi.NativeEvent, err error) {
	err = o.use(func(h capi.NativeObserver) error { ev = capi.Observer_next_event(h, ms); return nil })
	return ev, err
}

// Events is the channel of the observer's events, closed by Close. As for
// Elector.Events, the goroutine feeding it keeps the Observer reachable
// until Close.
func (o *Observer) Events() <-chan Event { return o.p.start(o.pull) }

// NextEvent takes the next event, waiting up to timeout (< 0: no limit):
// ErrTimeout when none came in time or Wake was called, ErrClosed once
// closed (also for a call waiting when Close began).
func (o *Observer) NextEvent(timeout time.Duration) (Event, error) {
	return nextEvent(&o.g, timeout, o.pull)
}

// EventFD is readable while events wait; owned by the library.
func (o *Observer) EventFD() (int, error) {
	var fd int
	err := o.use(func(h capi.NativeObserver) (err error) {
		fd, err = call(func() int { return capi.Observer_event_fd(h) })
		return err
	})
	return fd, err
}

// Wake makes one waiting (or the next) NextEvent return ErrTimeout at once.
func (o *Observer) Wake() error {
	o.g.wakes.Add(1)
	return o.use(func(h capi.NativeObserver) error {
		_, err := call(func() int { return capi.Observer_wake(h) })
		return err
	})
}

// wakeC wakes a pull blocked in C, also while closing.
func (o *Observer) wakeC() {
	o.g.mu.RLock()
	defer o.g.mu.RUnlock()
	if o.h != nil {
		_, _ = call(func() int { return capi.Observer_wake(o.h) })
	}
}

// Close stops watching and frees the observer; calls waiting on it return
// ErrClosed, and Close waits for them at most one 200 ms slice.
// Idempotent.
func (o *Observer) Close() error {
	o.g.closing.Store(true)
	o.p.stop(o.wakeC)
	o.wakeC()
	o.g.mu.Lock()
	defer o.g.mu.Unlock()
	if o.h == nil {
		return nil
	}
	_, err := call(func() int { return capi.Observer_destroy(o.h) })
	o.h = nil
	runtime.SetFinalizer(o, nil)
	return err
}
