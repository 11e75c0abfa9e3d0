package store

import (
	"context"
	"errors"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/idemkit/idem/core"
)

// Auditor is the optional interface of a store that keeps an audit trail
// of the records an operator settled by hand (cmd/idemctl resolve): who
// did it, why, what the core decided, and when. The event goes through the
// core as any other, fenced by the token it names; only the trail is the
// store's.
type Auditor interface {
	// ApplyAudited applies ev to a.Scope as Apply does and keeps a with it,
	// atomically: a is kept exactly when the event wrote (the record
	// changed), with At, Version and Decision set from that write. Nothing
	// is kept for an event that wrote nothing (stale, not applicable) or
	// failed.
	ApplyAudited(ctx context.Context, ev core.Event, p *core.Policy, a *Audit, out *Applied) error
	// Audits returns scope's audit trail, oldest first: it outlives the
	// record (a key pruned and reused keeps the trail of its earlier
	// records).
	Audits(ctx context.Context, scope core.Scope) ([]Audit, error)
}

// Audit is one settlement by hand.
type Audit struct {
	Scope core.Scope
	// Who is the operator, as the operator names themself, and Why the
	// reason (a ticket, what the downstream said): 1 to AuditTextBytesMax
	// bytes of printable UTF-8 each (Validate).
	Who, Why string
	// Event is what the operator applied (core.EventResolve), with its
	// Verdict, about the attempt that holds Token.
	Event   core.EventKind
	Verdict core.Verdict
	Token   core.Token
	// Set by the store from the write: its time (the store's clock), the
	// record's version after it, and the core's decision.
	At       time.Time
	Version  uint64
	Decision core.DecisionKind
}

// AuditTextBytesMax bounds Audit.Who and Audit.Why.
const AuditTextBytesMax = 1024

// ErrInvalidAudit is an audit a store refuses before anything is applied.
var ErrInvalidAudit = errors.New("store: invalid audit")

// Validate checks what the operator wrote: Who and Why present, printable
// UTF-8 (no control characters, which would forge lines in a log or a
// table), at most AuditTextBytesMax bytes each.
func (a *Audit) Validate() error {
	for _, f := range [...]struct{ name, v string }{{"who", a.Who}, {"why", a.Why}} {
		switch {
		case f.v == "":
			return auditError(f.name + " is empty")
		case len(f.v) > AuditTextBytesMax:
			return auditError(f.name + " has " + strconv.Itoa(len(f.v)) + " bytes, want at most " + strconv.Itoa(AuditTextBytesMax))
		case !utf8.ValidString(f.v):
			return auditError(f.name + " is not UTF-8")
		}
		for i, r := range f.v {
			if !unicode.IsPrint(r) && r != ' ' {
				return auditError(f.name + ": character " + strconv.QuoteRune(r) + " at byte " + strconv.Itoa(i) + " is not printable")
			}
		}
	}
	return nil
}

func auditError(msg string) error { return &auditErr{msg} }

type auditErr struct{ msg string }

func (e *auditErr) Error() string { return "store: invalid audit: " + e.msg }
func (e *auditErr) Unwrap() error { return ErrInvalidAudit }

// Audited fills a's store-set fields from what applying its event did, and
// reports whether the event wrote (a is then to be kept).
func Audited(a *Audit, out *Applied) bool {
	if out.Transition.Write.Kind == core.WriteNone {
		return false
	}
	a.At, a.Version, a.Decision = out.Now, out.Record.Version, out.Transition.Decision.Kind
	return true
}
