package exitcode

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// The exit codes kubeadm documents.
const (
	OK         = 0
	Generic    = 1
	Preflight  = 2
	Validation = 3
)

// Error carries an exit code along with the error that caused it.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ValidationError marks err as invalid user input (exit code 3). A nil err stays nil.
func ValidationError(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: Validation, Err: err}
}

// PreflightError marks err as a failed preflight check (exit code 2).
func PreflightError(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: Preflight, Err: err}
}

// Of returns the process exit code for err: 0 for nil, the code of the
// outermost *Error in its chain, or Generic.
func Of(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Generic
}

// Print writes err the way the command line reports failures.
func Print(w io.Writer, err error) {
	msg := strings.TrimRight(err.Error(), "\n")
	if msg == "" {
		return
	}
	if !strings.HasPrefix(msg, "error") {
		msg = "error: " + msg
	}
	fmt.Fprintln(w, msg)
}
