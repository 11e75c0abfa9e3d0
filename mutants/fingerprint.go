package mutants

// fpMutants plant bugs in the request fingerprint.
var fpMutants = []Mutant{
	// ---- fingerprint ---------------------------------------------------
	{
		ID: "fp-key-order", File: "fingerprint/object.go",
		Old:    "\tif sorted {\n\t\treturn nil\n\t}\n",
		New:    "\tif sorted || len(ms) > 0 {\n\t\treturn nil\n\t}\n",
		Desc:   "object members are never sorted: key order changes the fingerprint",
		Breaks: "§3 \"key order never changes it\"; §6.6 clients converge (a retry is a Mismatch)",
	},
	{
		ID: "fp-use-case-ignored", File: "fingerprint/fingerprint.go",
		Old:    "\th = appendField(h, useCase)\n",
		New:    "\th = appendField(h, \"\")\n",
		Desc:   "the use case is left out of the pre-image",
		Breaks: "§3 fingerprint over (use case, schema version, canonical JSON)",
	},
	{
		ID: "fp-schema-version-ignored", File: "fingerprint/fingerprint.go",
		Old:    "\th = binary.BigEndian.AppendUint32(h, schemaVersion)\n",
		New:    "\th = binary.BigEndian.AppendUint32(h, 0)\n",
		Desc:   "the fingerprint schema version is left out of the pre-image",
		Breaks: "§3 fingerprint over (use case, schema version, ...)",
	},
	{
		ID: "fp-exclude-ignored", File: "fingerprint/object.go",
		Old:    "\t\tif child != nil && child.exclude {\n\t\t\terr = s.skipped(depth, mark)\n\t\t\tstart = -1",
		New:    "\t\tif child != nil && child.exclude && child.include > 0 {\n\t\t\terr = s.skipped(depth, mark)\n\t\t\tstart = -1",
		Desc:   "excluded object members still count (a client timestamp makes every retry a Mismatch)",
		Breaks: "§3 \"callers can exclude fields by JSON Pointer\"",
	},
	{
		ID: "fp-absent-is-null", File: "fingerprint/fingerprint.go",
		Old:    "\t\t\tpre = append(pre, 0)\n\t\t\tcontinue",
		New:    "\t\t\tpre = append(pre, 1, 0, 0, 0, 0, 0, 0, 0, 4, 'n', 'u', 'l', 'l')\n\t\t\tcontinue",
		Desc:   "an included pointer that selects nothing is encoded as null",
		Breaks: "§3 \"any semantic change always changes it\" (absent vs null)",
	},
	{
		ID: "fp-no-length-prefix", File: "fingerprint/fingerprint.go",
		Old:    "\t\tpre = binary.BigEndian.AppendUint64(pre, uint64(v.end-v.start))\n",
		New:    "",
		Desc:   "included values are concatenated without their length prefix",
		Breaks: "§3 \"never a plain string join (separator injection)\"",
	},
	{
		ID: "fp-utf16-order-dropped", File: "fingerprint/object.go",
		Old:    "\tif ca >= 0xEE && cb >= 0xEE && (ca >= 0xF0) != (cb >= 0xF0) {",
		New:    "\tif false && ca >= 0xEE && cb >= 0xEE && (ca >= 0xF0) != (cb >= 0xF0) {",
		Desc:   "member names are sorted by UTF-8 bytes, not UTF-16 code units",
		Breaks: "§3 RFC 8785 canonical JSON (cross-implementation fingerprints differ)",
	},
}
