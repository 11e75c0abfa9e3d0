module github.com/idemkit/idem/fingerprint/internal/jcsbench

go 1.26.0

require (
	github.com/gowebpki/jcs v1.0.2
	github.com/idemkit/idem v0.0.0
)

replace github.com/idemkit/idem => ../../..
