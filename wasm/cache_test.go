package wasmcore

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
)

// cacheFiles lists the files under dir with their modification times.
func cacheFiles(t *testing.T, dir string) map[string]time.Time {
	t.Helper()
	files := map[string]time.Time{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files[path] = info.ModTime()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestCompilationCache: a host with Options.CompilationCacheDir leaves the
// compiled module in the directory, and a second host with the same
// directory (as after a restart) loads it from there and steps as the native
// core does. That the second loaded rather than compiled shows as a
// directory it left alone: a host with the option writes the code it
// compiles (the first did), so a second that writes nothing found it.
func TestCompilationCache(t *testing.T) {
	ctx := context.Background()
	testHost(t) // the first host, shared: it compiled into sharedCacheDir
	dir := sharedCacheDir
	written := cacheFiles(t, dir)
	if len(written) == 0 {
		t.Fatalf("the first host left nothing in the cache directory %s", dir)
	}

	second, err := NewWithOptions(ctx, Options{CompilationCacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close(ctx)
	if again := cacheFiles(t, dir); !reflect.DeepEqual(again, written) {
		t.Errorf("the second host wrote to the cache, so it compiled again:\nbefore %v\nafter  %v", written, again)
	}
	for _, s := range benchSteps() {
		p := core.PolicyDefault()
		native, viaWasm := s.rec, s.rec
		want, wantErr := core.Step(&native, &s.ev, &p)
		got, err := second.Step(&viaWasm, &s.ev, &p)
		if err != nil || wantErr != nil || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(viaWasm, native) {
			t.Errorf("%s from the cached module: %+v, %v, record %+v; native %+v, %v, record %+v", s.name, got, err, viaWasm, want, wantErr, native)
		}
	}
}

// TestCompilationCacheDirUnusable: a cache directory that cannot be one is
// an error from NewWithOptions, not a host that silently compiles.
func TestCompilationCacheDirUnusable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := writeFile(file); err != nil {
		t.Fatal(err)
	}
	if h, err := NewWithOptions(context.Background(), Options{CompilationCacheDir: file}); err == nil {
		h.Close(context.Background())
		t.Fatalf("NewWithOptions with a regular file as the cache directory succeeded")
	}
}

func writeFile(name string) error { return os.WriteFile(name, []byte("not a directory"), 0o644) }
