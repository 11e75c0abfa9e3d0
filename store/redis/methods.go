package redisstore

import (
	"context"
	"fmt"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// errNilRecord refuses a write of no record: the same call would be
// refused again.
var errNilRecord = fmt.Errorf("redisstore: a nil record: %w", store.ErrRejected)

// errNilPolicy refuses an event without a policy, as the caller's bad input.
var errNilPolicy = fmt.Errorf("redisstore: a nil policy: %w", core.ErrInvalidPolicy)

// Load implements store.Store: one script reads the record, the server's
// clock (TIME) and a fresh token from the bucket's counter.
func (s *Store) Load(ctx context.Context, scope core.Scope) (store.Snapshot, error) {
	o := s.scoped(scope)
	r, err := s.write(ctx, modeLoad, o, modeLoad, 0, 0, &encoded{})
	if err != nil {
		return store.Snapshot{}, err
	}
	if r.counter == 0 {
		return store.Snapshot{}, fmt.Errorf("redisstore: load: the script took no fresh token: %w", core.ErrInvalidRecord)
	}
	return o.snapshot(&r)
}

// Insert implements store.Store: store.ErrConflict when the scope has a
// record.
func (s *Store) Insert(ctx context.Context, rec *core.Record) error {
	if rec == nil {
		return errNilRecord
	}
	_, err := s.writeRecord(ctx, s.scoped(rec.Scope), modeInsert, rec, 0, 0)
	return err
}

// CompareAndSet implements store.Store.
func (s *Store) CompareAndSet(ctx context.Context, rec *core.Record, expectVersion uint64, expectToken core.Token) error {
	if rec == nil {
		return errNilRecord
	}
	_, err := s.writeRecord(ctx, s.scoped(rec.Scope), modeUpdate, rec, expectVersion, expectToken)
	return err
}

// Delete implements store.Store. The bucket's token counter is not
// touched: later fresh tokens stay greater than the deleted record's.
func (s *Store) Delete(ctx context.Context, scope core.Scope, expectVersion uint64, expectToken core.Token) error {
	_, err := s.writeRecord(ctx, s.scoped(scope), modeDelete, nil, expectVersion, expectToken)
	return err
}
