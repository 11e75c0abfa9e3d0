package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// resolveFlags are resolve's command line.
type resolveFlags struct {
	sc       core.Scope
	token    uint64
	verdict  string
	who, why string
	status   int
	headers  headerFlags
	bodyPath string
	policy   core.Policy
}

// headerFlags collects -header "Name: value", in order.
type headerFlags []core.Header

func (h *headerFlags) String() string { return fmt.Sprint(len(*h), " headers") }

func (h *headerFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	if !ok {
		return fmt.Errorf("%q: want Name: value", v)
	}
	*h = append(*h, core.Header{Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)})
	return nil
}

// resolve settles an unknown record by hand, through the core's Resolve
// event: fenced by the token the operator read (show), refused by the core
// for any record that is not unknown (an operator cannot re-open a record
// in progress), and audited (who, why, the store's time) in the store's
// trail, in the write's transaction.
func resolve(fs *flag.FlagSet) func(context.Context, operatorStore, *printer) error {
	f := &resolveFlags{policy: core.PolicyDefault()}
	scopeFlags(fs, &f.sc)
	fs.Uint64Var(&f.token, "token", 0, "the token of the unknown attempt, as show prints it: the record is settled only if it still holds that attempt")
	fs.StringVar(&f.verdict, "verdict", "", "executed (the side effect happened: give the response with -status, -header, -body-file) or not_executed (a retry executes again)")
	fs.StringVar(&f.who, "who", "", "who settles it (kept in the audit trail)")
	fs.StringVar(&f.why, "why", "", "why: a ticket, what the downstream said (kept in the audit trail)")
	fs.IntVar(&f.status, "status", 0, "for executed: the response's HTTP status, replayed to retries")
	fs.Var(&f.headers, "header", `for executed: a response header "Name: value" (repeat it)`)
	fs.StringVar(&f.bodyPath, "body-file", "", "for executed: a file holding the response body (- for stdin)")
	fs.DurationVar(&f.policy.TTL, "ttl", f.policy.TTL, "how long the settled record binds its key (the service's Policy.TTL)")
	fs.IntVar(&f.policy.ResponseBytesMax, "response-bytes-max", f.policy.ResponseBytesMax, "the service's Policy.ResponseBytesMax")
	return func(ctx context.Context, s operatorStore, p *printer) error {
		au, ok := s.(store.Auditor)
		if !ok {
			return fmt.Errorf("%T keeps no audit trail: resolve would settle a record nobody could account for", s)
		}
		ev, a, err := f.event(os.Stdin)
		if err != nil {
			return err
		}
		var out store.Applied
		if err := au.ApplyAudited(ctx, ev, &f.policy, &a, &out); err != nil {
			if errors.Is(err, core.ErrResponseInvalid) || errors.Is(err, core.ErrResponseTooLarge) || errors.Is(err, core.ErrInvalidPolicy) {
				return usageError(err.Error()) // the core refused what the flags say
			}
			return err
		}
		if out.Transition.Write.Kind == core.WriteNone {
			return fmt.Errorf("nothing settled: the core decided %v for a record %v with token %d (resolve settles only an unknown record, by the token of its attempt)",
				out.Transition.Decision.Kind, out.Record.Status, out.Record.Token)
		}
		return p.byHand("record", &out.Record, &a)
	}
}

// event is the Resolve event and the audit the flags describe.
func (f *resolveFlags) event(stdin io.Reader) (core.Event, store.Audit, error) {
	if err := f.sc.Validate(core.KeyBytesMax); err != nil {
		return core.Event{}, store.Audit{}, usageError(err.Error())
	}
	if f.token == 0 {
		return core.Event{}, store.Audit{}, usageError("-token: give the token of the attempt you examined (show prints it)")
	}
	ev := core.Event{Kind: core.EventResolve, Token: core.Token(f.token)}
	switch f.verdict {
	case "executed":
		ev.Verdict = core.VerdictExecuted
		r, err := f.response(stdin)
		if err != nil {
			return core.Event{}, store.Audit{}, err
		}
		ev.Response = r
	case "not_executed":
		ev.Verdict = core.VerdictNotExecuted
		if f.status != 0 || len(f.headers) > 0 || f.bodyPath != "" {
			return core.Event{}, store.Audit{}, usageError("-status, -header and -body-file are for -verdict executed")
		}
	default:
		return core.Event{}, store.Audit{}, usageError(fmt.Sprintf("-verdict %q: want executed or not_executed", f.verdict))
	}
	a := store.Audit{Scope: f.sc, Who: f.who, Why: f.why, Event: ev.Kind, Verdict: ev.Verdict, Token: ev.Token}
	if err := a.Validate(); err != nil {
		return core.Event{}, store.Audit{}, usageError(err.Error())
	}
	return ev, a, nil
}

// response is the executed verdict's response; the core checks it when it
// steps the event.
func (f *resolveFlags) response(stdin io.Reader) (core.Response, error) {
	if f.status == 0 {
		return core.Response{}, usageError("-verdict executed needs the response's -status")
	}
	r := core.Response{StatusCode: f.status, Headers: f.headers}
	var err error
	switch f.bodyPath {
	case "":
	case "-":
		r.Body, err = io.ReadAll(io.LimitReader(stdin, int64(f.policy.ResponseBytesMax)+1))
	default:
		r.Body, err = os.ReadFile(f.bodyPath)
	}
	if err != nil {
		return core.Response{}, usageError("-body-file: " + err.Error())
	}
	return r, nil
}
