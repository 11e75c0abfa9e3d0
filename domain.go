package idem

import "github.com/idemkit/idem/core"

// The domain types live in core, which must not import this package; they
// are named here too so that an application needs only import idem (as
// wtf keeps its domain types at the root).
type (
	Scope       = core.Scope
	Record      = core.Record
	Response    = core.Response
	Header      = core.Header
	Fingerprint = core.Fingerprint
	Token       = core.Token
	Policy      = core.Policy
	ErrorCode   = core.ErrorCode
	// Verdict is a Finding's: what the reconciler's Check found.
	Verdict = core.Verdict
	// InFlightAnswer, ExpiryMode and FailMode are a Policy's choices.
	InFlightAnswer = core.InFlightAnswer
	ExpiryMode     = core.ExpiryMode
	FailMode       = core.FailMode
)

// A Finding's verdicts.
const (
	VerdictExecuted     = core.VerdictExecuted
	VerdictNotExecuted  = core.VerdictNotExecuted
	VerdictStillUnknown = core.VerdictStillUnknown
)

// A Policy's choices.
const (
	InFlightConflict = core.InFlightConflict
	InFlightAccepted = core.InFlightAccepted
	ExpirySoft       = core.ExpirySoft
	ExpiryHard       = core.ExpiryHard
	FailKeep         = core.FailKeep
	FailEvict        = core.FailEvict
)

// PolicyDefault returns the defaults of SPEC §5.
func PolicyDefault() Policy { return core.PolicyDefault() }
