package idem_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/idemkit/idem"
	memstore "github.com/idemkit/idem/store/mem"
)

func ExampleExecutor_Do() {
	ex, _ := idem.New(memstore.New(memstore.Options{}))
	req := idem.Request{
		Scope:       idem.Scope{Principal: "user-1", UseCase: "payments.create", Key: "550e8400-e29b-41d4-a716-446655440000"},
		Fingerprint: sha256.Sum256([]byte(`{"amountCents":12000,"currency":"KRW"}`)),
	}
	charge := func(ctx context.Context, a idem.Attempt) (idem.Response, error) {
		// Call the payment gateway here, passing a.Token along if it takes one.
		return idem.Response{StatusCode: 201, Body: []byte(`{"paymentId":"p-1"}`)}, nil
	}
	for range 2 { // the client retries: the second answer is a replay
		r, err := ex.Do(context.Background(), req, charge)
		var e *idem.Error
		if errors.As(err, &e) {
			fmt.Println(e.Status, e.Code, e.RetryAfter)
			continue
		}
		fmt.Println(r.Kind, r.Response.StatusCode, string(r.Response.Body))
	}
	// Output:
	// executed 201 {"paymentId":"p-1"}
	// replayed 201 {"paymentId":"p-1"}
}

// ExampleExecutor_Reconciler: an application sets its policy's choices and
// answers the reconciler's Check with the names of package idem alone.
func ExampleExecutor_Reconciler() {
	p := idem.PolicyDefault()
	p.InFlightAnswer, p.Fail = idem.InFlightAccepted, idem.FailKeep
	ex, _ := idem.New(memstore.New(memstore.Options{}), idem.WithPolicy(p))
	r, err := ex.Reconciler(func(ctx context.Context, rec idem.Record) (idem.Finding, error) {
		// Ask the payment gateway about rec.Token here.
		return idem.Finding{Verdict: idem.VerdictNotExecuted}, nil
	})
	fmt.Println(r != nil, err, p.InFlightAnswer, idem.VerdictStillUnknown)
	// Output: true <nil> accepted still_unknown
}
