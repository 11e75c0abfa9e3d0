package linearizability

import (
	"fmt"
	"strconv"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// ModelOptions tune what the models compare.
type ModelOptions struct {
	// TimeResolution is the precision of the times a store keeps: record
	// times are compared after cutting them to it. Zero or 1ns is exact;
	// a driver that keeps microseconds sets time.Microsecond.
	TimeResolution time.Duration
}

// storeState is the model of one scope of a Store: the stored record (or
// none) and the highest fresh token a load has handed out. It is a value
// (porcupine states are immutable); rec points at the written record, for
// descriptions only, and takes no part in equality.
type storeState struct {
	present bool
	version uint64
	token   core.Token
	digest  uint64
	hwm     core.Token
	rec     *core.Record
}

// storeOp is a StoreOperation prepared for the check: porcupine's input and
// output are both this pointer.
type storeOp struct {
	op       *StoreOperation
	digest   uint64 // of op.Record, scope included
	absentOK bool   // Load: op.Record is the absent record of op.Scope
}

// StoreModel is the sequential specification of a store.Store, one scope per
// partition (so that histories of many scopes check fast):
//
//   - Load (ok) reads exactly the stored record, or the absent record of its
//     scope, and a fresh token greater than every fresh token a load of the
//     scope handed out before (deleted records included);
//   - Insert succeeds if and only if the scope has no record;
//   - CompareAndSet and Delete succeed if and only if the stored record has
//     the expected version and token;
//   - a write with EndedIndeterminate applies if its precondition holds at the
//     instant it is linearized, and porcupine may linearize it at any point
//     after its call (its return is Pending), the end included, where it is
//     as good as never applied;
//   - failed loads and failed writes change nothing.
//
// Its inputs and outputs are prepared by StoreOperations (CheckStoreHistory
// does it all).
func StoreModel() porcupine.Model {
	return porcupine.Model{
		Partition: partitionBy(func(v any) core.Scope { return v.(*storeOp).op.Scope }),
		Init:      func() any { return storeState{} },
		Step:      storeStep,
		Equal: func(a, b any) bool {
			x, y := a.(storeState), b.(storeState)
			return x.present == y.present && x.version == y.version && x.token == y.token &&
				x.digest == y.digest && x.hwm == y.hwm
		},
		Hash: func(s any) uint64 {
			x := s.(storeState)
			return x.digest ^ uint64(x.hwm)*0x9e3779b97f4a7c15 ^ x.version<<32 ^ uint64(x.token)
		},
		DescribeOperation: func(in, _ any) string { return describeStoreOp(in.(*storeOp)) },
		DescribeState:     func(s any) string { return describeStoreState(s.(storeState)) },
	}
}

func storeStep(state, input, _ any) (bool, any) {
	s := state.(storeState)
	o := input.(*storeOp)
	op := o.op
	if op.Kind == store.MethodLoad {
		if op.Ended != EndedOK {
			return true, s // a failed load has no effect that anyone can observe
		}
		if op.FreshToken <= s.hwm {
			return false, s // a token handed out before, or zero
		}
		if s.present {
			if !op.Record.Exists() || o.digest != s.digest {
				return false, s
			}
		} else if !o.absentOK {
			return false, s
		}
		s.hwm = op.FreshToken
		return true, s
	}
	var holds bool
	switch op.Kind {
	case store.MethodInsert:
		holds = !s.present
	default:
		holds = s.present && s.version == op.ExpectVersion && s.token == op.ExpectToken
	}
	switch op.Ended {
	case EndedOK:
		if !holds {
			return false, s
		}
	case EndedConflict:
		return !holds, s
	case EndedIndeterminate:
		if !holds {
			return true, s
		}
	default: // EndedFailed
		return true, s
	}
	if op.Kind == store.MethodDelete {
		return true, storeState{hwm: s.hwm}
	}
	return true, storeState{present: true, version: op.Record.Version, token: op.Record.Token, digest: o.digest, hwm: s.hwm, rec: &op.Record}
}

func describeStoreOp(o *storeOp) string {
	op := o.op
	switch op.Kind {
	case store.MethodLoad:
		if op.Ended != EndedOK {
			return "load → " + op.Ended.String()
		}
		return fmt.Sprintf("load → %s #%04x, fresh t%d", short(&op.Record), o.digest&0xffff, op.FreshToken)
	case store.MethodInsert:
		return fmt.Sprintf("insert(%s #%04x) → %s", short(&op.Record), o.digest&0xffff, endingWord(op.Ended))
	case store.MethodCompareAndSet:
		return fmt.Sprintf("cas(if v%d t%d: %s #%04x) → %s", op.ExpectVersion, op.ExpectToken, short(&op.Record), o.digest&0xffff, endingWord(op.Ended))
	case store.MethodDelete:
		return fmt.Sprintf("delete(if v%d t%d) → %s", op.ExpectVersion, op.ExpectToken, endingWord(op.Ended))
	}
	return op.Kind.String()
}

func endingWord(o Ending) string {
	if o == EndedIndeterminate {
		return "indeterminate (may apply at any later instant, or never)"
	}
	return o.String()
}

func describeStoreState(s storeState) string {
	tokens := "; no token handed out yet"
	if s.hwm != 0 {
		tokens = "; tokens handed out ≤ " + strconv.FormatUint(uint64(s.hwm), 10)
	}
	if !s.present {
		return "absent" + tokens
	}
	desc := fmt.Sprintf("v%d t%d", s.version, s.token)
	if s.rec != nil {
		desc = short(s.rec)
	}
	return fmt.Sprintf("%s #%04x%s", desc, s.digest&0xffff, tokens)
}

// partitionBy splits a history by scope, in order of first appearance.
func partitionBy(scopeOf func(any) core.Scope) func([]porcupine.Operation) [][]porcupine.Operation {
	return func(h []porcupine.Operation) [][]porcupine.Operation {
		index := map[core.Scope]int{}
		var parts [][]porcupine.Operation
		for _, op := range h {
			s := scopeOf(op.Input)
			i, ok := index[s]
			if !ok {
				i = len(parts)
				index[s] = i
				parts = append(parts, nil)
			}
			parts[i] = append(parts[i], op)
		}
		return parts
	}
}
