// Command stampcmd writes the stamp of each wasm module (stamp.Modules:
// wasm/idem.wasm.stamp, wasm/fingerprint.wasm.stamp) for the modules just
// built. `make wasm` runs it from the repository root after building them.
package main

import (
	"fmt"
	"os"

	"github.com/idemkit/idem/wasm/internal/stamp"
)

func main() {
	for _, m := range stamp.Modules {
		if err := m.Make("."); err != nil {
			fmt.Fprintln(os.Stderr, "stampcmd:", m.Wasm+":", err)
			os.Exit(1)
		}
	}
}
