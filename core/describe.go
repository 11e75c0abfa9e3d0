package core

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// bodyQuoteBytesMax bounds how much of a body Describe quotes: logs want to
// recognise a response, not carry it.
const bodyQuoteBytesMax = 64

// Describe is one stable line for logs and golden files. Times are UTC,
// RFC 3339; zero times and empty fields are left out.
func (r Record) Describe() string {
	var b strings.Builder
	b.WriteString(r.Status.String())
	b.WriteString(" scope=")
	b.WriteString(r.Scope.String())
	if !r.Exists() {
		return b.String()
	}
	b.WriteString(" fp=")
	b.WriteString(r.Fingerprint.Short())
	b.WriteString(" token=")
	b.WriteString(strconv.FormatUint(uint64(r.Token), 10))
	b.WriteString(" v=")
	b.WriteString(strconv.FormatUint(r.Version, 10))
	writeTime(&b, "locked_until", r.LockedUntil)
	if r.LastErrorCode != "" {
		b.WriteString(" error=")
		b.WriteString(strconv.Quote(string(r.LastErrorCode)))
	}
	writeTime(&b, "reconcile_after", r.ReconcileAfter)
	if r.ReconcileAttempts != 0 {
		b.WriteString(" reconcile_attempts=")
		b.WriteString(strconv.FormatUint(uint64(r.ReconcileAttempts), 10))
	}
	writeTime(&b, "created", r.CreatedAt)
	writeTime(&b, "completed", r.CompletedAt)
	writeTime(&b, "expires", r.ExpiresAt)
	if r.Status == StatusCompleted || (r.Status == StatusExpired && r.Response.StatusCode != 0) {
		b.WriteString(" response=")
		b.WriteString(r.Response.Describe())
	}
	return b.String()
}

// Describe is "status schema=N headers=[Name: value, ...] body=<quoted prefix> (N bytes)".
func (r Response) Describe() string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(r.StatusCode))
	if r.SchemaVersion != 0 {
		b.WriteString(" schema=")
		b.WriteString(strconv.FormatUint(uint64(r.SchemaVersion), 10))
	}
	if len(r.Headers) > 0 {
		b.WriteString(" headers=[")
		for i, h := range r.Headers {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(h.Name)
			b.WriteString(": ")
			b.WriteString(strconv.Quote(h.Value))
		}
		b.WriteString("]")
	}
	body := r.Body
	suffix := ""
	if len(body) > bodyQuoteBytesMax {
		body = body[:bodyQuoteBytesMax]
		for len(body) > 0 && !utf8.Valid(body) {
			body = body[:len(body)-1]
		}
		suffix = "..."
	}
	b.WriteString(" body=")
	b.WriteString(strconv.Quote(string(body)))
	b.WriteString(suffix)
	b.WriteString(" (")
	b.WriteString(strconv.Itoa(len(r.Body)))
	b.WriteString(" bytes)")
	return b.String()
}

// Describe is one stable line: the kind and the fields that count for it.
func (d Decision) Describe() string {
	var b strings.Builder
	b.WriteString(d.Kind.String())
	if d.Token != 0 {
		b.WriteString(" token=")
		b.WriteString(strconv.FormatUint(uint64(d.Token), 10))
	}
	if d.RetryAfter != 0 {
		b.WriteString(" retry_after=")
		b.WriteString(d.RetryAfter.String())
	}
	return b.String()
}

// Describe is the write kind and, for a conditional write, its precondition.
func (w Write) Describe() string {
	switch w.Kind {
	case WriteUpdate, WriteDelete:
		return w.Kind.String() + " expect_version=" + strconv.FormatUint(w.ExpectVersion, 10) +
			" expect_token=" + strconv.FormatUint(uint64(w.ExpectToken), 10)
	}
	return w.Kind.String()
}

// Describe is the decision and the write, one per line.
func (r Transition) Describe() string {
	return "decision: " + r.Decision.Describe() + "\nwrite: " + r.Write.Describe()
}

func writeTime(b *strings.Builder, name string, t time.Time) {
	if t.IsZero() {
		return
	}
	b.WriteByte(' ')
	b.WriteString(name)
	b.WriteByte('=')
	b.WriteString(t.UTC().Format(time.RFC3339Nano))
}
