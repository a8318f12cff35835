package fencing_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/lib/pq"
	zkelect "github.com/libzkelect/libzkelect/bindings/go"
)

// ZKELECT_TEST_HOSTS: a ZooKeeper ensemble; ZKELECT_TEST_PG_DSN: a
// PostgreSQL database where fencing.sql is installed, with a table
// items (label text, token bigint). tests/fencing/test_helpers.py sets both.
var (
	hosts = os.Getenv("ZKELECT_TEST_HOSTS")
	dsn   = os.Getenv("ZKELECT_TEST_PG_DSN")
)

func TestMain(m *testing.M) {
	if hosts == "" || dsn == "" {
		fmt.Fprintln(os.Stderr, "ZKELECT_TEST_HOSTS or ZKELECT_TEST_PG_DSN is not set: run "+
			"tests/fencing/test_helpers.py")
		os.Exit(2)
	}
	os.Exit(m.Run())
}

const waitLimit = 30 * time.Second

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// leader returns an elector of path that leads, and its token.
func leader(t *testing.T, path, id string) (*zkelect.Elector, int64) {
	t.Helper()
	e, err := zkelect.NewElector(zkelect.Options{Hosts: hosts, SessionTimeout: 4 * time.Second}, path, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	if err := e.Volunteer(); err != nil {
		t.Fatal(err)
	}
	if err := e.AwaitLeader(ctxFor(t)); err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	token, err := e.FencingToken()
	if err != nil {
		t.Fatal(err)
	}
	return e, token
}

func names(t *testing.T) (path, resource string) {
	base := fmt.Sprintf("go-%s-%d-%d", t.Name(), os.Getpid(), time.Now().UnixNano())
	return "/t/" + base, base
}

func insert(label string, token int64) func(*sql.Tx) error {
	return func(tx *sql.Tx) error {
		_, err := tx.Exec("INSERT INTO items (label, token) VALUES ($1, $2)", label, token)
		return err
	}
}

func labels(t *testing.T, db *sql.DB, prefix string) []string {
	t.Helper()
	rows, err := db.Query("SELECT label FROM items WHERE label LIKE $1 ORDER BY id", prefix+"%")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	return got
}

func TestFencedTxCommits(t *testing.T) {
	path, resource := names(t)
	db := openDB(t)
	_, token := leader(t, path, "go-a")
	if err := zkelect.FencedTx(ctxFor(t), db, resource, token, insert(resource+"-a1", token)); err != nil {
		t.Fatalf("the leader's fenced transaction: %v", err)
	}
	if got := labels(t, db, resource); strings.Join(got, ",") != resource+"-a1" {
		t.Fatalf("rows after the leader's commit: %v", got)
	}
}

func TestFencedTxRollsBackOnTheUsersError(t *testing.T) {
	path, resource := names(t)
	db := openDB(t)
	_, token := leader(t, path, "go-a")
	boom := errors.New("boom")
	err := zkelect.FencedTx(ctxFor(t), db, resource, token, func(tx *sql.Tx) error {
		if err := insert(resource+"-lost", token)(tx); err != nil {
			return err
		}
		return boom
	})
	var deposed *zkelect.DeposedError
	if !errors.Is(err, boom) || errors.As(err, &deposed) {
		t.Fatalf("FencedTx with fn failing: %v, want fn's error", err)
	}
	if got := labels(t, db, resource); len(got) != 0 {
		t.Fatalf("rows of the rolled-back transaction: %v", got)
	}
}

func TestDeposedLeadersTransactionIsRefused(t *testing.T) {
	path, resource := names(t)
	db := openDB(t)
	a, ta := leader(t, path, "go-a")
	if err := zkelect.FencedTx(ctxFor(t), db, resource, ta, insert(resource+"-a1", ta)); err != nil {
		t.Fatalf("A's first transaction: %v", err)
	}
	// A is deposed (it resigns; a paused A would not even know) and B is
	// elected and writes. A still holds its token.
	if err := a.Resign(); err != nil {
		t.Fatal(err)
	}
	_, tb := leader(t, path, "go-b")
	if tb <= ta {
		t.Fatalf("B's token %d is not above A's %d", tb, ta)
	}
	if err := zkelect.FencedTx(ctxFor(t), db, resource, tb, insert(resource+"-b1", tb)); err != nil {
		t.Fatalf("B's transaction: %v", err)
	}
	err := zkelect.FencedTx(ctxFor(t), db, resource, ta, insert(resource+"-a2", ta))
	var deposed *zkelect.DeposedError
	if !errors.As(err, &deposed) || !errors.Is(err, zkelect.ErrFenced) || deposed.Token != ta ||
		!strings.Contains(err.Error(), "deposed") {
		t.Fatalf("the deposed leader's transaction committed or failed otherwise: %v", err)
	}
	if got := labels(t, db, resource); strings.Join(got, ",") != resource+"-a1,"+resource+"-b1" {
		t.Fatalf("rows: %v, want A's first and B's only", got)
	}
	if err := zkelect.FencedTx(ctxFor(t), db, resource, tb, insert(resource+"-b2", tb)); err != nil {
		t.Fatalf("B's second transaction: %v", err)
	}
}
