module github.com/idemkit/idem

go 1.26

require pgregory.net/rapid v1.3.0

require github.com/anishathalye/porcupine v1.3.1

require (
	github.com/tetratelabs/wazero v1.12.0
	golang.org/x/sys v0.44.0 // indirect
)
