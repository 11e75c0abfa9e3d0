package idem_test

import (
	"os"
	"regexp"
	"testing"
)

// TestDocsNameOnlyExistingFiles: ARCHITECTURE.md and the README name no
// file or directory that does not exist.
func TestDocsNameOnlyExistingFiles(t *testing.T) {
	path := regexp.MustCompile("`((?:[a-z0-9_]+/)*[a-z0-9_]+(?:\\.go|\\.md|/))`")
	for _, doc := range []string{"ARCHITECTURE.md", "README.md"} {
		src, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		names := path.FindAllSubmatch(src, -1)
		if len(names) < 5 {
			t.Fatalf("%s: only %d paths found: the pattern is broken", doc, len(names))
		}
		for _, m := range names {
			if _, err := os.Stat(string(m[1])); err != nil {
				t.Errorf("%s names %s, which does not exist", doc, m[1])
			}
		}
	}
}
