package pgxstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// param is a named parameter of the statements (@name in their SQL): its
// index in an argv.
type param uint8

const (
	pTenant param = iota
	pPrincipal
	pUseCase
	pIdemKey
	pStatus
	pFingerprint
	pToken
	pVersion
	pResponseStatus
	pHeaderNames
	pHeaderValues
	pBody
	pSchemaVersion
	pErrorCode
	pLockedUntilOffset // the five times of a write, in write.times's order: an offset from the statement's time and a literal
	pLockedUntil
	pReconcileAfterOffset
	pReconcileAfter
	pCreatedAtOffset
	pCreatedAt
	pCompletedAtOffset
	pCompletedAt
	pExpiresAtOffset
	pExpiresAt
	pReconcileAttempts
	pChannel // a notification's channel and payload (notifyIfWaited)
	pPayload
	pExpectVersion // a write's precondition
	pExpectToken
	pExpectCreatedAt // on a partitioned table, the partition the precondition's record is in
	pLimit           // a batch's size (Due, Prune)
	pClaimFor
	pInstance
	paramCount
)

var paramNames = [paramCount]string{"tenant", "principal", "use_case", "idem_key", "status", "fingerprint",
	"token", "version", "response_status", "header_names", "header_values", "body", "schema_version",
	"error_code", "locked_until_offset", "locked_until", "reconcile_after_offset", "reconcile_after",
	"created_at_offset", "created_at", "completed_at_offset", "completed_at", "expires_at_offset",
	"expires_at", "reconcile_attempts", "channel", "payload", "expect_version", "expect_token", "expect_created_at", "limit",
	"claim_for", "instance"}

// argv holds one call's arguments by name; a statement takes the ones it
// names, in its order.
type argv [paramCount]any

// statement is one SQL text bound to positional parameters: written with
// named ones, it is rewritten once, at New, by pgx's named-argument
// rewriting (pgx.NamedArgs), so that a call parses nothing and builds
// no map; order says which argument each $n is.
type statement struct {
	sql   string
	order []param
}

// bind rewrites text's named parameters to positional ones. A name that is
// not a param is a programming error, caught at New by every test.
func bind(text string) statement {
	na := make(pgx.NamedArgs, paramCount)
	for p := range paramCount {
		na[paramNames[p]] = p
	}
	sql, args, err := na.RewriteQuery(context.Background(), nil, text, nil)
	if err != nil {
		panic(fmt.Sprintf("pgxstore: a statement's parameters: %v", err))
	}
	st := statement{sql: sql, order: make([]param, len(args))}
	for i, a := range args {
		p, ok := a.(param) // a name not in na comes back as nil
		if !ok {
			panic(fmt.Sprintf("pgxstore: $%d of a statement is not a named parameter: %s", i+1, sql))
		}
		st.order[i] = p
	}
	return st
}

// args are the statement's arguments, in its order, from v.
func (st *statement) args(v *argv) []any {
	a := make([]any, len(st.order))
	for i, p := range st.order {
		a[i] = v[p]
	}
	return a
}

// scope sets a scope's arguments.
func (v *argv) scope(tenant, principal, useCase, key string) *argv {
	v[pTenant], v[pPrincipal], v[pUseCase], v[pIdemKey] = tenant, principal, useCase, key
	return v
}
