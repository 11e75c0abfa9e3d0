package scenario

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// Runner runs one scenario file's commands, one at a time:
// datadriven.RunTest's function. Each file gets its own.
type Runner func(t *testing.T, d *datadriven.TestData) string

// Walk runs every scenario file under dir (a subtest each), with a fresh
// Runner from start, and fails when there is none: a glob gone wrong must
// not pass by running nothing. Each file opens with a line "# why: ...",
// the case it exists for. With -rewrite, the expected output of every
// command is rewritten from what the code does now.
func Walk(t *testing.T, dir string, start func(t *testing.T) Runner) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios under %s: %v", dir, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(src, []byte("# why: ")) {
				t.Fatalf("%s must open with a line '# why: ...'", file)
			}
			datadriven.RunTest(t, file, start(t))
		})
	}
}
