package pgxstore

import (
	"fmt"
	"testing"
)

// hashVectors are hashStrings' values on a few inputs. wasm/js/pgstore.mjs
// computes the same hash (its fnv64) for the channel and the payload of
// NOTIFY, which Go and Node waiters on one table share; its test holds it
// to these same values.
var hashVectors = []struct {
	parts []string
	hash  string
}{
	{[]string{"a"}, "d80d0daea7dbdd7f"},
	{[]string{"", "p", "payments.create", "8e03978e-40d5-43e8-bc93-6894a57f9324"}, "d7c6f9fa43ac9a61"},
	{[]string{"public", "idem_records"}, "539a73c9eb7eac8c"},
	{[]string{"ténant", "😀", ""}, "385ff60d54ded0e0"},
}

func TestHashVectors(t *testing.T) {
	for _, v := range hashVectors {
		if got := fmt.Sprintf("%016x", hashStrings(v.parts...)); got != v.hash {
			t.Errorf("hashStrings(%q) = %s, want %s", v.parts, got, v.hash)
		}
	}
}
