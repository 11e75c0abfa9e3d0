package pgxstore

import (
	"bytes"
	"io/fs"
	"os"
	"testing"
)

// TestNodeMigrationsAreCopies: the Node package's migrations
// (wasm/js/migrations, run by its migrate) are this package's, byte for
// byte, and no more, so that a Node service makes the table Go's driver
// reads.
func TestNodeMigrationsAreCopies(t *testing.T) {
	const nodeDir = "../../wasm/js/migrations"
	ours, err := fs.ReadDir(Migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := os.ReadDir(nodeDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(theirs) != len(ours) {
		t.Fatalf("%s has %d files, store/pgx/migrations %d: cp store/pgx/migrations/*.sql wasm/js/migrations/", nodeDir, len(theirs), len(ours))
	}
	for _, e := range ours {
		want, err := Migrations.ReadFile("migrations/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(nodeDir + "/" + e.Name())
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s/%s differs from store/pgx's (%v): cp store/pgx/migrations/*.sql wasm/js/migrations/", nodeDir, e.Name(), err)
		}
	}
}
