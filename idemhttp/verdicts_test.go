package idemhttp_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemhttp"
)

// TestOutcomeUnknownWinsOverNotExecuted: a handler that says both (a
// retry loop whose first call was refused and whose second timed out) may
// have had its side effect, whichever it said first: the key is left
// unknown (409 outcome_unknown), never free for a second execution.
func TestOutcomeUnknownWinsOverNotExecuted(t *testing.T) {
	refused, timedOut := errors.New("refused before sending (test)"), errors.New("timed out (test)")
	for _, unknownFirst := range []bool{false, true} {
		runs := 0
		h := protectInProcess(t, idem.MetricsNop{}, func(w http.ResponseWriter, r *http.Request) {
			runs++
			if unknownFirst {
				idemhttp.OutcomeUnknown(r, timedOut)
			}
			idemhttp.NotExecuted(r, refused)
			if !unknownFirst {
				idemhttp.OutcomeUnknown(r, timedOut)
			}
			w.WriteHeader(http.StatusGatewayTimeout)
		})
		if rec := postTo(h, context.Background()); rec.Code != http.StatusGatewayTimeout {
			t.Fatalf("OutcomeUnknown first %v: this client got %d, want the handler's 504", unknownFirst, rec.Code)
		}
		if rec := postTo(h, context.Background()); rec.Code != http.StatusConflict || codeOf(rec) != string(idem.CodeOutcomeUnknown) || runs != 1 {
			t.Errorf("OutcomeUnknown first %v: the retry got %d %s after %d runs, want 409 outcome_unknown after 1", unknownFirst, rec.Code, rec.Body, runs)
		}
	}
}
