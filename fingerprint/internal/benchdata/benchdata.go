// Package benchdata holds the inputs of the fingerprint benchmarks, shared by
// the package's own benchmarks and the comparison module in ../jcsbench, so
// that both measure the same bytes.
package benchdata

import (
	"strconv"
	"strings"
)

// Payment is a payment-like request of about 1 KB: nested objects, arrays,
// strings with escapes and non-ASCII text, integers and decimals, members
// out of order.
const Payment = `{
  "idempotency_hint": "order-2024-000123",
  "amount": {"value": 125000, "currency": "EUR", "decimal": 1250.00, "fx_rate": 1.0825},
  "merchant": {"name": "Caf\u00e9 \"Le Z\u00e8bre\" & Co.", "mcc": 5812, "id": "m_8f14e45fceea167a",
    "address": {"line1": "12 Rue de la Paix", "city": "Paris", "postcode": "75002", "country": "FR"}},
  "customer": {"id": "cus_2c9341ca4cf3d87b", "email": "jane.doe+billing@example.com",
    "name": "Jane \u201cJD\u201d Doe", "phone": "+33 1 23 45 67 89", "tags": ["vip", "fr", "returning"]},
  "payment_method": {"type": "card", "card": {"brand": "visa", "last4": "4242", "exp_month": 12,
    "exp_year": 2031, "three_d_secure": true, "network_token": null}},
  "line_items": [
    {"sku": "SKU-001", "description": "Espresso\tdouble", "quantity": 2, "unit_amount": 350, "tax_rate": 0.2},
    {"sku": "SKU-002", "description": "Croissant \u2014 beurre", "quantity": 3, "unit_amount": 195, "tax_rate": 0.055},
    {"sku": "SKU-003", "description": "Gift card\nline two", "quantity": 1, "unit_amount": 118365, "tax_rate": 0}
  ],
  "metadata": {"order_id": "A-10023", "channel": "web", "note": "Leave at the door \\ ring twice", "retry": false},
  "client_ts": "2024-05-17T09:31:12.123Z",
  "capture": true,
  "statement_descriptor": "LEZEBRE*PARIS",
  "risk": {"score": 12.5, "signals": [0.1, 0.25, 3.5e-3, 42], "ip": "203.0.113.7"}
}`

// Document64K returns a document of about 64 KB: a batch of payment-like
// records that differ in every value.
func Document64K() []byte {
	var b strings.Builder
	b.WriteString(`{"batch_id":"b_0001","created":1715938272,"payments":[`)
	for i := 0; b.Len() < 64*1024-700; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		n := strconv.Itoa(i)
		b.WriteString(`{"id":"pay_` + n + `","amount":{"value":` + strconv.Itoa(1000+i*37) +
			`,"currency":"EUR","decimal":` + strconv.Itoa(10+i) + `.` + strconv.Itoa(10+i%90) + `},` +
			`"merchant":{"name":"Shop \u00e9 ` + n + `","mcc":5812,"address":{"city":"Z\u00fcrich","line1":"Bahnhofstrasse ` + n + `"}},` +
			`"customer":{"id":"cus_` + n + `","email":"user` + n + `@example.com","tags":["a","b\"q\"","c"]},` +
			`"line_items":[{"sku":"S-` + n + `","quantity":` + strconv.Itoa(1+i%5) + `,"unit_amount":` + strconv.Itoa(199+i) + `,"tax_rate":0.2},` +
			`{"sku":"T-` + n + `","quantity":1,"unit_amount":` + strconv.Itoa(5000+i) + `,"tax_rate":0.055}],` +
			`"capture":true,"note":"line\none\ttab ` + n + `","risk":1.5e-3}`)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// Input is one named benchmark input.
type Input struct {
	Name string
	In   []byte
}

// Inputs are the benchmark inputs, in order: the payment, then the 64 KB document.
func Inputs() []Input {
	return []Input{{"payment", []byte(Payment)}, {"doc64k", Document64K()}}
}
