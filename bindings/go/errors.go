package zkelect

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/libzkelect/libzkelect/bindings/go/internal/capi"
)

// Code is one of libzkelect's error codes (ZKELECT_E*), negative.
type Code int

// The codes of zkelect.h, same numbers (the C enum is append-only).
const (
	// BEGIN gen/vocab.py codes
	CodeInvalid        Code = -1
	CodeNoMemory       Code = -2
	CodeState          Code = -3
	CodeClosed         Code = -4
	CodeTimeout        Code = -5
	CodeConnLoss       Code = -6
	CodeSessionExpired Code = -7
	CodeAuth           Code = -8
	CodeNotSupported   Code = -9
	CodeDeadlock       Code = -10
	CodeZooKeeper      Code = -11
	CodeInternal       Code = -12
	CodeNoLeader       Code = -13
	CodeRange          Code = -14
	CodeNotLeader      Code = -15
	CodeNoCandidate    Code = -16
	CodeTargetLost     Code = -17
	CodeLimitExceeded  Code = -18
	CodeFenced         Code = -19
	// END gen/vocab.py codes
)

// Name is the C name of the code, e.g. "ZKELECT_ESTATE".
func (c Code) Name() string { return capi.Err_name(int(c)) }

// String is the library's description of the code.
func (c Code) String() string { return capi.Strerror(int(c)) }

// Error is a failure reported by libzkelect: its code and message.
// errors.Is(err, ErrState) and the like compare codes only.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "zkelect: " + e.Code.Name()
	}
	return fmt.Sprintf("zkelect: %s: %s", e.Code.Name(), e.Message)
}

// Is matches any *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is.
var (
	// BEGIN gen/vocab.py sentinels
	ErrInvalid        = &Error{Code: CodeInvalid}
	ErrNoMemory       = &Error{Code: CodeNoMemory}
	ErrState          = &Error{Code: CodeState}
	ErrClosed         = &Error{Code: CodeClosed}
	ErrTimeout        = &Error{Code: CodeTimeout}
	ErrConnLoss       = &Error{Code: CodeConnLoss}
	ErrSessionExpired = &Error{Code: CodeSessionExpired}
	ErrAuth           = &Error{Code: CodeAuth}
	ErrNotSupported   = &Error{Code: CodeNotSupported}
	ErrDeadlock       = &Error{Code: CodeDeadlock}
	ErrZooKeeper      = &Error{Code: CodeZooKeeper}
	ErrInternal       = &Error{Code: CodeInternal}
	ErrNoLeader       = &Error{Code: CodeNoLeader}
	ErrRange          = &Error{Code: CodeRange}
	ErrNotLeader      = &Error{Code: CodeNotLeader}
	ErrNoCandidate    = &Error{Code: CodeNoCandidate}
	ErrTargetLost     = &Error{Code: CodeTargetLost}
	ErrLimitExceeded  = &Error{Code: CodeLimitExceeded}
	ErrFenced         = &Error{Code: CodeFenced}
	// END gen/vocab.py sentinels
)

// recoverError turns the SWIG layer's panic ("zkelect:<code>:<message>")
// into *err. Any other panic is not ours and goes on.
func recoverError(err *error) {
	r := recover()
	if r == nil {
		return
	}
	s, ok := r.(string)
	if !ok || !strings.HasPrefix(s, "zkelect:") {
		panic(r)
	}
	rest := s[len("zkelect:"):]
	i := strings.IndexByte(rest, ':')
	if i < 0 {
		panic(r)
	}
	code, convErr := strconv.Atoi(rest[:i])
	if convErr != nil {
		panic(r)
	}
	*err = &Error{Code: Code(code), Message: rest[i+1:]}
}

// call runs one SWIG call, returning its failure as an error.
func call[T any](f func() T) (v T, err error) {
	defer recoverError(&err)
	return f(), nil
}

func call0(f func()) (err error) {
	defer recoverError(&err)
	f()
	return nil
}
