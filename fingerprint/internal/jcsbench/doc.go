// Package jcsbench compares idem's fingerprint package with
// github.com/gowebpki/jcs and with a naive encoding/json approach, on the
// same inputs and in the same run. It is a separate module so that the idem
// module never depends on gowebpki/jcs.
//
//	cd fingerprint/internal/jcsbench && go test -run=NONE -bench=. -benchmem -count=10
package jcsbench
