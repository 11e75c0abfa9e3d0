package idem

import "github.com/idemkit/idem/core"

// The domain types live in core, which must not import this package; they
// are named here too so that an application needs only import idem.
type (
	Scope       = core.Scope
	Record      = core.Record
	Response    = core.Response
	Header      = core.Header
	Fingerprint = core.Fingerprint
	Token       = core.Token
	Policy      = core.Policy
	ErrorCode   = core.ErrorCode
)

// PolicyDefault returns the defaults of SPEC §5.
func PolicyDefault() Policy { return core.PolicyDefault() }
