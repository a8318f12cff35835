package zkelect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	zkelect "github.com/libzkelect/libzkelect/bindings/go"
)

// These tests run against a real ZooKeeper ensemble named by
// ZKELECT_TEST_HOSTS (tests/bindings/test_go.py starts one and runs them).
var hosts = os.Getenv("ZKELECT_TEST_HOSTS")

func TestMain(m *testing.M) {
	if hosts == "" {
		fmt.Fprintln(os.Stderr, "ZKELECT_TEST_HOSTS is not set: these tests need a ZooKeeper "+
			"ensemble (run tests/bindings/test_go.py, or set it to a connect string)")
		os.Exit(2)
	}
	os.Exit(m.Run())
}

const waitLimit = 20 * time.Second

func opts() zkelect.Options {
	return zkelect.Options{Hosts: hosts, SessionTimeout: 4 * time.Second}
}

func freshPath(t *testing.T) string {
	return fmt.Sprintf("/t/go-%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "_"), os.Getpid(),
		time.Now().UnixNano())
}

func newElector(t *testing.T, path, id string) *zkelect.Elector {
	t.Helper()
	e, err := zkelect.NewElector(opts(), path, id)
	if err != nil {
		t.Fatalf("NewElector(%s): %v", id, err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// next returns the next event of one of the wanted types, logging the
// others, and fails the test when none comes within waitLimit.
func next(t *testing.T, ch <-chan zkelect.Event, who string, want ...zkelect.EventType) zkelect.Event {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("%s: event channel closed while waiting for %v", who, want)
			}
			for _, w := range want {
				if ev.Type == w {
					return ev
				}
			}
			t.Logf("%s: passing over %v (%s)", who, ev.Type, ev.Message)
		case <-deadline:
			t.Fatalf("%s: no %v within %v", who, want, waitLimit)
		}
	}
}

// enroll volunteers e and waits until it is in the queue (leading or
// following), so that candidates enter in a known order.
func enroll(t *testing.T, e *zkelect.Elector) <-chan zkelect.Event {
	t.Helper()
	ch := e.Events()
	if err := e.Volunteer(); err != nil {
		t.Fatalf("Volunteer(%s): %v", e.ID(), err)
	}
	next(t, ch, e.ID(), zkelect.Elected, zkelect.Following)
	return ch
}

func TestVersionAndErrors(t *testing.T) {
	if v := zkelect.Version(); !strings.Contains(v, ".") {
		t.Fatalf("Version() = %q", v)
	}
	if keys := zkelect.ConfigKeys(); len(keys) < 8 || keys[0] != "zk.hosts" {
		t.Fatalf("ConfigKeys() = %q", keys)
	}
	_, err := zkelect.Connect(zkelect.Options{Hosts: hosts, Settings: map[string]string{"no.such.key": "1"}})
	var zerr *zkelect.Error
	if !errors.As(err, &zerr) || zerr.Code != zkelect.CodeInvalid || !errors.Is(err, zkelect.ErrInvalid) {
		t.Fatalf("unknown key: got %v, want an *Error with CodeInvalid", err)
	}
	if !strings.Contains(err.Error(), "no.such.key") || !strings.Contains(err.Error(), "ZKELECT_EINVAL") {
		t.Fatalf("unknown key: message %q should name the key and the code", err.Error())
	}
	c, err := zkelect.Connect(opts())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.NewElector("relative/path", "x"); !errors.Is(err, zkelect.ErrInvalid) {
		t.Fatalf("relative path: got %v, want ErrInvalid", err)
	}
	e, err := c.NewElector(freshPath(t), "idle")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Resign(); !errors.Is(err, zkelect.ErrState) {
		t.Fatalf("Resign of an idle candidacy: got %v, want ErrState", err)
	}
	if _, err := e.FencingToken(); !errors.Is(err, zkelect.ErrNotLeader) {
		t.Fatalf("FencingToken of an idle candidacy: got %v, want ErrNotLeader", err)
	}
	if err := c.Close(); !errors.Is(err, zkelect.ErrState) {
		t.Fatalf("Close of a client with a live elector: got %v, want ErrState", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Volunteer(); !errors.Is(err, zkelect.ErrClosed) {
		t.Fatalf("Volunteer after Close: got %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestThreeElectorsElectExactlyOne(t *testing.T) {
	path := freshPath(t)
	es := []*zkelect.Elector{newElector(t, path, "go-a"), newElector(t, path, "go-b"), newElector(t, path, "go-c")}
	for _, e := range es {
		if err := e.Volunteer(); err != nil {
			t.Fatal(err)
		}
	}
	leaders := make(chan *zkelect.Elector, len(es))
	ctx := ctxFor(t, waitLimit)
	for _, e := range es {
		go func(e *zkelect.Elector) {
			if e.AwaitLeader(ctx) == nil {
				leaders <- e
			}
		}(e)
	}
	var leader *zkelect.Elector
	select {
	case leader = <-leaders:
	case <-ctx.Done():
		t.Fatal("nobody was elected")
	}
	count := 0
	for _, e := range es {
		if e.IsLeader() {
			count++
		}
	}
	if count != 1 || !leader.IsLeader() {
		t.Fatalf("%d electors lead, want exactly 1 (%s)", count, leader.ID())
	}
	// A session of 4 s: a lease is at most 2 s less the margin.
	if left := leader.LeaseLeft(); left <= 0 || left > 2*time.Second {
		t.Fatalf("LeaseLeft of the leader = %v, want in (0, 2s]", left)
	}
	if !leader.IsLeaderFor(50*time.Millisecond) || !leader.IsLeaderFor(0) || leader.IsLeaderFor(8*time.Second) {
		t.Fatal("IsLeaderFor of the leader: want true for 50ms and 0, false for 8s")
	}
	for _, e := range es {
		if e != leader && (e.LeaseLeft() != 0 || e.IsLeaderFor(0)) {
			t.Fatalf("%s follows but has lease time left %v", e.ID(), e.LeaseLeft())
		}
	}
	for _, e := range es {
		id, err := e.LeaderID()
		if err != nil || id != leader.ID() {
			t.Fatalf("%s says the leader is %q (%v), want %q", e.ID(), id, err, leader.ID())
		}
	}
	ps, err := es[0].Participants()
	if err != nil || len(ps) != 3 || ps[0].ID != leader.ID() {
		t.Fatalf("Participants = %+v (%v): want 3, %s first", ps, err, leader.ID())
	}
	token, err := leader.FencingToken()
	if err != nil || token <= 0 || token != ps[0].Token {
		t.Fatalf("FencingToken = %d (%v), participants say %d", token, err, ps[0].Token)
	}
	counters, err := leader.Client().Counters()
	if err != nil || counters["terms_won"] != 1 {
		t.Fatalf("Counters = %v (%v): want terms_won 1", counters, err)
	}
	var st struct {
		State    string `json:"state"`
		IsLeader bool   `json:"is_leader"`
		Token    int64  `json:"token"`
		TermsWon uint64 `json:"terms_won"`
		Position int64  `json:"queue_position"`
		ID       string `json:"id"`
	}
	raw, err := leader.Stats()
	if err != nil || json.Unmarshal(raw, &st) != nil || st.State != "leader" || !st.IsLeader ||
		st.Token != token || st.TermsWon != 1 || st.Position != 0 || st.ID != leader.ID() {
		t.Fatalf("Stats = %s (%v): want the leader's", raw, err)
	}
	var cs struct {
		Counters  map[string]uint64 `json:"counters"`
		Elections []struct {
			ID string `json:"id"`
		} `json:"elections"`
	}
	raw, err = leader.Client().Stats()
	if err != nil || json.Unmarshal(raw, &cs) != nil || cs.Counters["terms_won"] != 1 ||
		len(cs.Elections) != 1 || cs.Elections[0].ID != leader.ID() {
		t.Fatalf("Client().Stats = %s (%v)", raw, err)
	}
}

func TestResignFailsOverInQueueOrder(t *testing.T) {
	path := freshPath(t)
	a, b, c := newElector(t, path, "go-a"), newElector(t, path, "go-b"), newElector(t, path, "go-c")
	enroll(t, a)
	enroll(t, b)
	enroll(t, c)
	if err := a.AwaitLeader(ctxFor(t, waitLimit)); err != nil {
		t.Fatalf("first in the queue does not lead: %v", err)
	}
	prevToken, _ := a.FencingToken()
	for _, step := range []struct{ from, to *zkelect.Elector }{{a, b}, {b, c}} {
		if err := step.from.Resign(); err != nil {
			t.Fatal(err)
		}
		if step.from.IsLeader() {
			t.Fatalf("%s still leads after Resign returned", step.from.ID())
		}
		if err := step.to.AwaitLeader(ctxFor(t, waitLimit)); err != nil {
			t.Fatalf("%s did not take over from %s: %v", step.to.ID(), step.from.ID(), err)
		}
		token, err := step.to.FencingToken()
		if err != nil || token <= prevToken {
			t.Fatalf("token of %s = %d (%v), previous term's was %d", step.to.ID(), token, err, prevToken)
		}
		prevToken = token
	}
	if a.IsLeader() || b.IsLeader() || !c.IsLeader() {
		t.Fatal("after two resigns only go-c must lead")
	}
	// A resigned candidacy may come back, at the back of the queue.
	if err := a.Volunteer(); err != nil {
		t.Fatalf("Volunteer again after Resign: %v", err)
	}
	ps, err := c.Participants()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitLimit)
	for (len(ps) != 2 || ps[1].ID != "go-a") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // polling ZooKeeper's view; bounded
		if ps, err = c.Participants(); err != nil {
			t.Fatal(err)
		}
	}
	if len(ps) != 2 || ps[0].ID != "go-c" || ps[1].ID != "go-a" {
		t.Fatalf("queue after go-a came back: %+v, want go-c, go-a", ps)
	}
}

func TestEventsComeInOrder(t *testing.T) {
	path := freshPath(t)
	a, b := newElector(t, path, "go-a"), newElector(t, path, "go-b")
	ea := a.Events()
	if err := a.Volunteer(); err != nil {
		t.Fatal(err)
	}
	el := next(t, ea, "go-a", zkelect.Elected)
	if el.Token <= 0 || el.ID != "go-a" {
		t.Fatalf("ELECTED event: %+v", el)
	}
	eb := b.Events()
	if err := b.Volunteer(); err != nil {
		t.Fatal(err)
	}
	fo := next(t, eb, "go-b", zkelect.Following, zkelect.Elected)
	if fo.Type != zkelect.Following || fo.ID != "go-a" {
		t.Fatalf("go-b: want FOLLOWING go-a, got %v %q", fo.Type, fo.ID)
	}
	if err := a.Resign(); err != nil {
		t.Fatal(err)
	}
	// go-a: DEPOSED (resigned), then RESIGNED, and nothing of the two out
	// of order.
	dep := next(t, ea, "go-a", zkelect.Deposed, zkelect.Resigned)
	if dep.Type != zkelect.Deposed || dep.Reason != zkelect.ReasonResigned {
		t.Fatalf("go-a: want DEPOSED (resigned) first, got %v (%v)", dep.Type, dep.Reason)
	}
	res := next(t, ea, "go-a", zkelect.Resigned, zkelect.Elected, zkelect.Deposed)
	if res.Type != zkelect.Resigned {
		t.Fatalf("go-a: want RESIGNED after DEPOSED, got %v", res.Type)
	}
	if !dep.Time.Before(res.Time) && !dep.Time.Equal(res.Time) {
		t.Fatalf("event times go backwards: %v then %v", dep.Time, res.Time)
	}
	el2 := next(t, eb, "go-b", zkelect.Elected)
	if el2.Token <= el.Token {
		t.Fatalf("go-b's token %d is not above go-a's %d", el2.Token, el.Token)
	}
}

func TestTransferHandsOverToTheNamedCandidate(t *testing.T) {
	path := freshPath(t)
	a, b, c := newElector(t, path, "go-a"), newElector(t, path, "go-b"), newElector(t, path, "go-c")
	ea, eb := enroll(t, a), enroll(t, b)
	enroll(t, c)
	if err := a.AwaitLeader(ctxFor(t, waitLimit)); err != nil {
		t.Fatal(err)
	}
	before, _ := a.FencingToken()
	if err := a.Transfer("nobody", waitLimit); !errors.Is(err, zkelect.ErrNoCandidate) {
		t.Fatalf("Transfer to an unknown id: %v, want ErrNoCandidate", err)
	}
	if err := b.Transfer("go-c", waitLimit); !errors.Is(err, zkelect.ErrNotLeader) {
		t.Fatalf("Transfer by a follower: %v, want ErrNotLeader", err)
	}
	if err := a.Transfer("go-c", waitLimit); err != nil {
		t.Fatalf("Transfer to go-c: %v", err)
	}
	if err := c.AwaitLeader(ctxFor(t, waitLimit)); err != nil {
		t.Fatal(err)
	}
	if token, _ := c.FencingToken(); token <= before || a.IsLeader() {
		t.Fatalf("after the transfer: go-c's token %d (go-a's %d), go-a leads %v", token, before, a.IsLeader())
	}
	if ev := next(t, eb, "go-b", zkelect.SteppedBack); ev.Reason != zkelect.ReasonTransferred || ev.ID != "go-c" {
		t.Fatalf("go-b: STEPPED_BACK %+v", ev)
	}
	if ev := next(t, ea, "go-a", zkelect.Deposed); ev.Reason != zkelect.ReasonTransferred {
		t.Fatalf("go-a: DEPOSED %+v", ev)
	}
}

func TestFencedCommitOnlyWhileLeading(t *testing.T) {
	path := freshPath(t)
	a, b := newElector(t, path, "go-a"), newElector(t, path, "go-b")
	enroll(t, a)
	if err := a.AwaitLeader(ctxFor(t, waitLimit)); err != nil {
		t.Fatal(err)
	}
	enroll(t, b)
	data := path + "-data"
	if _, err := a.FencedCommit(waitLimit, zkelect.FencedCreate(data, []byte("a\x00b"), false),
		zkelect.FencedSet(data, []byte("x"), 0)); err != nil {
		t.Fatalf("the leader's fenced create and set: %v", err)
	}
	if failed, err := a.FencedCommit(waitLimit, zkelect.FencedSet(data, []byte("y"), -1),
		zkelect.FencedCreate(data, nil, false)); !errors.Is(err, zkelect.ErrZooKeeper) || failed != 1 {
		t.Fatalf("a batch whose create exists: failed %d, %v; want 1, ErrZooKeeper", failed, err)
	}
	if _, err := b.FencedCommit(waitLimit, zkelect.FencedSet(data, []byte("b"), -1)); !errors.Is(err, zkelect.ErrNotLeader) {
		t.Fatalf("a follower's fenced set: %v, want ErrNotLeader", err)
	}
	if _, err := a.FencedCommit(waitLimit, zkelect.FencedDelete(data, 1)); err != nil {
		t.Fatalf("the leader's fenced delete at version 1: %v", err)
	}
}

func TestClientFencedCommitWithTheLeadersNodeAndToken(t *testing.T) {
	path := freshPath(t)
	a := newElector(t, path, "go-a")
	ea := enroll(t, a)
	if err := a.AwaitLeader(ctxFor(t, waitLimit)); err != nil {
		t.Fatal(err)
	}
	ps, err := a.Participants()
	if err != nil || len(ps) != 1 {
		t.Fatalf("Participants: %v, %v", ps, err)
	}
	node, token := path+"/"+ps[0].Node, ps[0].Token
	if own, _ := a.FencingToken(); own != token {
		t.Fatalf("the leader's token %d, its node's czxid %d", own, token)
	}
	other, err := zkelect.Connect(opts())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	data := path + "-data"
	if _, err := other.FencedCommit(node, token, waitLimit, zkelect.FencedCreate(data, []byte("other"), false)); err != nil {
		t.Fatalf("another client's fenced create with the leader's node and token: %v", err)
	}
	if failed, err := other.FencedCommit(node, token, waitLimit, zkelect.FencedSet(data, nil, -1),
		zkelect.FencedCreate(data, nil, false)); !errors.Is(err, zkelect.ErrZooKeeper) || failed != 1 {
		t.Fatalf("a batch whose create exists: failed %d, %v; want 1, ErrZooKeeper", failed, err)
	}
	if _, err := other.FencedCommit(node, token-1, waitLimit, zkelect.FencedCreate(data+"-x", nil, false)); !errors.Is(err, zkelect.ErrFenced) ||
		!strings.Contains(err.Error(), "another term's node") {
		t.Fatalf("with another term's token: %v, want ErrFenced", err)
	}
	if err := a.Resign(); err != nil {
		t.Fatal(err)
	}
	next(t, ea, "go-a", zkelect.Resigned) // the node is gone (Resign only starts its delete)
	if _, err := other.FencedCommit(node, token, waitLimit, zkelect.FencedCreate(data+"-x", nil, false)); !errors.Is(err, zkelect.ErrFenced) ||
		!strings.Contains(err.Error(), "is gone") {
		t.Fatalf("once the node is gone: %v, want ErrFenced", err)
	}
	// Nothing of the refused batches was committed: the next leader can
	// still create the node they would have.
	b := newElector(t, path, "go-b")
	enroll(t, b)
	if err := b.AwaitLeader(ctxFor(t, waitLimit)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.FencedCommit(waitLimit, zkelect.FencedCreate(data+"-x", nil, false),
		zkelect.FencedDelete(data+"-x", -1), zkelect.FencedDelete(data, -1)); err != nil {
		t.Fatalf("the next leader's create of what the refused batches named: %v", err)
	}
}

func TestRequeueStepsBackToTheBackOfTheLine(t *testing.T) {
	path := freshPath(t)
	a, b := newElector(t, path, "go-a"), newElector(t, path, "go-b")
	ea := enroll(t, a)
	enroll(t, b)
	if err := a.AwaitLeader(ctxFor(t, waitLimit)); err != nil {
		t.Fatal(err)
	}
	if err := a.Requeue(); err != nil || a.IsLeader() {
		t.Fatalf("Requeue: %v, still leads %v", err, a.IsLeader())
	}
	if ev := next(t, ea, "go-a", zkelect.Deposed); ev.Reason != zkelect.ReasonResigned {
		t.Fatalf("go-a: DEPOSED %+v", ev)
	}
	next(t, ea, "go-a", zkelect.Resigned)
	next(t, ea, "go-a", zkelect.Following)
	if err := b.AwaitLeader(ctxFor(t, waitLimit)); err != nil {
		t.Fatal(err)
	}
}

func TestTransferAskedFromOutside(t *testing.T) {
	path := freshPath(t)
	asker, err := zkelect.Connect(opts())
	if err != nil {
		t.Fatal(err)
	}
	defer asker.Close()
	if err := asker.Transfer(path, "go-b", waitLimit); !errors.Is(err, zkelect.ErrNoLeader) {
		t.Fatalf("Transfer with nobody there: %v, want ErrNoLeader", err)
	}
	a, b := newElector(t, path, "go-a"), newElector(t, path, "go-b")
	enroll(t, a)
	enroll(t, b)
	if err := a.AwaitLeader(ctxFor(t, waitLimit)); err != nil {
		t.Fatal(err)
	}
	if err := asker.Transfer(path, "nobody", waitLimit); !errors.Is(err, zkelect.ErrNoCandidate) {
		t.Fatalf("Transfer to an unknown id: %v, want ErrNoCandidate", err)
	}
	o := opts()
	o.Settings = map[string]string{"election.priority": "9"}
	hi, err := zkelect.NewElector(o, path, "go-hi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hi.Close() })
	enroll(t, hi)
	ps, err := asker.Participants(path)
	if err != nil || len(ps) != 3 || ps[0].Priority != 0 || ps[2].Priority != 9 {
		t.Fatalf("participants with priorities: %+v, %v", ps, err)
	}
	if err := asker.Transfer(path, "go-b", waitLimit); err != nil {
		t.Fatalf("Transfer to go-b: %v", err)
	}
	if err := b.AwaitLeader(ctxFor(t, waitLimit)); err != nil || a.IsLeader() {
		t.Fatalf("after the transfer: go-b %v, go-a leads %v", err, a.IsLeader())
	}
}

func TestCloseReleasesTheNode(t *testing.T) {
	path := freshPath(t)
	watcher, err := zkelect.Connect(opts())
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	e, err := zkelect.NewElector(opts(), path, "go-closing")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Volunteer(); err != nil {
		t.Fatal(err)
	}
	if err := e.AwaitLeader(ctxFor(t, waitLimit)); err != nil {
		t.Fatal(err)
	}
	ps, err := watcher.Participants(path)
	if err != nil || len(ps) != 1 || ps[0].ID != "go-closing" {
		t.Fatalf("before Close: %+v (%v)", ps, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// Close waits for the deletion to be acknowledged: no wait needed here.
	ps, err = watcher.Participants(path)
	if err != nil || len(ps) != 0 {
		t.Fatalf("after Close: %+v (%v), want no candidate", ps, err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if e.IsLeader() || e.LeaseLeft() != 0 || e.IsLeaderFor(0) {
		t.Fatal("IsLeader, LeaseLeft or IsLeaderFor after Close")
	}
}

func TestObserverSeesTheLeader(t *testing.T) {
	path := freshPath(t)
	e := newElector(t, path, "go-observed")
	enroll(t, e)
	c, err := zkelect.Connect(opts())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	o, err := c.NewObserver(path)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	ch := o.Events()
	ev := next(t, ch, "observer", zkelect.LeaderChanged)
	if ev.ID != "go-observed" || ev.Token <= 0 {
		t.Fatalf("LEADER_CHANGED: %+v", ev)
	}
	if err := e.Resign(); err != nil {
		t.Fatal(err)
	}
	ev = next(t, ch, "observer", zkelect.LeaderChanged)
	if ev.ID != "" || ev.Token != 0 {
		t.Fatalf("after the only candidate resigned: %+v, want no leader", ev)
	}
}

func TestAwaitLeaderHonoursTheContext(t *testing.T) {
	path := freshPath(t)
	a, b := newElector(t, path, "go-a"), newElector(t, path, "go-b")
	enroll(t, a)
	enroll(t, b)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := b.AwaitLeader(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AwaitLeader of a follower: got %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("AwaitLeader overran its context by %v", d)
	}
	if fd, err := b.EventFD(); err != nil || fd < 0 {
		t.Fatalf("EventFD = %d, %v", fd, err)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	settle := func() int {
		runtime.GC()
		return runtime.NumGoroutine()
	}
	before := settle()
	path := freshPath(t)
	for round := 0; round < 2; round++ {
		var es []*zkelect.Elector
		for i := 0; i < 3; i++ {
			e, err := zkelect.NewElector(opts(), path, fmt.Sprintf("go-leak-%d", i))
			if err != nil {
				t.Fatal(err)
			}
			enroll(t, e) // starts the pulling goroutine
			es = append(es, e)
		}
		if !es[0].IsLeader() {
			t.Fatal("the first to enroll does not lead")
		}
		if n := runtime.NumGoroutine(); n < before+3 {
			t.Fatalf("%d goroutines with 3 event pumps running, %d before: the count is not measuring them", n, before)
		}
		for _, e := range es {
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			// Events still buffered may come out; then the channel must be
			// closed (the buffer holds at most 64).
			closed := false
			for i := 0; i < 100 && !closed; i++ {
				_, open := <-e.Events()
				closed = !open
			}
			if !closed {
				t.Fatal("Events channel still open after Close")
			}
		}
	}
	// Close waits for its goroutine, so the count is back at once; the
	// bounded retry only absorbs the runtime's own goroutines settling.
	after := settle()
	for i := 0; i < 50 && after > before; i++ {
		time.Sleep(20 * time.Millisecond)
		after = settle()
	}
	if after > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("goroutines: %d before, %d after closing every elector:\n%s",
			before, after, buf[:runtime.Stack(buf, true)])
	}
}
