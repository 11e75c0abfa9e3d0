package redisstore

import (
	"context"
	_ "embed"
)

//go:embed scripts/claim.lua
var claimSource string

// claim claims items (the merged list of a cluster's Due) on their
// primaries, at once, and returns those it could claim, most overdue
// first: one another instance claimed since it was listed is left out.
func (s *Store) claim(ctx context.Context, groups []dueGroup, items []dueItem, sweep bool) ([]dueItem, error) {
	byGroup := make([][]dueItem, len(groups))
	for _, it := range items {
		byGroup[it.group] = append(byGroup[it.group], it)
	}
	claimed, err := eachGroup(groups, func(g int) ([]dueItem, error) {
		if len(byGroup[g]) == 0 {
			return nil, nil
		}
		got, err := s.claimOn(ctx, groups[g].node, byGroup[g], sweep)
		if err == nil || s.cluster == nil || !isRedirect(err) {
			return got, err
		}
		s.cluster.ReloadState(ctx)
		got = got[:0]
		for _, it := range byGroup[g] { // one by one, through the cluster client
			more, err := s.claimOn(ctx, s.client, []dueItem{it}, sweep)
			if err != nil {
				return nil, err
			}
			got = append(got, more...)
		}
		return got, nil
	})
	if err != nil {
		return nil, err
	}
	return mergeDue(claimed, len(claimed)), nil
}

// claimOn runs the claim script over items on t.
func (s *Store) claimOn(ctx context.Context, t target, items []dueItem, sweep bool) ([]dueItem, error) {
	keys := make([]string, 0, len(items))
	args := make([]any, 0, 2+2*len(items))
	args = append(args, s.instance, s.opt.DueClaim.Microseconds())
	for _, it := range items {
		keys = append(keys, s.l.claims(it.bucket))
		args = append(args, it.member, s.l.record(it.bucket, it.member))
	}
	v, err := s.evalDue(ctx, t, "due: claim", s.scripts.claim, keys, args)
	if err != nil {
		return nil, err
	}
	return dueItems(v, sweep, within(len(items), func(i int) (int, int) { return items[i].group, items[i].bucket }))
}
