package idemotel_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOnlyThisPackageImportsOpenTelemetry: the core, the executor, the
// stores and idemhttp link no OpenTelemetry; an application pays for it
// only by importing idemotel.
func TestOnlyThisPackageImportsOpenTelemetry(t *testing.T) {
	pkgs := []string{"github.com/idemkit/idem", "github.com/idemkit/idem/core", "github.com/idemkit/idem/flow",
		"github.com/idemkit/idem/store", "github.com/idemkit/idem/store/mem", "github.com/idemkit/idem/store/pgx",
		"github.com/idemkit/idem/idemhttp", "github.com/idemkit/idem/fingerprint"}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "go.opentelemetry.io/") {
			t.Errorf("%v depend on %s", pkgs, dep)
		}
	}
	// The check can fail: idemotel itself does import it.
	self, err := exec.Command("go", "list", "-deps", "github.com/idemkit/idem/idemotel").CombinedOutput()
	if err != nil || !strings.Contains(string(self), "go.opentelemetry.io/otel/metric") {
		t.Fatalf("idemotel's own deps do not show OpenTelemetry: %v\n%s", err, self)
	}
}
