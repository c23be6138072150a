package session

import (
	"errors"
	"fmt"

	"github.com/edgeconform/edgeconform/reference/fetch"
	"github.com/edgeconform/edgeconform/reference/outcome"
)

// ErrValidatorChanged fails a chunk fill whose response is of another
// version of the object than its manifest (RNG-5).
var ErrValidatorChanged = errors.New("the object changed between chunk fills (validator differs)")

// FillError is a fill that failed before its head: the status and RFC
// 9209 reason the client gets (ATT-8, ATT-9, COL-7).
type FillError struct {
	Status int
	Reason outcome.Reason
	Err    error
}

func (e *FillError) Error() string {
	return fmt.Sprintf("%d %s: %v", e.Status, e.Reason, e.Err)
}

func (e *FillError) Unwrap() error { return e.Err }

// fillFailed is the error of a fill whose fetch res gave no usable
// response; what says what was being filled.
func fillFailed(res *fetch.Result, what string) error {
	return &FillError{Status: res.Status, Reason: res.Reason, Err: fmt.Errorf("filling %s: no origin response", what)}
}
