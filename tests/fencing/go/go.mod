// The Go test of zkelect.FencedTx against a real PostgreSQL (a module of
// its own, so that the library's module needs no database driver).
// tests/fencing/test_helpers.py runs it; lib/pq is Debian's
// golang-github-lib-pq-dev (./dev installs it), so no network is needed.
module github.com/libzkelect/libzkelect/tests/fencing/go

go 1.21

require (
	github.com/lib/pq v1.10.7
	github.com/libzkelect/libzkelect/bindings/go v0.0.0
)

replace github.com/libzkelect/libzkelect/bindings/go => ../../../bindings/go

replace github.com/lib/pq => /usr/share/gocode/src/github.com/lib/pq
