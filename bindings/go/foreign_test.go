package zkelect_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	zkelect "github.com/libzkelect/libzkelect/bindings/go"
)

// A participant of another program (Curator) may lead with an id longer
// than ZKELECT_ID_MAX. tests/bindings/test_go.py writes one with kazoo and
// names its path in ZKELECT_TEST_LONG_ID_PATH.
func TestLeaderIDLongerThanIDMax(t *testing.T) {
	path, want := os.Getenv("ZKELECT_TEST_LONG_ID_PATH"), os.Getenv("ZKELECT_TEST_LONG_ID")
	if path == "" || len(want) <= 1024 {
		t.Skip("ZKELECT_TEST_LONG_ID_PATH/_ID are not set (tests/bindings/test_go.py sets them)")
	}
	e := newElector(t, path, "go-follower")
	enroll(t, e)
	got, err := e.LeaderID()
	if err != nil {
		t.Fatalf("LeaderID: %v", err)
	}
	if got != want {
		t.Fatalf("LeaderID: %d bytes, want the foreign leader's %d", len(got), len(want))
	}
	ps, err := e.Participants()
	if err != nil || len(ps) != 2 || ps[0].ID != want || ps[1].ID != "go-follower" {
		t.Fatalf("Participants: %d, %v", len(ps), err)
	}
}

// Every event type of zkelect.h has its constant (the C library names
// types up to its last; past it, "UNKNOWN"). The map is written by
// gen/vocab.py; the library's names are the other side.
func TestEveryEventTypeHasItsConstant(t *testing.T) {
	consts := map[string]zkelect.EventType{
		// BEGIN gen/vocab.py event names
		"ELECTED":        zkelect.Elected,
		"DEPOSED":        zkelect.Deposed,
		"FOLLOWING":      zkelect.Following,
		"SUSPENDED":      zkelect.Suspended,
		"RECONNECTED":    zkelect.Reconnected,
		"EXPIRED":        zkelect.Expired,
		"LEADER_CHANGED": zkelect.LeaderChanged,
		"ERROR":          zkelect.Failed,
		"RESIGNED":       zkelect.Resigned,
		"OVERFLOW":       zkelect.Overflow,
		"WARNING":        zkelect.Warning,
		"STEPPED_BACK":   zkelect.SteppedBack,
		"LEASE_LOW":      zkelect.LeaseLow,
		// END gen/vocab.py event names
	}
	n := 0
	for code := 1; code < 64; code++ {
		name := zkelect.EventType(code).String()
		if name == "UNKNOWN" {
			continue
		}
		n++
		if c, ok := consts[name]; !ok || int(c) != code {
			t.Errorf("event type %d (%s) has no constant of that value", code, name)
		}
	}
	if n != len(consts) {
		t.Errorf("the library names %d event types, this test knows %d", n, len(consts))
	}
}

// A call that returns only a code reports the library's detail
// (zkelect_last_error), not the code's generic description.
func TestCodeOnlyFailuresCarryTheLibraryDetail(t *testing.T) {
	path := freshPath(t)
	e := newElector(t, path, "idle")
	_, err := e.LeaderID()
	var zerr *zkelect.Error
	if !errors.As(err, &zerr) || zerr.Code != zkelect.CodeNoLeader {
		t.Fatalf("LeaderID on an empty path: %v, want ErrNoLeader", err)
	}
	if !strings.Contains(zerr.Message, "no candidate under "+path) {
		t.Fatalf("LeaderID on an empty path: message %q lacks the library's detail", zerr.Message)
	}
}
