package idemhttp_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemhttp"
	memstore "github.com/idemkit/idem/store/mem"
)

// ExampleNew protects one route of the standard mux: one executor, built at
// start-up, one middleware for the route's use case; the mux's method and
// path pattern pick the route, the middleware the key.
func ExampleNew() {
	ex, err := idem.New(memstore.New(memstore.Options{})) // once, at start-up
	if err != nil {
		panic(err)
	}
	protect, err := idemhttp.New(ex, idemhttp.Route{
		UseCase: "payments.create",
		// Whose key it is: in a real service, the caller your
		// authentication verified.
		Principal: func(r *http.Request) (string, error) {
			if p := r.Header.Get("X-Principal"); p != "" {
				return p, nil
			}
			return "", errors.New("not authenticated")
		},
	})
	if err != nil {
		panic(err)
	}
	charges := 0
	mux := http.NewServeMux()
	mux.Handle("POST /accounts/{id}/payments", protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		charges++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"account":%q,"payment":%d}`, r.PathValue("id"), charges)
	})))

	send := func(key, body string) {
		r := httptest.NewRequest(http.MethodPost, "/accounts/a-1/payments", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-Principal", "alice")
		r.Header.Set(idemhttp.KeyHeaderDefault, key)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		if w.Header().Get("Content-Type") == "application/problem+json" {
			var p idemhttp.Problem
			_ = json.Unmarshal(w.Body.Bytes(), &p)
			fmt.Println(w.Code, p.Code, p.Title) // the detail says more, for a person
			return
		}
		fmt.Println(w.Code, w.Header().Get(idemhttp.ReplayedHeader), strings.TrimSpace(w.Body.String()))
	}
	const key = "8e03978e-40d5-43e8-bc93-6894a57f9324"
	send(key, `{"amountCents":1250}`)    // runs the handler
	send(key, `{ "amountCents": 1250 }`) // the same request: replayed
	send(key, `{"amountCents":9999}`)    // another payload under the key: 422
	fmt.Println("charges:", charges)
	// Output:
	// 201  {"account":"a-1","payment":1}
	// 201 true {"account":"a-1","payment":1}
	// 422 key_misuse Idempotency-Key is already used for another request
	// charges: 1
}
