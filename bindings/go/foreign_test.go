package zkelect_test

import (
	"os"
	"testing"
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
