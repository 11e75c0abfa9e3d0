// Command stampcmd writes wasm/idem.wasm.stamp for the module just built.
// `make wasm` runs it from the repository root after building the module.
package main

import (
	"fmt"
	"os"

	"github.com/idemkit/idem/wasm/internal/stamp"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "stampcmd:", err)
		os.Exit(1)
	}
}

func run() error {
	sources, err := stamp.SourcesHash(".")
	if err != nil {
		return err
	}
	wasm, err := os.ReadFile("wasm/idem.wasm")
	if err != nil {
		return err
	}
	f, err := os.Create(stamp.File)
	if err != nil {
		return err
	}
	if err := stamp.Write(f, stamp.Stamp{Sources: sources, Module: stamp.ModuleHash(wasm)}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
