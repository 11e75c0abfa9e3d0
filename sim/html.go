package sim

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"slices"
)

// WriteHTML writes a self-contained page that draws the timeline of one
// scope of r across clients, servers, store and gateway: the scope of the
// first violation when scope < 0, else the busiest scope.
func WriteHTML(out io.Writer, r *Report, scope int32) error {
	if scope < 0 {
		scope = r.ViolatingScope()
	}
	if scope < 0 {
		scope = busiestScope(r)
	}
	page := htmlPage{Seed: r.Config.Seed, Command: r.Config.Command()}
	if scope >= 0 && int(scope) < len(r.Scopes) {
		page.Scope = r.Scopes[scope].String()
	}
	for _, v := range r.Violations {
		page.Violations = append(page.Violations, fmt.Sprintf("invariant %d (%s) at %s: %s", v.Invariant, v.Name, fmtTime(v.At), v.Detail))
	}
	evs, t0, t1 := scopeEvents(r, scope)
	page.draw(evs, t0, t1)
	return htmlTemplate.Execute(out, page)
}

// busiestScope is the scope with the most events (-1 for none).
func busiestScope(r *Report) int32 {
	scope := int32(-1)
	count := map[int32]int{}
	for i := range r.Events {
		if s := r.Events[i].Scope; s >= 0 {
			count[s]++
			if count[s] > count[scope] || scope < 0 {
				scope = s
			}
		}
	}
	return scope
}

// scopeEvents are the scope's events, and within their span [t0, t1] the
// end of the fault phase and the restarts of the servers that took part, in
// time order.
func scopeEvents(r *Report, scope int32) (evs []*TraceEvent, t0, t1 int64) {
	servers := map[int32]bool{}
	for i := range r.Events {
		if e := &r.Events[i]; e.Scope == scope {
			if len(evs) == 0 {
				t0 = e.At
			}
			t1 = e.At
			evs = append(evs, e)
			if e.Actor == ActorServer {
				servers[e.ActorID] = true
			}
		}
	}
	for i := range r.Events {
		e := &r.Events[i]
		inSpan := e.Scope < 0 && e.At >= t0 && e.At <= t1
		if inSpan && (e.What == WhatHeal || e.What == WhatRestart && servers[e.ActorID]) {
			evs = append(evs, e)
		}
	}
	slices.SortStableFunc(evs, func(a, b *TraceEvent) int { return cmp.Compare(a.At, b.At) })
	return evs, t0, t1
}

// draw lays evs out on the page: one lane per actor in a fixed order
// (clients, servers, store, gateway, workers), time across.
func (page *htmlPage) draw(evs []*TraceEvent, t0, t1 int64) {
	laneOf := map[string]int{}
	var lanes []string
	sorted := slices.Clone(evs)
	slices.SortStableFunc(sorted, func(a, b *TraceEvent) int {
		if a.Actor != b.Actor {
			return int(a.Actor) - int(b.Actor)
		}
		return int(a.ActorID - b.ActorID)
	})
	for _, e := range sorted {
		if _, ok := laneOf[e.actor()]; !ok {
			laneOf[e.actor()] = len(lanes)
			lanes = append(lanes, e.actor())
		}
	}
	const left, width, laneH = 130, 1100, 34
	span := max(t1-t0, 1)
	x := func(t int64) float64 { return left + float64(t-t0)/float64(span)*width }
	for i, l := range lanes {
		page.Lanes = append(page.Lanes, htmlLane{Name: l, Y: 30 + i*laneH})
	}
	for _, e := range evs {
		y := 30 + laneOf[e.actor()]*laneH
		page.Marks = append(page.Marks, htmlMark{X: x(e.At), Y: y, Color: colorOf(e.What), Title: e.Describe()})
		page.Rows = append(page.Rows, htmlRow{At: fmtTime(e.At), Actor: e.actor(), Text: e.Text(), Color: colorOf(e.What)})
	}
	for i := 0; i <= 5; i++ {
		t := t0 + span*int64(i)/5
		page.Ticks = append(page.Ticks, htmlTick{X: x(t), Label: fmtTime(t)})
	}
	page.Height = 40 + len(lanes)*laneH + 20
	page.Width = left + width + 30
	page.TimeFrom, page.TimeTo = fmtTime(t0), fmtTime(t1)
}

type htmlPage struct {
	Seed             uint64
	Command, Scope   string
	Violations       []string
	Lanes            []htmlLane
	Marks            []htmlMark
	Ticks            []htmlTick
	Rows             []htmlRow
	Width, Height    int
	TimeFrom, TimeTo string
}

type htmlLane struct {
	Name string
	Y    int
}

type htmlMark struct {
	X            float64
	Y            int
	Color, Title string
}

type htmlRow struct{ At, Actor, Text, Color string }

type htmlTick struct {
	X     float64
	Label string
}

func colorOf(w What) string {
	switch w {
	case WhatCharge:
		return "#d62728"
	case WhatDecline, WhatDeadline:
		return "#ff7f0e"
	case WhatCrash, WhatPause, WhatLost, WhatStoreError, WhatFaultAfter, WhatTimeout, WhatRefused:
		return "#7f7f7f"
	case WhatWrite:
		return "#2ca02c"
	case WhatDone, WhatReply, WhatAnswer:
		return "#1f77b4"
	case WhatHeal:
		return "#17becf"
	}
	return "#9467bd"
}

var htmlTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>simrun seed {{.Seed}}: {{.Scope}}</title>
<style>
body { font: 13px/1.4 system-ui, sans-serif; margin: 20px; color: #222; }
h1 { font-size: 18px; } code { background: #f3f3f3; padding: 1px 4px; }
.violation { color: #b00; font-weight: bold; }
table { border-collapse: collapse; margin-top: 16px; } td { padding: 2px 10px; border-bottom: 1px solid #eee; font-family: monospace; }
svg text { font: 12px monospace; }
</style></head><body>
<h1>seed {{.Seed}} &middot; scope {{.Scope}}</h1>
<p>reproduce: <code>{{.Command}}</code></p>
{{range .Violations}}<p class="violation">{{.}}</p>{{else}}<p>no violation in this run</p>{{end}}
<p>time {{.TimeFrom}} to {{.TimeTo}} (virtual); hover a mark for its event; red: a charge, green: a store write, grey: a fault.</p>
<svg width="{{.Width}}" height="{{.Height}}" xmlns="http://www.w3.org/2000/svg">
{{range .Lanes}}<text x="4" y="{{.Y}}" dy="4">{{.Name}}</text><line x1="130" x2="1230" y1="{{.Y}}" y2="{{.Y}}" stroke="#ddd"/>
{{end}}{{range .Ticks}}<line x1="{{printf "%.1f" .X}}" x2="{{printf "%.1f" .X}}" y1="14" y2="{{$.Height}}" stroke="#f0f0f0"/><text x="{{printf "%.1f" .X}}" y="{{$.Height}}" dy="-4" text-anchor="middle" fill="#888">{{.Label}}</text>
{{end}}{{range .Marks}}<circle cx="{{printf "%.1f" .X}}" cy="{{.Y}}" r="5" fill="{{.Color}}"><title>{{.Title}}</title></circle>
{{end}}</svg>
<table>{{range .Rows}}<tr><td>{{.At}}</td><td>{{.Actor}}</td><td style="color:{{.Color}}">{{.Text}}</td></tr>
{{end}}</table>
</body></html>
`))
