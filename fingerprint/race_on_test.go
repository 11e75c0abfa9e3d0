//go:build race

package fingerprint

// raceEnabled: the race detector makes sync.Pool drop items on purpose, so
// allocation counts are not checked under it.
const raceEnabled = true
