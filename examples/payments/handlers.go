package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemhttp"
)

type principalKey struct{}

// authenticate stands in for real authentication: the X-Principal header
// names the caller, and a request without one is answered 401, with the
// challenge RFC 9110 wants and the same problem (RFC 9457) the middleware
// answers when it finds no caller. Replace it with your identity
// provider's check; the idempotency route only needs principalOf to name
// the caller it verified.
func authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.Header.Get("X-Principal")
		if p == "" {
			w.Header().Set("WWW-Authenticate", `X-Principal realm="payments example"`)
			idemhttp.WriteProblem(w, idemhttp.NewProblem(idemhttp.CodeUnauthenticated, http.StatusUnauthorized,
				"X-Principal is required (a stand-in for authentication)"))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// principalOf is the route's principal extractor: the caller authenticate
// verified.
func principalOf(r *http.Request) (string, error) {
	if p, ok := r.Context().Value(principalKey{}).(string); ok && p != "" {
		return p, nil
	}
	return "", errors.New("not authenticated")
}

// paymentResponse is the one way a payment becomes a response: the handler
// sends it, and the reconciler stores it for a charge it finds in the ledger,
// so that a settled unknown replays what the handler would have sent.
func paymentResponse(p Payment) (idem.Response, error) {
	body, err := json.Marshal(p)
	if err != nil {
		return idem.Response{}, err
	}
	status := http.StatusCreated
	if p.Status == "declined" {
		status = http.StatusPaymentRequired // a business outcome: stored and replayed like a success
	}
	return idem.Response{StatusCode: status, Body: body, Headers: []idem.Header{
		{Name: "Content-Type", Value: "application/json"},
		{Name: "Location", Value: "/payments/" + p.ID},
	}}, nil
}

// paymentRequest is what a client sends to POST /payments.
type paymentRequest struct {
	CustomerID  string `json:"customerId"`
	AmountCents int64  `json:"amountCents"`
	Currency    string `json:"currency"`
	// ClientRequestTime is the client's clock, which the fingerprint
	// excludes: two sends of one payment differ in it. So it must not
	// decide the answer, or a refusal of one send would be replayed to the
	// other: it is taken whatever JSON it holds (or none), and never read.
	ClientRequestTime json.RawMessage `json:"clientRequestTime"`
}

// createPayment is the seed's handler. Under the middleware it runs at most
// once per key; it only has to say which failures left nothing behind.
func createPayment(gw *Gateway) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req paymentRequest
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil || req.CustomerID == "" || req.AmountCents <= 0 || len(req.Currency) != 3 {
			// Same payload, same answer: a rejection is stored and replayed
			// too. It reads only fingerprinted fields, so it is the same
			// answer for every request that shares the fingerprint.
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "want customerId, a positive amountCents and a 3-letter currency"})
			return
		}
		p := Payment{CustomerID: req.CustomerID, AmountCents: req.AmountCents, Currency: req.Currency}
		at, _ := idemhttp.AttemptOf(r)
		charged, err := gw.Charge(r.Context(), at, p)
		switch {
		case errors.Is(err, ErrRefusedBeforeSending):
			_ = idemhttp.NotExecuted(r, err) // nothing left the process: a retry may charge
			writeJSON(w, http.StatusBadGateway, map[string]string{"error": "the payment gateway is unavailable; nothing was charged, retry"})
			return
		case err != nil:
			_ = idemhttp.OutcomeUnknown(r, err) // it may have charged: the reconciler will tell
			writeJSON(w, http.StatusGatewayTimeout, map[string]string{"error": fmt.Sprintf("the payment's outcome is unknown (%v); retry with the same key", err)})
			return
		}
		resp, err := paymentResponse(charged)
		if err != nil {
			_ = idemhttp.OutcomeUnknown(r, err)
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "the charge went through but cannot be answered; retry with the same key"})
			return
		}
		for _, h := range resp.Headers {
			w.Header().Set(h.Name, h.Value)
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(resp.Body)
	})
}

// getPayment answers GET /payments/{id}, the Location of a payment: to the
// caller who made it; another caller gets 404, as for an id that names no
// payment, so that ids tell nothing of other callers' payments.
func getPayment(gw *Gateway) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		principal, err := principalOf(r)
		p, ok := gw.Payment(r.PathValue("id"))
		if err != nil || !ok || p.principal != principal {
			idemhttp.WriteProblem(w, idemhttp.Problem{Type: "about:blank", Title: http.StatusText(http.StatusNotFound),
				Status: http.StatusNotFound, Detail: "no such payment"})
			return
		}
		resp, err := paymentResponse(p.Payment)
		if err != nil {
			http.Error(w, "the payment cannot be answered", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(resp.Body) // the body the 201 (or 402) had
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
