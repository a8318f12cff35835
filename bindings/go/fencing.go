package zkelect

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// What fencing.sql (the PostgreSQL guard, docs/fencing.md) defines: the
// statement a fenced transaction begins with, its parameters the resource's
// name and the leader's fencing token, and the SQLSTATE of its refusal.
const (
	FenceSQL        = "SELECT zkelect.fence($1, $2)"
	DeposedSQLState = "ZKE01"
)

// TxBeginner is what FencedTx needs of its database: *sql.DB and *sql.Conn
// have it.
type TxBeginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// DeposedError says PostgreSQL refused a fenced transaction (SQLSTATE
// ZKE01): a later term has written to Resource, so the process whose Token
// this is no longer leads. Nothing the transaction did was kept. Err is the
// driver's error. errors.Is(err, ErrFenced) holds for it, as for a fenced
// ZooKeeper write refused for the same reason.
type DeposedError struct {
	Resource string
	Token    int64
	Err      error
}

func (e *DeposedError) Error() string {
	return fmt.Sprintf("zkelect: deposed: resource %q refused token %d (SQLSTATE %s, a later leader has written): %v",
		e.Resource, e.Token, DeposedSQLState, e.Err)
}

func (e *DeposedError) Unwrap() error { return e.Err }

// Is matches ErrFenced.
func (e *DeposedError) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == CodeFenced
}

// FencedTx runs fn in one transaction of db that begins with
// zkelect.fence(resource, token), the check of fencing.sql installed in that
// database (docs/fencing.md, "PostgreSQL"), and commits it when fn returns
// nil. token is the leader's fencing token (Elector.FencingToken, or
// $ZKELECT_TOKEN under zkelect run); resource names what the election
// guards, one name per election path.
//
// A *DeposedError when PostgreSQL refuses the token (a later term has
// written): the transaction is rolled back and nothing of it is kept; stop
// writing. fn's own error, or a panic in it, rolls the transaction back and
// is returned (re-raised). Any other failure of the database comes back
// wrapped, the transaction rolled back.
//
// The statement uses PostgreSQL's $1 placeholders (lib/pq, pgx's stdlib).
// The refusal is recognised by the driver error's SQLState() method (lib/pq
// and pgx have one), else by the text fencing.sql raises; no driver is
// imported here.
func FencedTx(ctx context.Context, db TxBeginner, resource string, token int64, fn func(*sql.Tx) error) (err error) {
	if token <= 0 {
		return &Error{Code: CodeInvalid, Message: "token must be above 0 (a leader's fencing token)"}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("zkelect: fenced transaction: begin: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = tx.Rollback() // fn panicked: nothing of it is kept
		}
	}()
	deposed := func(e error) error {
		if isDeposed(e) {
			return &DeposedError{Resource: resource, Token: token, Err: e}
		}
		return e
	}
	if _, err := tx.ExecContext(ctx, FenceSQL, resource, token); err != nil {
		done = true
		_ = tx.Rollback()
		if isDeposed(err) {
			return deposed(err)
		}
		return fmt.Errorf("zkelect: fenced transaction: the fence: %w", err)
	}
	if err := fn(tx); err != nil {
		done = true
		_ = tx.Rollback()
		return deposed(err)
	}
	done = true
	if err := tx.Commit(); err != nil {
		return deposed(err)
	}
	return nil
}

// isDeposed tells the guard's refusal among a driver's errors.
func isDeposed(err error) bool {
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		return coded.SQLState() == DeposedSQLState
	}
	// A driver without SQLState(): the guard's own message (fencing.sql).
	return strings.Contains(err.Error(), "zkelect fencing: token ")
}
