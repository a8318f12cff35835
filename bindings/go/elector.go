package zkelect

import (
	"context"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/libzkelect/libzkelect/bindings/go/internal/capi"
)

// EventType says what an Event reports (ZKELECT_EV_* of zkelect.h).
type EventType int

const (
	// BEGIN gen/vocab.py events
	Elected       EventType = 1  // this candidacy leads; Token is the fencing token
	Deposed       EventType = 2  // it stopped leading; Reason says why
	Following     EventType = 3  // enrolled, not leading; Node/ID name the predecessor
	Suspended     EventType = 4  // connection lost; the session may survive
	Reconnected   EventType = 5  // reconnected within the same session
	Expired       EventType = 6  // session expired; the candidacy volunteers again
	LeaderChanged EventType = 7  // (Observer) ID/Token name the new leader, or none
	Failed        EventType = 8  // an asynchronous failure; Err says which
	Resigned      EventType = 9  // the resign finished; Volunteer may be called
	Overflow      EventType = 10 // the queue was full: Token older events were dropped
	Warning       EventType = 11 // nothing failed, but an operator should act; Message says what
	SteppedBack   EventType = 12 // it went to the back of the line, still a candidate; Reason says why, Node/ID the transfer's target
	LeaseLow      EventType = 13 // the lease runs low (lease.warn.percent): a renewal is late; Token is the term's
	// END gen/vocab.py events
)

func (t EventType) String() string { return capi.Event_type_name(int(t)) }

// Reason says why a Deposed event happened (ZKELECT_REASON_*).
type Reason int

const (
	// BEGIN gen/vocab.py reasons
	ReasonNone        Reason = 0
	ReasonResigned    Reason = 1
	ReasonSuspended   Reason = 2
	ReasonLeaseEnded  Reason = 3
	ReasonExpired     Reason = 4
	ReasonNodeDeleted Reason = 5
	ReasonClosed      Reason = 6
	ReasonTransferred Reason = 7
	// END gen/vocab.py reasons
)

func (r Reason) String() string { return capi.Reason_name(int(r)) }

// Event is one event of an Elector or Observer, copied out of the library.
type Event struct {
	Type    EventType
	Reason  Reason
	Token   int64  // Elected, LeaderChanged
	Err     error  // Failed: an *Error
	ZKRC    int    // Failed: ZooKeeper's own code, 0 when none
	Message string // human-readable, for every event
	Node    string
	ID      string
	Time    time.Time // when the library saw the change
}

func takeEvent(ev capi.NativeEvent) Event {
	defer capi.Event_destroy(ev)
	e := Event{
		Type:    EventType(capi.Event_type(ev)),
		Reason:  Reason(capi.Event_reason(ev)),
		Token:   capi.Event_token(ev),
		ZKRC:    capi.Event_zk_rc(ev),
		Message: capi.Event_message(ev),
		Node:    capi.Event_node(ev),
		ID:      capi.Event_id(ev),
		Time:    time.Unix(0, capi.Event_time_ns(ev)),
	}
	if code := capi.Event_error(ev); code != 0 {
		e.Err = &Error{Code: Code(code), Message: e.Message}
	}
	return e
}

// pump is the one goroutine per handle that pulls events from the library
// and hands them to a channel. Close stops it (done, then a wake to end the
// blocked pull) and waits for it before freeing the handle.
type pump struct {
	mu      sync.Mutex
	ch      chan Event
	done    chan struct{}
	stopped chan struct{}
	started bool
	closed  bool
}

func newPump() *pump {
	return &pump{done: make(chan struct{}), stopped: make(chan struct{})}
}

// start runs next (one bounded pull: an event, nil when none came, or an
// error once the handle is closed) in a goroutine, once. After stop it
// returns a closed channel.
func (p *pump) start(next func(ms int) (capi.NativeEvent, error)) <-chan Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch != nil {
		return p.ch
	}
	p.ch = make(chan Event, 64)
	if p.closed {
		close(p.ch)
		return p.ch
	}
	p.started = true
	go func(ch chan Event) {
		defer close(p.stopped)
		defer close(ch)
		for {
			select {
			case <-p.done:
				return
			default:
			}
			// Bounded, so that a wake lost to a race cannot hang Close.
			raw, err := next(int(waitSlice / time.Millisecond))
			if err != nil {
				return
			}
			if raw == nil || raw.Swigcptr() == 0 {
				continue
			}
			select {
			case ch <- takeEvent(raw):
			case <-p.done:
				return
			}
		}
	}(p.ch)
	return p.ch
}

// stop ends the goroutine, if any, and waits for it. Idempotent.
func (p *pump) stop(wake func()) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.done)
	started := p.started
	p.mu.Unlock()
	if started {
		wake()
		<-p.stopped
	}
}

// Elector is one candidacy of one participant on one election path.
type Elector struct {
	client     *Client
	ownsClient bool
	path, id   string

	g guard
	h capi.NativeElection // nil once closed; read and written under g.mu
	p *pump
}

// NewElector starts a session of its own (closed with the Elector) and makes
// a candidacy of id on path. Call Volunteer to enter the election.
func NewElector(opts Options, path, id string) (*Elector, error) {
	c, err := Connect(opts)
	if err != nil {
		return nil, err
	}
	e, err := c.NewElector(path, id)
	if err != nil {
		c.Close()
		return nil, err
	}
	e.ownsClient = true
	return e, nil
}

// NewElector makes a candidacy of id on path on this client's session.
func (c *Client) NewElector(path, id string) (*Elector, error) {
	var e *Elector
	err := c.use(func(h capi.NativeClient) error {
		eh, err := call(func() capi.NativeElection { return capi.Election_new(h, path, id) })
		if err == nil {
			e = &Elector{client: c, path: path, id: id, h: eh, p: newPump()}
			// A forgotten Elector still leaves the election: its node would
			// otherwise keep it first in line until the process exits. The
			// Close runs on a goroutine of its own because it may wait for
			// ZooKeeper, and the runtime runs all finalizers on one.
			runtime.SetFinalizer(e, func(e *Elector) { go e.Close() })
		}
		return err
	})
	return e, err
}

// Path is the election path; ID the participant id.
func (e *Elector) Path() string { return e.path }
func (e *Elector) ID() string   { return e.id }

// Client is the session the Elector runs on.
func (e *Elector) Client() *Client { return e.client }

func (e *Elector) use(f func(h capi.NativeElection) error) error {
	if e.g.closing.Load() {
		return &Error{Code: CodeClosed, Message: "elector is closed"}
	}
	e.g.mu.RLock()
	defer e.g.mu.RUnlock()
	if e.h == nil {
		return &Error{Code: CodeClosed, Message: "elector is closed"}
	}
	return f(e.h)
}

func (e *Elector) rc(f func(h capi.NativeElection) int) error {
	return e.use(func(h capi.NativeElection) error {
		_, err := call(func() int { return f(h) })
		return err
	})
}

// Volunteer enters the election (non-blocking: Elected, Following or Failed
// events tell the outcome). ErrState when already a candidate;
// ErrLimitExceeded, doing nothing, when its node would bring the client's
// candidate nodes above zk.session.nodes.max.bytes (docs/limits.md).
func (e *Elector) Volunteer() error { return e.rc(capi.Volunteer) }

// Resign leaves the election: IsLeader is false when it returns; a Resigned
// event follows once the node is gone. ErrState when not a candidate.
func (e *Elector) Resign() error { return e.rc(capi.Resign) }

// Requeue steps back to the back of the line in one call (Resign, then
// Volunteer, with nothing between): a leader stops leading when it returns
// and the next in line leads; Deposed (a leader), Resigned, then Following
// or Elected follow. ErrState when not a candidate; ErrLimitExceeded, doing
// nothing, when the new node, counted beside the old one until that is gone,
// would bring the client's candidate nodes above zk.session.nodes.max.bytes.
func (e *Elector) Requeue() error { return e.rc(capi.Requeue) }

// IsLeader reports whether this candidacy leads now (and its lease runs).
func (e *Elector) IsLeader() bool {
	leads := false
	_ = e.use(func(h capi.NativeElection) error { leads = capi.Is_leader(h) == 1; return nil })
	return leads
}

// LeaseLeft is the lease time left while this candidacy leads (whole ms),
// else 0 (also once closed): how much longer IsLeader stays true unless a
// renewal pushes the deadline later. To decide whether work fits in the
// term, use IsLeaderFor, which answers from one reading.
func (e *Elector) LeaseLeft() time.Duration {
	var ms int64
	_ = e.use(func(h capi.NativeElection) error { ms = capi.Lease_left_ms(h); return nil })
	return time.Duration(ms) * time.Millisecond
}

// IsLeaderFor reports whether this candidacy leads now and its lease runs at
// least d more (rounded up to whole ms), from one reading of the deadline and
// the clock: no other candidate can be elected within d plus the lease
// margin unless this one resigns. d <= 0 asks the same as IsLeader.
func (e *Elector) IsLeaderFor(d time.Duration) bool {
	ms := int64(0)
	if d > 0 {
		ms = int64((d + time.Millisecond - 1) / time.Millisecond)
	}
	if ms > math.MaxInt32 {
		ms = math.MaxInt32
	}
	leads := false
	_ = e.use(func(h capi.NativeElection) error { leads = capi.Is_leader_for(h, int(ms)) == 1; return nil })
	return leads
}

// AwaitLeader blocks until this candidacy leads (nil), ctx ends (ctx.Err()),
// or the candidacy cannot lead (ErrState when not a candidate, ErrClosed,
// ErrAuth).
func (e *Elector) AwaitLeader(ctx context.Context) error {
	return awaitSlices(ctx, func(ms int) error {
		return e.rc(func(h capi.NativeElection) int { return capi.Await_leader(h, ms) })
	})
}

// Transfer hands this leader's leadership to the candidate of the same path
// whose id is target, waiting at most timeout (> 0) for it to be next in line
// (docs/semantics.md, "Transferring leadership"). nil once the target is
// first. ErrNoCandidate, ErrNotLeader or ErrNotSupported (a candidate ahead
// of the target cannot step back): nothing changed; ErrTimeout or
// ErrTargetLost: the leadership went to the next in line, as after a
// resign. This candidacy stays a candidate, at the back of the line. Blocks.
func (e *Elector) Transfer(target string, timeout time.Duration) error {
	ms := int64((timeout + time.Millisecond - 1) / time.Millisecond)
	if ms > math.MaxInt32 {
		ms = math.MaxInt32
	}
	return e.rc(func(h capi.NativeElection) int { return capi.Transfer(h, target, int(ms)) })
}

// FencingToken is the token of the current leadership term; ErrNotLeader
// when not leading.
func (e *Elector) FencingToken() (int64, error) {
	var t int64
	err := e.use(func(h capi.NativeElection) (err error) {
		t, err = call(func() int64 { return capi.Fencing_token(h) })
		return err
	})
	return t, err
}

// LeaderID asks ZooKeeper who leads this election; ErrNoLeader when nobody
// is a candidate.
func (e *Elector) LeaderID() (string, error) {
	var id string
	err := e.use(func(h capi.NativeElection) (err error) {
		id, err = call(func() string { return capi.Leader_id(h) })
		return err
	})
	return id, err
}

// Participants asks ZooKeeper for the candidates, leader first.
func (e *Elector) Participants() ([]Participant, error) {
	var out []Participant
	err := e.use(func(h capi.NativeElection) error {
		p, err := call(func() capi.NativeParticipants { return capi.Participants(h) })
		if err == nil {
			out = participantList(p)
		}
		return err
	})
	return out, err
}

// Stats is a snapshot of this elector's figures as a JSON object: state,
// term, queue position, losses by reason, keepalive round trips and
// failover latency (docs/monitoring.md). Since libzkelect 1.2.
func (e *Elector) Stats() ([]byte, error) {
	var out []byte
	err := e.use(func(h capi.NativeElection) error {
		s, err := call(func() capi.NativeStats { return capi.Election_stats(h) })
		if err == nil {
			out = statsJSON(s)
		}
		return err
	})
	return out, err
}

// pull is one bounded wait for an event.
func (e *Elector) pull(ms int) (ev capi.NativeEvent, err error) {
	err = e.use(func(h capi.NativeElection) error { ev = capi.Next_event(h, ms); return nil })
	return ev, err
}

// Events returns the channel of this Elector's events, in order, fed by one
// goroutine that runs until Close (which closes the channel). Do not mix
// with NextEvent. While that goroutine runs it references the Elector, so
// an Elector whose Events was called is never freed by the garbage
// collector: Close it.
func (e *Elector) Events() <-chan Event { return e.p.start(e.pull) }

// NextEvent takes the next event, waiting up to timeout (0: do not wait,
// < 0: no limit; any positive duration is honoured, however long). It
// returns ErrTimeout when no event came in time or Wake was called, and
// ErrClosed once the Elector is closed, including for a call that was
// waiting when Close began (it returns within 200 ms of it). For callers
// that do not use Events.
func (e *Elector) NextEvent(timeout time.Duration) (Event, error) {
	return nextEvent(&e.g, timeout, e.pull)
}

// EventFD is a descriptor readable while events wait (level-triggered), for
// poll loops; owned by the library, valid until Close.
func (e *Elector) EventFD() (int, error) {
	var fd int
	err := e.use(func(h capi.NativeElection) (err error) {
		fd, err = call(func() int { return capi.Event_fd(h) })
		return err
	})
	return fd, err
}

// Wake makes one waiting (or the next) NextEvent return ErrTimeout at once.
func (e *Elector) Wake() error {
	e.g.wakes.Add(1)
	return e.rc(capi.Wake)
}

// wakeC wakes a pull blocked in C, also while closing.
func (e *Elector) wakeC() {
	e.g.mu.RLock()
	defer e.g.mu.RUnlock()
	if e.h != nil {
		_, _ = call(func() int { return capi.Wake(e.h) })
	}
}

// Close leaves the election (deleting the candidate's node), stops the
// Events goroutine, frees the handle, and closes the client if NewElector
// made it. Calls waiting on the Elector in other goroutines return
// ErrClosed; Close waits for them at most one 200 ms slice, then for the
// node's deletion at most the session timeout. A second Close returns nil.
func (e *Elector) Close() error {
	e.g.closing.Store(true)
	e.p.stop(e.wakeC)
	e.wakeC()
	e.g.mu.Lock()
	if e.h == nil {
		e.g.mu.Unlock()
		return nil
	}
	_, err := call(func() int { return capi.Election_destroy(e.h) })
	e.h = nil
	e.g.mu.Unlock()
	runtime.SetFinalizer(e, nil)
	if e.ownsClient {
		if cerr := e.client.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
