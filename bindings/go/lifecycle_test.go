package zkelect_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	zkelect "github.com/libzkelect/libzkelect/bindings/go"
)

// closeLimit bounds how long Close may take while other goroutines are
// blocked in pulling calls: one slice of theirs (200 ms) plus the C
// destroy, far below it on a loaded machine. A Close that hangs fails here
// instead of hanging the suite.
const closeLimit = 10 * time.Second

// closeWithin runs close and fails the test if it has not returned within
// closeLimit.
func closeWithin(t *testing.T, what string, close func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: Close: %v", what, err)
		}
	case <-time.After(closeLimit):
		buf := make([]byte, 1<<16)
		t.Fatalf("%s: Close has not returned after %v while other goroutines wait on the handle:\n%s",
			what, closeLimit, buf[:runtime.Stack(buf, true)])
	}
}

// Goroutines blocked without limit in NextEvent or AwaitLeader must not
// keep Close from returning, and must themselves return ErrClosed once the
// handle is closed.
func TestCloseReturnsWhileNextEventBlocks(t *testing.T) {
	path := freshPath(t)
	c, err := zkelect.Connect(opts())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := c.NewElector(path, "go-idle")
	if err != nil {
		t.Fatal(err)
	}
	o, err := c.NewObserver(path)
	if err != nil {
		t.Fatal(err)
	}
	// The observer's first event (no leader) is taken, so it is quiet.
	if _, err := o.NextEvent(waitLimit); err != nil {
		t.Fatalf("observer's first event: %v", err)
	}
	// A follower, to wait in AwaitLeader without limit (on a path of its
	// own: the observer must stay quiet).
	path2 := path + "-2"
	leader := newElector(t, path2, "go-leader")
	enroll(t, leader)
	f, err := c.NewElector(path2, "go-follower")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Volunteer(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make(chan error, 6)
	for i := 0; i < 2; i++ {
		wg.Add(3)
		go func() { defer wg.Done(); _, err := e.NextEvent(-1); results <- err }()
		go func() { defer wg.Done(); _, err := o.NextEvent(-1); results <- err }()
		go func() { defer wg.Done(); results <- f.AwaitLeader(context.Background()) }()
	}
	// Give the readers time to enter the C call; a reader that has not yet
	// entered it only makes the test weaker, never wrong.
	time.Sleep(100 * time.Millisecond)
	closeWithin(t, "elector", e.Close)
	closeWithin(t, "observer", o.Close)
	closeWithin(t, "follower", f.Close)
	wg.Wait()
	close(results)
	for err := range results {
		if !errors.Is(err, zkelect.ErrClosed) {
			t.Fatalf("a call blocked during Close returned %v, want ErrClosed", err)
		}
	}
	if e.IsLeader() {
		t.Fatal("IsLeader after Close")
	}
}

// After Close, NextEvent says so at once (ErrClosed), whatever its timeout,
// so that a loop over it ends instead of spinning; before Close a wait
// that runs out is ErrTimeout.
func TestNextEventAfterCloseIsErrClosed(t *testing.T) {
	c, err := zkelect.Connect(opts())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := c.NewElector(freshPath(t), "go-closed")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.NextEvent(0); !errors.Is(err, zkelect.ErrTimeout) {
		t.Fatalf("NextEvent(0) on a quiet elector: %v, want ErrTimeout", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{0, time.Hour, -1} {
		if _, err := e.NextEvent(d); !errors.Is(err, zkelect.ErrClosed) {
			t.Fatalf("NextEvent(%v) after Close: %v, want ErrClosed", d, err)
		}
	}
}

// A timeout beyond what C's int holds in ms waits (it was truncated: 2^32
// ms became 0, a non-blocking poll). The follower's NextEvent must still be
// waiting when the leader resigns, and return the ELECTED that follows.
func TestNextEventHugeTimeoutWaits(t *testing.T) {
	path := freshPath(t)
	a, b := newElector(t, path, "go-a"), newElector(t, path, "go-b")
	for _, e := range []*zkelect.Elector{a, b} {
		if err := e.Volunteer(); err != nil {
			t.Fatal(err)
		}
		// Drain to the enrolment event so the queue is empty.
		for {
			ev, err := e.NextEvent(waitLimit)
			if err != nil {
				t.Fatalf("%s: %v", e.ID(), err)
			}
			if ev.Type == zkelect.Elected || ev.Type == zkelect.Following {
				break
			}
		}
	}
	time.AfterFunc(300*time.Millisecond, func() { _ = a.Resign() })
	for _, d := range []time.Duration{(1 << 32) * time.Millisecond, 50 * 24 * time.Hour, time.Duration(1<<63 - 1)} {
		ev, err := b.NextEvent(d)
		if err != nil {
			t.Fatalf("NextEvent(%v): %v, want it to wait for the next event", d, err)
		}
		if ev.Type == zkelect.Elected {
			return
		}
	}
	t.Fatal("no ELECTED after go-a resigned")
}

// An Elector nobody closes and nobody references is freed by the garbage
// collector: its node goes away, so someone else can be elected.
func TestForgottenElectorIsFreed(t *testing.T) {
	path := freshPath(t)
	watcher, err := zkelect.Connect(opts())
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	func() {
		e, err := zkelect.NewElector(opts(), path, "go-forgotten")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Volunteer(); err != nil {
			t.Fatal(err)
		}
		if err := e.AwaitLeader(ctxFor(t, waitLimit)); err != nil {
			t.Fatal(err)
		}
	}()
	deadline := time.Now().Add(waitLimit)
	for {
		runtime.GC()
		ps, err := watcher.Participants(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the forgotten elector still stands after %v: %+v", waitLimit, ps)
		}
		time.Sleep(50 * time.Millisecond) // polling ZooKeeper's view; bounded
	}
}

// Participants with a bad path is an argument error (ErrInvalid), not a
// lost connection.
func TestParticipantsErrorCodes(t *testing.T) {
	c, err := zkelect.Connect(opts())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Participants("relative/path"); !errors.Is(err, zkelect.ErrInvalid) {
		t.Fatalf("Participants(relative path): %v, want ErrInvalid", err)
	}
	if _, err := c.Participants("/a//b"); !errors.Is(err, zkelect.ErrInvalid) {
		t.Fatalf("Participants(/a//b): %v, want ErrInvalid", err)
	}
	// C would read "a\x00b" as "a": a NUL byte is an error, not a cut.
	if _, err := c.NewElector(freshPath(t), "a\x00b"); !errors.Is(err, zkelect.ErrInvalid) {
		t.Fatalf("NewElector with a NUL in the id: %v, want ErrInvalid", err)
	}
}

// Asking a ZooKeeper nobody runs fails for lack of a connection, with the
// code in Code and not in the message (the library's message starts with
// the code's name; the binding moves it into Code).
func TestParticipantsWithoutAServer(t *testing.T) {
	c, err := zkelect.Connect(zkelect.Options{Hosts: "127.0.0.1:1", SessionTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Participants("/some/path")
	var zerr *zkelect.Error
	if !errors.As(err, &zerr) || (zerr.Code != zkelect.CodeConnLoss && zerr.Code != zkelect.CodeTimeout) {
		t.Fatalf("Participants without a server: %v, want ErrConnLoss or ErrTimeout", err)
	}
	if strings.HasPrefix(zerr.Message, "ZKELECT_") {
		t.Fatalf("the code's name is left in the message: %q", zerr.Message)
	}
}

// Client.Close ends every Elector of the client at once (issue 56,
// zkelect_client_shutdown): while they are open it returns ErrState, but
// none leads any more and the other client's candidates take over; each
// Elector then closes without a round trip, and the client after them.
func TestClientCloseEndsItsElectorsAtOnce(t *testing.T) {
	c, err := zkelect.Connect(opts())
	if err != nil {
		t.Fatal(err)
	}
	var ours, theirs []*zkelect.Elector
	for i := 0; i < 5; i++ {
		path := fmt.Sprintf("%s-%d", freshPath(t), i)
		e, err := c.NewElector(path, "go-ours")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Volunteer(); err != nil {
			t.Fatal(err)
		}
		if err := e.AwaitLeader(ctxFor(t, waitLimit)); err != nil {
			t.Fatal(err)
		}
		ours = append(ours, e)
		o := newElector(t, path, "go-theirs")
		if err := o.Volunteer(); err != nil {
			t.Fatal(err)
		}
		theirs = append(theirs, o)
	}
	if err := c.Close(); !errors.Is(err, zkelect.ErrState) {
		t.Fatalf("Close with open Electors: got %v, want ErrState", err)
	}
	for i, e := range ours {
		if e.IsLeader() {
			t.Fatalf("elector %d still leads after the client's Close", i)
		}
		if err := e.Volunteer(); !errors.Is(err, zkelect.ErrClosed) {
			t.Fatalf("Volunteer after the client's Close: got %v, want ErrClosed", err)
		}
	}
	for _, o := range theirs {
		if err := o.AwaitLeader(ctxFor(t, waitLimit)); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range ours {
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}
