package store

import (
	"errors"
	"strconv"

	"github.com/idemkit/idem/core"
)

// Method names a Store (or Applier) method: what an Op asks for next, what a
// history records, and what an Error says failed. It is the one list of store
// calls in idem.
type Method uint8

const (
	MethodNone          Method = iota // nothing: an Op that is done
	MethodLoad                        // Store.Load
	MethodInsert                      // Store.Insert
	MethodCompareAndSet               // Store.CompareAndSet
	MethodDelete                      // Store.Delete
	MethodDue                         // Store.Due
	MethodWait                        // Store.Wait
	MethodApply                       // Applier.Apply
	methodCount
)

var methodNames = [methodCount]string{"none", "load", "insert", "compare_and_set", "delete", "due", "wait", "apply"}

func (m Method) String() string {
	if m < methodCount {
		return methodNames[m]
	}
	return "method(" + strconv.Itoa(int(m)) + ")"
}

// Error is a store failure, naming the method that failed. After a failed
// write, the write may or may not have applied (an ambiguous commit).
type Error struct {
	Method Method
	Err    error
}

func (e *Error) Error() string {
	cause := "<nil>" // as fmt's %v prints a nil error
	if e.Err != nil {
		cause = e.Err.Error()
	}
	return "idem/store: " + e.Method.String() + ": " + cause
}
func (e *Error) Unwrap() error { return e.Err }

// errContention is the cause when an Op lost conflictsMax races in a row.
var errContention = errors.New("too many concurrent writes to one scope")

// DriverBug reports whether err is the core refusing what a store handed
// it: a record it could not have produced, a token that is not fresh, or no
// time (the store's clock said zero: Apply and Op always take Now from the
// store). Those are failures of the store (a broken driver), not bad input
// of the caller; Apply and Op report them as an *Error.
func DriverBug(err error) bool {
	return errors.Is(err, core.ErrInvalidRecord) || errors.Is(err, core.ErrTokenNotFresh) || errors.Is(err, core.ErrTimeMissing)
}

// BadInput reports whether err is the core refusing the caller's event (bad
// input): nothing was written, and loading again will not change the answer.
func BadInput(err error) bool { return core.Refused(err) && !DriverBug(err) }
