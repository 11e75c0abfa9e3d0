package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// printer writes what a command found: a table, or one JSON document.
type printer struct {
	out  io.Writer
	json bool
}

// recordView is a record as idemctl prints it. The response's headers and
// body only with show -body.
type recordView struct {
	Tenant            string      `json:"tenant"`
	Principal         string      `json:"principal"`
	UseCase           string      `json:"use_case"`
	Key               string      `json:"key"`
	Status            string      `json:"status"`
	Token             uint64      `json:"token"`
	Version           uint64      `json:"version"`
	Fingerprint       string      `json:"fingerprint"`
	LastErrorCode     string      `json:"last_error_code,omitempty"`
	ResponseStatus    int         `json:"response_status,omitempty"`
	LockedUntil       *time.Time  `json:"locked_until,omitempty"`
	ReconcileAfter    *time.Time  `json:"reconcile_after,omitempty"`
	ReconcileAttempts uint32      `json:"reconcile_attempts"`
	CreatedAt         time.Time   `json:"created_at"`
	CompletedAt       *time.Time  `json:"completed_at,omitempty"`
	ExpiresAt         *time.Time  `json:"expires_at,omitempty"`
	Headers           [][2]string `json:"response_headers,omitempty"`
	Body              []byte      `json:"response_body,omitempty"` // base64 in JSON
}

func viewOf(r *core.Record, body bool) recordView {
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		t = t.UTC()
		return &t
	}
	v := recordView{Tenant: r.Scope.Tenant, Principal: r.Scope.Principal, UseCase: r.Scope.UseCase, Key: r.Scope.Key,
		Status: r.Status.String(), Token: uint64(r.Token), Version: r.Version, Fingerprint: hex.EncodeToString(r.Fingerprint[:]),
		LastErrorCode: string(r.LastErrorCode), ResponseStatus: r.Response.StatusCode, LockedUntil: opt(r.LockedUntil),
		ReconcileAfter: opt(r.ReconcileAfter), ReconcileAttempts: r.ReconcileAttempts, CreatedAt: r.CreatedAt.UTC(),
		CompletedAt: opt(r.CompletedAt), ExpiresAt: opt(r.ExpiresAt)}
	if body {
		for _, h := range r.Response.Headers {
			v.Headers = append(v.Headers, [2]string{h.Name, h.Value})
		}
		v.Body = r.Response.Body
	}
	return v
}

func (p *printer) list(recs []core.Record, next string) error {
	views := make([]recordView, len(recs))
	for i := range recs {
		views[i] = viewOf(&recs[i], false)
	}
	if p.json {
		return p.encode(struct {
			Records []recordView `json:"records"`
			Next    string       `json:"next,omitempty"`
		}{views, next})
	}
	tw := tabwriter.NewWriter(p.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CREATED\tSTATUS\tTOKEN\tATTEMPTS\tERROR\tTENANT\tPRINCIPAL\tUSE CASE\tKEY")
	for _, v := range views {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", v.CreatedAt.Format(time.RFC3339), v.Status, v.Token,
			v.ReconcileAttempts, dash(v.LastErrorCode), dash(v.Tenant), v.Principal, v.UseCase, v.Key)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next != "" {
		_, err := fmt.Fprintf(p.out, "next page: -after %s\n", next)
		return err
	}
	return nil
}

// show prints a record, and its audit trail when the store keeps one.
func (p *printer) show(r *core.Record, body bool, trail []store.Audit) error {
	v := viewOf(r, body)
	if p.json {
		return p.encode(struct {
			recordView
			Audits []auditView `json:"audits,omitempty"`
		}{v, auditViews(trail)})
	}
	fields, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(fields, &m); err != nil {
		return err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tw := tabwriter.NewWriter(p.out, 0, 4, 2, ' ', 0)
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%v\n", k, m[k])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return p.trail(auditViews(trail))
}

func (p *printer) stats(st *store.Stats) error {
	byStatus := map[string]int64{}
	for s, n := range st.ByStatus {
		byStatus[s.String()] = n
	}
	type queue struct {
		Due       int64      `json:"due"`
		OldestDue *time.Time `json:"oldest_due,omitempty"`
		Behind    string     `json:"behind,omitempty"`
	}
	queueOf := func(q store.QueueStats) queue {
		if q.Due == 0 {
			return queue{}
		}
		t := q.OldestDue.UTC()
		return queue{Due: q.Due, OldestDue: &t, Behind: st.Now.Sub(q.OldestDue).Round(time.Millisecond).String()}
	}
	view := struct {
		Now       time.Time        `json:"now"`
		ByStatus  map[string]int64 `json:"by_status"`
		Abandoned int64            `json:"abandoned"`
		Sweep     queue            `json:"sweep"`
		Reconcile queue            `json:"reconcile"`
	}{st.Now.UTC(), byStatus, st.Abandoned, queueOf(st.Sweep), queueOf(st.Reconcile)}
	if p.json {
		return p.encode(view)
	}
	tw := tabwriter.NewWriter(p.out, 0, 4, 2, ' ', 0)
	for s := core.StatusInProgress; s.Valid(); s++ {
		fmt.Fprintf(tw, "%s\t%d\n", s, st.ByStatus[s])
	}
	fmt.Fprintf(tw, "abandoned (for an operator)\t%d\n", st.Abandoned)
	for _, q := range []struct {
		name string
		q    queue
	}{{"sweep", view.Sweep}, {"reconcile", view.Reconcile}} {
		fmt.Fprintf(tw, "%s queue: due now\t%d\n", q.name, q.q.Due)
		if q.q.Due > 0 {
			fmt.Fprintf(tw, "%s queue: oldest due\t%s (%s behind)\n", q.name, q.q.OldestDue.Format(time.RFC3339Nano), q.q.Behind)
		}
	}
	return tw.Flush()
}

func (p *printer) encode(v any) error {
	enc := json.NewEncoder(p.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// A cursor is the last record's place (store.ListCursor) as base64url
// JSON: opaque to the operator, read back exactly.
func encodeCursor(c *store.ListCursor) string {
	b, _ := json.Marshal(c) // a time and four strings: never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (*store.ListCursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("not a cursor idemctl printed")
	}
	var c store.ListCursor
	if err := json.Unmarshal(b, &c); err != nil || c.CreatedAt.IsZero() {
		return nil, errors.New("not a cursor idemctl printed")
	}
	return &c, nil
}

// auditView is a settlement by hand as idemctl prints it.
type auditView struct {
	At       time.Time `json:"at"`
	Who      string    `json:"who"`
	Why      string    `json:"why"`
	Event    string    `json:"event"`
	Verdict  string    `json:"verdict,omitempty"`
	Decision string    `json:"decision"`
	Token    uint64    `json:"token"`
	Version  uint64    `json:"version"`
}

func auditViews(as []store.Audit) []auditView {
	views := make([]auditView, len(as))
	for i, a := range as {
		views[i] = auditView{At: a.At.UTC(), Who: a.Who, Why: a.Why, Event: a.Event.String(),
			Decision: a.Decision.String(), Token: uint64(a.Token), Version: a.Version}
		if a.Verdict != core.VerdictInvalid { // an evict has none
			views[i].Verdict = a.Verdict.String()
		}
	}
	return views
}

// trail prints the audit trail under a record (table only: JSON has it in
// the record's document).
func (p *printer) trail(as []auditView) error {
	if len(as) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(p.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nBY HAND\tWHO\tEVENT\tVERDICT\tDECISION\tTOKEN\tVERSION\tWHY")
	for _, a := range as {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", a.At.Format(time.RFC3339Nano), a.Who, a.Event, dash(a.Verdict), a.Decision, a.Token, a.Version, a.Why)
	}
	return tw.Flush()
}

// byHand prints what an operator's event did: the record (as a resolve
// left it, or as it was before an evict: what names it), and the audit
// kept for it.
func (p *printer) byHand(what string, r *core.Record, a *store.Audit) error {
	views := auditViews([]store.Audit{*a})
	if p.json {
		return p.encode(map[string]any{what: viewOf(r, false), "audit": views[0]})
	}
	if _, err := fmt.Fprintln(p.out, what+":"); err != nil {
		return err
	}
	if err := p.show(r, false, nil); err != nil {
		return err
	}
	return p.trail(views)
}
