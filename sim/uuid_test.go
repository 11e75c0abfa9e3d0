package sim

import (
	"regexp"
	"testing"
)

func TestUUIDShape(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	for i := uint64(0); i < 1000; i++ {
		u := uuid(splitmix(i), splitmix(i+1000))
		if !re.MatchString(u) {
			t.Fatal(u)
		}
	}
}
