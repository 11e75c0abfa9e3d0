package idem

import (
	"context"
	"testing"
	"time"
)

// TestOutcomeCtxReleasedHasErr: a released outcome context whose Done was
// armed closes Done, and must then say why (context.AfterFunc, which pgx
// uses on every query's context, panics on a closed Done with a nil Err).
func TestOutcomeCtxReleasedHasErr(t *testing.T) {
	c := &outcomeCtx{parent: context.Background(), deadline: time.Now().Add(time.Hour)}
	fired := make(chan error, 1)
	stop := context.AfterFunc(c, func() { fired <- c.Err() })
	defer stop()
	c.release()
	select {
	case <-c.Done():
	default:
		t.Fatal("release left an armed Done open: an AfterFunc watcher would leak")
	}
	if err := <-fired; err == nil {
		t.Fatal("Done is closed but Err is nil")
	}
}
