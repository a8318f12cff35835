package zkelect

import (
	"sync"
	"time"

	"github.com/libzkelect/libzkelect/bindings/go/internal/capi"
)

// Observer watches who leads an election without taking part (like etcd's
// Observe): LeaderChanged first with the current leader (or none), then on
// every change, plus Suspended, Reconnected, Expired and Failed.
type Observer struct {
	client *Client
	mu     sync.RWMutex
	h      capi.NativeObserver
	p      *pump
}

// NewObserver watches the election at path (which is not created).
func (c *Client) NewObserver(path string) (*Observer, error) {
	var o *Observer
	err := c.use(func(h capi.NativeClient) error {
		oh, err := call(func() capi.NativeObserver { return capi.Observer_new(h, path) })
		if err == nil {
			o = &Observer{client: c, h: oh, p: newPump()}
		}
		return err
	})
	return o, err
}

func (o *Observer) use(f func(h capi.NativeObserver) error) error {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.h == nil {
		return &Error{Code: CodeClosed, Message: "observer is closed"}
	}
	return f(o.h)
}

func (o *Observer) next(ms int) (Event, bool) {
	var ev capi.NativeEvent
	_ = o.use(func(h capi.NativeObserver) error { ev = capi.Observer_next_event(h, ms); return nil })
	if ev == nil || ev.Swigcptr() == 0 {
		return Event{}, false
	}
	return takeEvent(ev), true
}

// Events is the channel of the observer's events, closed by Close.
func (o *Observer) Events() <-chan Event { return o.p.start(o.next) }

// NextEvent takes the next event, waiting up to timeout (< 0: no limit).
func (o *Observer) NextEvent(timeout time.Duration) (Event, bool) {
	ms := int(timeout / time.Millisecond)
	if timeout < 0 {
		ms = -1
	}
	return o.next(ms)
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

// Wake makes a waiting (or the next) NextEvent return at once.
func (o *Observer) Wake() error {
	return o.use(func(h capi.NativeObserver) error {
		_, err := call(func() int { return capi.Observer_wake(h) })
		return err
	})
}

// Close stops watching and frees the observer. Idempotent.
func (o *Observer) Close() error {
	o.p.stop(func() { _ = o.Wake() })
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.h == nil {
		return nil
	}
	_, err := call(func() int { return capi.Observer_destroy(o.h) })
	o.h = nil
	return err
}
