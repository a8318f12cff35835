// Package zkelect is leader election on Apache ZooKeeper, through
// libzkelect (the C library; found with pkg-config libzkelect).
//
//	e, err := zkelect.NewElector(zkelect.Options{Hosts: "127.0.0.1:2181"}, "/app/leader", "node-1")
//	if err != nil { ... }
//	defer e.Close()
//	if err := e.Volunteer(); err != nil { ... }
//	if err := e.AwaitLeader(ctx); err == nil && e.IsLeader() { ... lead ... }
//
// Every method is safe for concurrent use. Events are pulled from the library
// by one goroutine per Elector (started by Events); no library thread ever
// calls into Go.
package zkelect

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/libzkelect/libzkelect/bindings/go/internal/capi"
)

// Version is the runtime library's version, "major.minor.patch".
func Version() string { return capi.Version_string() }

// ConfigKeys lists every configuration key the library knows, in a fixed
// order (Options.Settings takes any of them but zk.hosts).
func ConfigKeys() []string {
	var keys []string
	// Bounded: the library knows a handful of keys.
	for i := int64(0); i < 1024; i++ {
		k := capi.Conf_key(i)
		if k == "" {
			break
		}
		keys = append(keys, k)
	}
	return keys
}

// Options configure a client (one ZooKeeper session).
type Options struct {
	// Hosts is the ZooKeeper connect string, "host:port[,...][/chroot]".
	Hosts string
	// SessionTimeout requested from ZooKeeper (0: the library's default).
	SessionTimeout time.Duration
	// Settings are any other libzkelect configuration keys, e.g.
	// "leadership": "strict", "zk.auth": "digest:user:pass".
	Settings map[string]string
}

func (o Options) conf() (capi.NativeConf, error) {
	conf, err := call(capi.Conf_new)
	if err != nil {
		return nil, err
	}
	set := func(k, v string) error {
		_, err := call(func() int { return capi.Conf_set(conf, k, v) })
		return err
	}
	err = set("zk.hosts", o.Hosts)
	if err == nil && o.SessionTimeout > 0 {
		err = set("zk.session.timeout.ms", strconv.FormatInt(o.SessionTimeout.Milliseconds(), 10))
	}
	for k, v := range o.Settings {
		if err == nil {
			err = set(k, v)
		}
	}
	if err != nil {
		capi.Conf_destroy(conf)
		return nil, err
	}
	return conf, nil
}

// Client is one ZooKeeper session, shared by any number of Electors and
// Observers. Close them before the client.
type Client struct {
	mu sync.RWMutex // Close takes it exclusively; every other call shares it
	h  capi.NativeClient
}

// Connect starts a session. It does not wait for the connection (see
// AwaitConnected): elections made before it connects start once it does.
func Connect(opts Options) (*Client, error) {
	conf, err := opts.conf()
	if err != nil {
		return nil, err
	}
	defer capi.Conf_destroy(conf)
	h, err := call(func() capi.NativeClient { return capi.Client_new(conf) })
	if err != nil {
		return nil, err
	}
	c := &Client{h: h}
	// A forgotten Client ends its session. Electors and Observers reference
	// their Client, so the runtime finalizes them first (see SetFinalizer).
	runtime.SetFinalizer(c, func(c *Client) { go c.Close() })
	return c, nil
}

// use runs f with the handle unless the client is closed.
func (c *Client) use(f func(h capi.NativeClient) error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.h == nil {
		return &Error{Code: CodeClosed, Message: "client is closed"}
	}
	return f(c.h)
}

// awaitSlices waits in slices of at most waitSlice so that a cancelled ctx
// and Close are noticed quickly; wait returns ErrTimeout for a slice run out.
func awaitSlices(ctx context.Context, wait func(ms int) error) error {
	for {
		slice := waitSlice
		if d, ok := ctx.Deadline(); ok {
			if left := time.Until(d); left < slice {
				slice = left
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if slice < time.Millisecond {
			slice = time.Millisecond
		}
		err := wait(int(slice / time.Millisecond))
		if !errors.Is(err, ErrTimeout) {
			return err
		}
	}
}

// AwaitConnected waits until the session is connected or ctx ends.
func (c *Client) AwaitConnected(ctx context.Context) error {
	return awaitSlices(ctx, func(ms int) error {
		return c.use(func(h capi.NativeClient) error {
			_, err := call(func() int { return capi.Client_await_connected(h, ms) })
			return err
		})
	})
}

// IsConnected reports whether the session is connected now.
func (c *Client) IsConnected() bool {
	connected := false
	_ = c.use(func(h capi.NativeClient) error {
		connected = capi.Client_is_connected(h) == 1
		return nil
	})
	return connected
}

// SessionID is the current ZooKeeper session id (0 before the first
// connection).
func (c *Client) SessionID() int64 {
	var id int64
	_ = c.use(func(h capi.NativeClient) error { id = capi.Client_session_id(h); return nil })
	return id
}

// SessionTimeout is the timeout the server negotiated (0 before the first
// connection).
func (c *Client) SessionTimeout() time.Duration {
	var ms int
	_ = c.use(func(h capi.NativeClient) error { ms = capi.Client_session_timeout_ms(h); return nil })
	return time.Duration(ms) * time.Millisecond
}

// Counters reads the client's monitoring counters by name ("terms_won",
// "deposed_resigned", ..., "zk_requests", "keepalives").
func (c *Client) Counters() (map[string]uint64, error) {
	out := map[string]uint64{}
	err := c.use(func(h capi.NativeClient) error {
		for i := 0; i < int(capi.COUNTER__COUNT); i++ {
			name := capi.Counter_name(i)
			v, err := call(func() int64 { return capi.Client_counter(h, i) })
			if err != nil {
				return err
			}
			out[name] = uint64(v)
		}
		return nil
	})
	return out, err
}

// statsJSON reads and frees a snapshot.
func statsJSON(s capi.NativeStats) []byte {
	defer capi.Stats_destroy(s)
	return []byte(capi.Stats_json(s))
}

// Stats is a snapshot of the client's figures as a JSON object: its
// session, its counters, and under "elections" the snapshot of each of its
// electors (docs/monitoring.md lists the keys; new keys may appear, none
// goes away). Cheap: nothing is asked of ZooKeeper. Since libzkelect 1.2.
func (c *Client) Stats() ([]byte, error) {
	var out []byte
	err := c.use(func(h capi.NativeClient) error {
		s, err := call(func() capi.NativeStats { return capi.Client_stats(h) })
		if err == nil {
			out = statsJSON(s)
		}
		return err
	})
	return out, err
}

// Participant is one candidate of an election, in queue order.
type Participant struct {
	ID      string    // participant id
	Node    string    // node name under the election path
	Token   int64     // czxid of its node: the fencing token it leads with
	Created time.Time // creation time of its node (server clock)
	// Priority is election.priority as its node's name carries it, 0 to 255
	// (0: none; also for Curator's candidates). Since libzkelect 1.2.
	Priority int
}

func participantList(p capi.NativeParticipants) []Participant {
	defer capi.Participants_destroy(p)
	n := capi.Participants_count(p)
	out := make([]Participant, 0, n)
	for i := int64(0); i < n; i++ {
		out = append(out, Participant{
			ID:       capi.Participants_id(p, i),
			Node:     capi.Participants_node(p, i),
			Token:    capi.Participants_token(p, i),
			Created:  time.UnixMilli(capi.Participants_ctime_ms(p, i)),
			Priority: capi.Participants_priority(p, i),
		})
	}
	return out
}

// Participants asks ZooKeeper for the candidates of the election at path,
// leader first.
func (c *Client) Participants(path string) ([]Participant, error) {
	var out []Participant
	err := c.use(func(h capi.NativeClient) error {
		p, err := call(func() capi.NativeParticipants { return capi.Client_participants(h, path) })
		if err == nil {
			out = participantList(p)
		}
		return err
	})
	return out, err
}

// Transfer asks the current leader of the election at path, from outside it,
// to hand leadership to the candidate whose id is target, the leader waiting
// at most timeout (1 ms to 10 min) for it to be next in line
// (docs/semantics.md, "A transfer asked from outside"). nil once the target
// leads. ErrNoLeader, ErrNoCandidate, ErrNotSupported or ErrState: nothing
// changed; ErrTimeout or ErrTargetLost: the leadership went to the next in
// line. Blocks for up to timeout plus a few session timeouts.
func (c *Client) Transfer(path, target string, timeout time.Duration) error {
	ms := int64((timeout + time.Millisecond - 1) / time.Millisecond)
	if ms > 1<<30 {
		ms = 1 << 30 // refused by the library as out of range, as it should be
	}
	return c.use(func(h capi.NativeClient) error {
		_, err := call(func() int { return capi.Client_transfer(h, path, target, int(ms)) })
		return err
	})
}

// Close ends every Elector and Observer still open on the client at once
// (their deletes sent together, waiting at most one session timeout:
// zkelect_client_shutdown), then the session; ZooKeeper removes what is
// left at once. With Electors or Observers still open it returns ErrState
// and frees nothing: they are ended (their calls return ErrClosed), and
// closing them costs no round trip; Close the client again after them. A
// second Close returns nil.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == nil {
		return nil
	}
	// ErrClosed after a Close that returned ErrState, ErrTimeout when nodes
	// are left to the session's end: neither stops the destroy.
	_, _ = call(func() int { return capi.Client_shutdown(c.h, -1) })
	_, err := call(func() int { return capi.Client_destroy(c.h) })
	if errors.Is(err, ErrState) {
		return err // nothing was freed: the handle stays usable
	}
	c.h = nil
	runtime.SetFinalizer(c, nil)
	return err
}
