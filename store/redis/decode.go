package redisstore

import (
	"fmt"
	"strconv"
	"time"

	"github.com/idemkit/idem/core"
)

// decodeRecord reads the record of sc from a hash's fields as HGETALL
// lists them (name, value, ...). No fields is the absent record. A hash the
// store could not have written is core.ErrInvalidRecord: a driver bug, or
// a key written by someone else.
func decodeRecord(sc core.Scope, flat []any, withResponse bool) (core.Record, error) {
	rec := core.Record{Scope: sc}
	if len(flat) == 0 {
		return rec, nil
	}
	if len(flat)%2 != 0 {
		return rec, invalid(sc, "an odd number of fields")
	}
	seen := 0
	for i := 0; i < len(flat); i += 2 {
		name, ok1 := flat[i].(string)
		value, ok2 := flat[i+1].(string)
		if !ok1 || !ok2 {
			return rec, invalid(sc, "a field that is not a string")
		}
		if err := setField(&rec, name, value); err != nil {
			return rec, invalid(sc, "field "+name+": "+err.Error())
		}
		switch name {
		case "s", "f", "t", "v":
			seen++
		}
	}
	if seen != 4 || !rec.Status.Valid() || rec.Status == core.StatusAbsent {
		return rec, invalid(sc, "no status, fingerprint, token or version")
	}
	if !withResponse {
		rec.Response = core.Response{}
	}
	return rec, nil
}

func invalid(sc core.Scope, what string) error {
	return fmt.Errorf("redisstore: the record of %s: %s: %w", sc, what, core.ErrInvalidRecord)
}

// setField sets the field name of rec from its stored value.
func setField(rec *core.Record, name, value string) error {
	var err error
	switch name {
	case "s":
		var s uint64
		s, err = strconv.ParseUint(value, 10, 8)
		rec.Status = core.Status(s)
	case "f":
		if len(value) != core.FingerprintBytes {
			return fmt.Errorf("%d bytes", len(value))
		}
		copy(rec.Fingerprint[:], value)
	case "t":
		var t uint64
		t, err = strconv.ParseUint(value, 16, 64)
		rec.Token = core.Token(t)
	case "v":
		rec.Version, err = strconv.ParseUint(value, 10, 64)
	case "r":
		rec.Response, err = parseResponse(value)
	case "e":
		rec.LastErrorCode = core.ErrorCode(value)
	case "n":
		var n uint64
		n, err = strconv.ParseUint(value, 10, 32)
		rec.ReconcileAttempts = uint32(n)
	default:
		return setTime(rec, name, value)
	}
	return err
}

func setTime(rec *core.Record, name, value string) error {
	for i, f := range timeFields {
		if f == name {
			t, err := parseTime(value)
			*recordTimes(rec)[i] = t
			return err
		}
	}
	return fmt.Errorf("unknown field")
}

// clockOf is the time of a script's TIME reply (seconds, microseconds).
func clockOf(sec, usec int64) time.Time {
	return time.Unix(sec, usec*int64(time.Microsecond)).UTC()
}
