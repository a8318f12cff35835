package zkelect

import (
	"math"
	"time"

	"github.com/libzkelect/libzkelect/bindings/go/internal/capi"
)

// FencedOp is one operation of a fenced write: FencedSet, FencedCreate or
// FencedDelete make one; Elector.FencedCommit commits a batch of them.
type FencedOp struct {
	kind      int // 0 set, 1 create, 2 delete
	path      string
	data      []byte
	version   int32
	ephemeral bool
}

// FencedSet sets path's data, only at data version (-1: any version).
func FencedSet(path string, data []byte, version int32) FencedOp {
	return FencedOp{kind: 0, path: path, data: data, version: version}
}

// FencedCreate creates path holding data: persistent, or ephemeral (it
// goes with the client's session). Its parent must exist, or be created
// by an earlier operation of the batch.
func FencedCreate(path string, data []byte, ephemeral bool) FencedOp {
	return FencedOp{kind: 1, path: path, data: data, ephemeral: ephemeral}
}

// FencedDelete deletes path, only at data version (-1: any version).
func FencedDelete(path string, version int32) FencedOp {
	return FencedOp{kind: 2, path: path, version: version}
}

// FencedCommit commits ops in one ZooKeeper multi behind a check of this
// candidacy's own node: all of them, and only while this candidacy leads
// its term (docs/fencing.md, "Fenced ZooKeeper writes"). It waits at most
// timeout (> 0) for ZooKeeper's answer.
//
// ErrNotLeader: not leading now, nothing was sent. ErrFenced: the term is
// over (the node is gone or changed), nothing was committed. ErrZooKeeper
// or ErrAuth: ZooKeeper refused one of ops, whose index failed is (-1
// otherwise); nothing was committed. ErrConnLoss, ErrSessionExpired and
// ErrTimedOut: the outcome is unknown; if the write committed, it did
// whole and while the node stood: read what it wrote to find out, do not
// just send it again.
func (e *Elector) FencedCommit(timeout time.Duration, ops ...FencedOp) (failed int, err error) {
	failed = -1
	err = e.use(func(h capi.NativeElection) error {
		return commitBatch(ops, &failed, func(batch capi.NativeFencedOps) int {
			return capi.Fenced_commit(h, batch, fencedMillis(timeout))
		})
	})
	return failed, err
}

// FencedCommit commits ops in one ZooKeeper multi only while node, the
// leader's node (its full path: the election path, "/", the ELECTED
// event's node), stands and is the node of the term whose fencing token is
// token: the fenced write of a process that does not hold the candidacy,
// such as a command of zkelect run ($ZKELECT_NODE, $ZKELECT_TOKEN;
// docs/fencing.md). Give it only what an ELECTED said: it checks that the
// node is that term's, not that it ever led. It waits at most timeout
// (> 0) for ZooKeeper's answer.
//
// ErrFenced: the node is gone or is another term's, nothing was committed.
// The other errors and failed are Elector.FencedCommit's; never
// ErrNotLeader.
func (c *Client) FencedCommit(node string, token int64, timeout time.Duration, ops ...FencedOp) (failed int, err error) {
	failed = -1
	err = c.use(func(h capi.NativeClient) error {
		return commitBatch(ops, &failed, func(batch capi.NativeFencedOps) int {
			return capi.Client_fenced_commit(h, node, token, batch, fencedMillis(timeout))
		})
	})
	return failed, err
}

// fencedMillis is timeout in whole milliseconds, rounded up, capped at the
// C call's int.
func fencedMillis(timeout time.Duration) int {
	ms := int64((timeout + time.Millisecond - 1) / time.Millisecond)
	if ms > math.MaxInt32 {
		ms = math.MaxInt32
	}
	return int(ms)
}

// commitBatch builds ops into a batch, commits it with commit and sets
// *failed to the index of the operation ZooKeeper refused (-1: none).
func commitBatch(ops []FencedOp, failed *int, commit func(capi.NativeFencedOps) int) error {
	batch, err := call(capi.Fenced_ops_new)
	if err != nil {
		return err
	}
	defer capi.Fenced_ops_destroy(batch)
	for _, op := range ops {
		var rc func() int
		switch op.kind {
		case 0:
			rc = func() int { return capi.Fenced_ops_set(batch, op.path, string(op.data), int(op.version)) }
		case 1:
			flags := 0
			if op.ephemeral {
				flags = capi.FENCED_EPHEMERAL
			}
			rc = func() int { return capi.Fenced_ops_create(batch, op.path, string(op.data), flags) }
		default:
			rc = func() int { return capi.Fenced_ops_delete(batch, op.path, int(op.version)) }
		}
		if _, err := call(rc); err != nil {
			return err
		}
	}
	_, err = call(func() int { return commit(batch) })
	*failed = capi.Fenced_ops_failed_index(batch)
	return err
}
