package flow

import "github.com/idemkit/idem/core"

// The core's domain types, under the names the protocol's signatures use
// (package idem names them the same).
type (
	Scope       = core.Scope
	Response    = core.Response
	Fingerprint = core.Fingerprint
	Token       = core.Token
	Policy      = core.Policy
	ErrorCode   = core.ErrorCode
)
