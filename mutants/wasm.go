package mutants

// wasmMutants plant bugs in the Go host of the wasm core (package wasmcore
// and the host's half of wasm/internal/abi: the request it encodes, the
// answer it decodes). The guest's half (DecodeRequest, AppendOK) is left
// out: it runs inside idem.wasm, which a mutant does not rebuild. Breaks
// names the ABI.md section the bug breaks and SPEC §2 ("natively and
// compiled to wasm: byte-identical decisions").
var wasmMutants = []Mutant{
	// ---- the host: pool, traps, version, Close --------------------------
	{
		ID: "wasm-pool-keeps-trapped", File: "wasm/host.go",
		Old:    "\t\t// The module's state is unknown after a trap: never reuse it.\n\t\tinst.mod.Close(ctx)\n\t\treturn res, err",
		New:    "\t\t// The module's state is unknown after a trap: never reuse it.\n\t\th.put(ctx, inst)\n\t\treturn res, err",
		Desc:   "an instance that trapped goes back to the pool and serves the next step",
		Breaks: "ABI.md Traps (the host discards the instance; the next step uses a fresh one)",
	},
	{
		ID: "wasm-version-newer-accepted", File: "wasm/host.go",
		Old:    "\tif got := uint32(out[0]); got != abi.Version {",
		New:    "\tif got := uint32(out[0]); got < abi.Version {",
		Desc:   "the version check accepts a module of a newer ABI version (compares with < instead of !=)",
		Breaks: "ABI.md How a host learns the version (no negotiation: another version is refused)",
	},
	{
		ID: "wasm-version-before-initialize", File: "wasm/host.go",
		Old:    "\tif init := mod.ExportedFunction(\"_initialize\"); init != nil {\n\t\tif _, err := init.Call(ctx); err != nil {\n\t\t\treturn nil, fmt.Errorf(\"idem/wasm: initialising the module: %w\", err)\n\t\t}\n\t}\n\tout, err := version.Call(ctx)\n\tif err != nil {\n\t\treturn nil, fmt.Errorf(\"idem/wasm: reading the module's ABI version: %w\", err)\n\t}\n",
		New:    "\tout, err := version.Call(ctx)\n\tif err != nil {\n\t\treturn nil, fmt.Errorf(\"idem/wasm: reading the module's ABI version: %w\", err)\n\t}\n\tif init := mod.ExportedFunction(\"_initialize\"); init != nil {\n\t\tif _, err := init.Call(ctx); err != nil {\n\t\t\treturn nil, fmt.Errorf(\"idem/wasm: initialising the module: %w\", err)\n\t\t}\n\t}\n",
		Desc:   "the host asks the version before _initialize has started the guest's runtime",
		Breaks: "ABI.md Imports and exports (_initialize: call once, first)",
	},
	{
		ID: "wasm-close-races-step", File: "wasm/host.go",
		Old:    "\th.mu.RLock()\n\tdefer h.mu.RUnlock()\n\tif h.closed {\n\t\treturn core.Transition{}, ErrClosed\n\t}",
		New:    "\th.mu.RLock()\n\tclosed := h.closed\n\th.mu.RUnlock()\n\tif closed {\n\t\treturn core.Transition{}, ErrClosed\n\t}",
		Desc:   "Step checks closed under the lock but runs without it: Close releases the runtime under a step in flight",
		Breaks: "Host.Close doc (waits for the steps in flight; steps after it return ErrClosed)",
	},
	// ---- the host: the input buffer and memory ---------------------------
	{
		ID: "wasm-input-cache-off-by-one", File: "wasm/host.go",
		Old:    "\tif n > inst.inputBytes {\n",
		New:    "\tif n > inst.inputBytes+1 {\n",
		Desc:   "a request one byte larger than the cached input buffer is written into it without growing it",
		Breaks: "ABI.md Memory (idem_input again for a larger request)",
	},
	{
		ID: "wasm-memory-view-stale", File: "wasm/host.go",
		Old:    "\tinst.stack[0] = uint64(n)\n\tif err := fn.CallWithStack(ctx, inst.stack); err != nil {\n\t\treturn nil, fmt.Errorf(\"%w: %s: %w\", ErrTrap, name, err)\n\t}\n\taddr, size := uint32(inst.stack[0]>>32), uint32(inst.stack[0])\n\tanswer, ok := inst.mem.Read(addr, size)\n",
		New:    "\tinst.stack[0] = uint64(n)\n\tview, _ := inst.mem.Read(0, inst.mem.Size())\n\tif err := fn.CallWithStack(ctx, inst.stack); err != nil {\n\t\treturn nil, fmt.Errorf(\"%w: %s: %w\", ErrTrap, name, err)\n\t}\n\taddr, size := uint32(inst.stack[0]>>32), uint32(inst.stack[0])\n\tok := uint64(addr)+uint64(size) <= uint64(len(view))\n\tvar answer []byte\n\tif ok {\n\t\tanswer = view[addr : addr+size]\n\t}\n",
		Desc:   "the memory's view is taken before idem_step (or idem_flow) and not re-read after it: memory the call grew is not seen",
		Breaks: "ABI.md Memory (memory can grow during idem_step: a host re-reads the memory after each call)",
	},
	// ---- the request the host encodes ------------------------------------
	{
		ID: "wasm-empty-headers-sent-nil", File: "wasm/internal/abi/request.go",
		Old:    "\tif r.Headers == nil {\n\t\tdst = appendU32(dst, nilLength)",
		New:    "\tif len(r.Headers) == 0 {\n\t\tdst = appendU32(dst, nilLength)",
		Desc:   "an empty, non-nil header list is sent as nil (the nil-vs-empty marker used for both)",
		Breaks: "ABI.md Encoding (bytes?/headers: 0xFFFFFFFF is nil, so nil and empty survive the round trip)",
	},
	{
		ID: "wasm-version-sent-as-u32", File: "wasm/internal/abi/request.go",
		Old:    "\tdst = appendU64(dst, r.Version)\n",
		New:    "\tdst = appendU64(dst, uint64(uint32(r.Version)))\n",
		Desc:   "the record's u64 version is sent truncated to 32 bits",
		Breaks: "ABI.md Request (record: u64 version)",
	},
	{
		ID: "wasm-epoch-sent-as-zero-time", File: "wasm/internal/abi/request.go",
		Old:    "func appendTime(dst []byte, t time.Time) []byte {\n\tif t.IsZero() {",
		New:    "func appendTime(dst []byte, t time.Time) []byte {\n\tif t.IsZero() || t.UnixNano() == 0 {",
		Desc:   "the Unix epoch is sent as the zero time (no time), as if 0 meant unset",
		Breaks: "ABI.md Encoding (time: tag 0 is time.Time{}, tag 1 any instant)",
	},
	// ---- the answer the host decodes -------------------------------------
	{
		ID: "wasm-from-now-in-utc", File: "wasm/internal/abi/answer.go",
		Old:    "\t\tif tag == TimeFromNow {\n\t\t\treturn t.In(nowLoc)\n\t\t}\n\t\treturn t.UTC()",
		New:    "\t\treturn t.UTC()",
		Desc:   "a time derived from the event's now is decoded in UTC, not in now's location",
		Breaks: "ABI.md Answer (tag 2: in the location of the event's now, as the native Step)",
	},
	{
		ID: "wasm-token-read-as-u32", File: "wasm/internal/abi/answer.go",
		Old:    "\t\tnext.Token = core.Token(r.u64())\n",
		New:    "\t\tnext.Token = core.Token(uint32(r.u64()))\n",
		Desc:   "a changed u64 token is kept as its low 32 bits",
		Breaks: "ABI.md Answer (token u64); §4 tokens never reused",
	},
	{
		ID: "wasm-sentinels-misordered", File: "wasm/internal/abi/abi.go",
		Old:    "\tcore.ErrTimeMissing, core.ErrTokenMissing, core.ErrTokenNotFresh, core.ErrResponseInvalid,",
		New:    "\tcore.ErrTimeMissing, core.ErrTokenNotFresh, core.ErrTokenMissing, core.ErrResponseInvalid,",
		Desc:   "error codes 5 and 6 map to each other's sentinel (ErrTokenMissing, ErrTokenNotFresh)",
		Breaks: "ABI.md Answer, Refused (the code names the core sentinel, by position)",
	},
	{
		ID: "wasm-change-mask-off-by-one", File: "wasm/internal/abi/abi.go",
		Old:    "\tchangedAll = 1<<iota - 1\n",
		New:    "\tchangedAll = 1<<(iota+1) - 1\n",
		Desc:   "the changed-bits mask accepts bit 13, one past the last field",
		Breaks: "ABI.md Malformed answers (a change bit above 12)",
	},
	{
		ID: "wasm-answer-strings-alias-memory", File: "wasm/internal/abi/answer.go",
		Old:    "func (r *reader) strCopy() string { return strings.Clone(r.str()) }",
		New:    "func (r *reader) strCopy() string { return r.str() }",
		Desc:   "a changed string is kept as a view of the guest's answer buffer, which the next step overwrites",
		Breaks: "ABI.md Memory (the answer is valid until the next idem_step; the host copies what it keeps)",
	},
	{
		ID: "wasm-malformed-half-applied", File: "wasm/internal/abi/answer.go",
		Old:    "\tnext := *rec\n",
		New:    "\tnext := *rec\n\tdefer func() { *rec = next }()\n",
		Desc:   "the decoded fields are written back on every return: a malformed answer changes the record up to where it broke",
		Breaks: "ABI.md Malformed answers (the record is unchanged)",
	},
	{
		ID: "wasm-event-response-copied", File: "wasm/internal/abi/answer.go",
		Old:    "\t\tcase ResponseFromEvent:\n\t\t\tnext.Response = ev.Response\n",
		New:    "\t\tcase ResponseFromEvent:\n\t\t\tnext.Response = ev.Response.Clone()\n",
		Desc:   "a response taken from the event is stored as a copy, not shared with the event as the native Step shares it",
		Breaks: "ABI.md Answer (tag 1: the host stores the event's value, sharing it as the native Step does)",
	},
	{
		ID: "wasm-explicit-body-aliases-memory", File: "wasm/internal/abi/answer.go",
		Old:    "\tif resp.Body != nil {\n\t\tresp.Body = append(make([]byte, 0, len(resp.Body)), resp.Body...)\n\t}\n",
		New:    "",
		Desc:   "an explicit response's body is kept as a view of the guest's answer buffer, which the next step overwrites",
		Breaks: "ABI.md Memory (the host copies what it keeps before calling again)",
	},
	{
		ID: "wasm-refusal-message-aliases-memory", File: "wasm/internal/abi/answer.go",
		Old:    "\t\treturn core.Transition{}, ErrorOf(sentinel, strings.Clone(msg))",
		New:    "\t\treturn core.Transition{}, ErrorOf(sentinel, msg)",
		Desc:   "a refusal's message is kept as a view of the guest's answer buffer: the error's text changes with the next step",
		Breaks: "ABI.md Memory (the host copies what it keeps before calling again)",
	},
}

// jsMutants plant bugs in the Node host (wasm/js/idem.mjs).
var jsMutants = []Mutant{
	// ---- range checks -----------------------------------------------------
	{
		ID: "js-u8-accepts-256", File: "wasm/js/idem.mjs",
		Old:    "!(v >= 0 && v <= 0xff)",
		New:    "!(v >= 0 && v <= 0x100)",
		Desc:   "a u8 field accepts 256, which is written as 0",
		Breaks: "ABI.md Request (a value that does not fit its field never reaches the guest)",
	},
	{
		ID: "js-u32-refuses-max", File: "wasm/js/idem.mjs",
		Old:    "!(v >= 0 && v <= 0xffffffff)",
		New:    "!(v >= 0 && v < 0xffffffff)",
		Desc:   "a u32 field refuses 2^32-1, which is in range",
		Breaks: "README.md Values (uint32 fields: 0..2^32-1)",
	},
	{
		ID: "js-u64-accepts-2-64", File: "wasm/js/idem.mjs",
		Old:    "if (v < 0n || v > U64_MAX) throw",
		New:    "if (v < 0n || v > U64_MAX + 1n) throw",
		Desc:   "a u64 field accepts 2^64, which wraps to 0",
		Breaks: "ABI.md Request (a value that does not fit never reaches the guest)",
	},
	{
		ID: "js-i64-unsafe-number", File: "wasm/js/idem.mjs",
		Old:    "} else if (!Number.isSafeInteger(v)) throw new IdemInputError(field, v, WANT.i64);",
		New:    "} else if (!Number.isInteger(v)) throw new IdemInputError(field, v, WANT.i64);",
		Desc:   "an i64 field accepts a Number past 2^53, whose value is already rounded",
		Breaks: "README.md Values (a bigint, or a safe integer)",
	},
	{
		ID: "js-time-max-off-by-one", File: "wasm/js/idem.mjs",
		Old:    "const TIME_MAX = I64_MAX * NANOS + NANOS - 1n;",
		New:    "const TIME_MAX = I64_MAX * NANOS;",
		Desc:   "a time in the last second whose seconds fit an i64 is refused",
		Breaks: "README.md Values (a time whose seconds fit an i64)",
	},
	// ---- encoding ---------------------------------------------------------
	{
		ID: "js-time-floor-dropped", File: "wasm/js/idem.mjs",
		Old:    "if (nsec < 0n) { nsec += NANOS; sec -= 1n; } // floor division",
		New:    "if (nsec < 0n) { nsec += NANOS; } // floor division",
		Desc:   "a time before the epoch with a fraction of a second is sent one second late",
		Breaks: "ABI.md Encoding (time: i64 Unix seconds, u32 nanoseconds < 10^9)",
	},
	{
		ID: "js-nanos-big-endian", File: "wasm/js/idem.mjs",
		Old:    "this.view.setUint32(this.n + 9, Number(nsec), true);",
		New:    "this.view.setUint32(this.n + 9, Number(nsec));",
		Desc:   "a time's nanoseconds are written big-endian (the little-endian flag dropped)",
		Breaks: "ABI.md Encoding (little-endian)",
	},
	{
		ID: "js-lone-surrogate-sent", File: "wasm/js/idem.mjs",
		Old:    "      if (!s.isWellFormed()) return false;\n",
		New:    "",
		Desc:   "a string with a lone surrogate is sent as U+FFFD instead of refused",
		Breaks: "ABI.md Encoding (str: the Node host refuses a lone surrogate)",
	},
	{
		ID: "js-ascii-fast-path-0x80", File: "wasm/js/idem.mjs",
		Old:    "if (c >= 0x80) break;",
		New:    "if (c > 0x80) break;",
		Desc:   "U+0080 is copied as the single byte 0x80 by the ASCII fast path instead of its UTF-8 (C2 80)",
		Breaks: "ABI.md Encoding (str: a string's UTF-8)",
	},
	{
		ID: "js-utf8-room-short", File: "wasm/js/idem.mjs",
		Old:    "this.ensure(4 + 3 * len);",
		New:    "this.ensure(4 + 2 * len);",
		Desc:   "room for 2 bytes per UTF-16 unit: a long string of 3-byte characters at the buffer's end is cut short",
		Breaks: "ABI.md Encoding (str: a string's UTF-8)",
	},
	{
		ID: "js-headers-sent-reversed", File: "wasm/js/idem.mjs",
		Old:    "      for (let i = 0; i < hs.length; i++) {\n        const h = hs[i];",
		New:    "      for (let i = hs.length - 1; i >= 0; i--) {\n        const h = hs[i];",
		Desc:   "a response's headers are sent in reverse order",
		Breaks: "ABI.md Encoding (response: headers in order); §5 Complete again (the same response is acknowledged)",
	},
	{
		ID: "js-missing-attempts-zero", File: "wasm/js/idem.mjs",
		Old:    "this.u32(r.reconcileAttempts, 'record.reconcileAttempts');",
		New:    "this.u32(r.reconcileAttempts ?? 0, 'record.reconcileAttempts');",
		Desc:   "a record without reconcileAttempts is sent with 0 instead of refused",
		Breaks: "README.md Required fields (every field of a record)",
	},
	// ---- decoding ---------------------------------------------------------
	{
		ID: "js-u64-read-signed", File: "wasm/js/idem.mjs",
		Old:    "u64() { this.need(8); const v = this.view.getBigUint64(this.off, true);",
		New:    "u64() { this.need(8); const v = this.view.getBigInt64(this.off, true);",
		Desc:   "a u64 of the answer is read signed: a token of 2^63 or more comes back negative",
		Breaks: "ABI.md Answer (u64 token, version)",
	},
	{
		ID: "js-empty-body-read-nil", File: "wasm/js/idem.mjs",
		Old:    "const body = bn === NIL ? null : this.raw(bn);",
		New:    "const body = bn === NIL || bn === 0 ? null : this.raw(bn);",
		Desc:   "an empty body of the answer comes back null (the nil marker confused with 0)",
		Breaks: "ABI.md Encoding (nil and empty survive the round trip)",
	},
	{
		ID: "js-retry-after-number", File: "wasm/js/idem.mjs",
		Old:    "decision: { kind: r.u8(), token: r.u64(), retryAfter: r.i64() },",
		New:    "decision: { kind: r.u8(), token: r.u64(), retryAfter: Number(r.i64()) },",
		Desc:   "retryAfter comes back a Number, not a bigint",
		Breaks: "README.md Values (durations are bigints)",
	},
	{
		ID: "js-ok-trailing-accepted", File: "wasm/js/idem.mjs",
		Old:    "  if (mask & CHANGED.expiresAt) next.expiresAt = r.time();\n  r.end();\n",
		New:    "  if (mask & CHANGED.expiresAt) next.expiresAt = r.time();\n",
		Desc:   "the decoder accepts an OK answer with bytes after its fields",
		Breaks: "ABI.md Malformed answers (bytes after the fields)",
	},
	{
		ID: "js-change-bits-swapped", File: "wasm/js/idem.mjs",
		Old:    "createdAt: 1024, completedAt: 2048, expiresAt: 4096,",
		New:    "createdAt: 1024, completedAt: 4096, expiresAt: 2048,",
		Desc:   "the change bits of completed_at and expires_at are swapped",
		Breaks: "ABI.md Answer (changed: bit 11 completed_at, 12 expires_at)",
	},
	{
		ID: "js-input-cache-off-by-one", File: "wasm/js/idem.mjs",
		Old:    "if (n > inst.inputBytes) {",
		New:    "if (n > inst.inputBytes + 1) {",
		Desc:   "a request one byte larger than the cached input buffer is written into it without idem_input",
		Breaks: "ABI.md Memory (idem_input again for a larger request)",
	},
	{
		ID: "js-memory-view-stale", File: "wasm/js/idem.mjs",
		Old:    "      let packed;\n      try {\n        if (n > inst.inputBytes) { inst.inputAddr = ex.idem_input(n) >>> 0; inst.inputBytes = n; }\n        new Uint8Array(ex.memory.buffer, inst.inputAddr, n).set(writer.buf.subarray(0, n));\n        packed = ex.idem_step(n);\n      } catch (err) {\n        // The instance's state is unknown after a trap: never reuse it.\n        inst = null;\n        replace();\n        // proc_exit throws a symbol (returnOnExit), a trap a RuntimeError.\n        const why = typeof err === 'symbol' ? 'it exited (proc_exit)' : String(err?.message ?? err);\n        throw new TrapError(`idem/wasm: the module trapped: ${why}`, { cause: err });\n      }\n      const addr = Number(BigInt.asUintN(64, packed) >> 32n);\n      const len = Number(BigInt.asUintN(32, packed));\n      // memory.buffer is read after the call: the guest may have grown it.\n      const memory = ex.memory.buffer;\n",
		New:    "      let packed;\n      const memory = ex.memory.buffer;\n      try {\n        if (n > inst.inputBytes) { inst.inputAddr = ex.idem_input(n) >>> 0; inst.inputBytes = n; }\n        new Uint8Array(ex.memory.buffer, inst.inputAddr, n).set(writer.buf.subarray(0, n));\n        packed = ex.idem_step(n);\n      } catch (err) {\n        // The instance's state is unknown after a trap: never reuse it.\n        inst = null;\n        replace();\n        // proc_exit throws a symbol (returnOnExit), a trap a RuntimeError.\n        const why = typeof err === 'symbol' ? 'it exited (proc_exit)' : String(err?.message ?? err);\n        throw new TrapError(`idem/wasm: the module trapped: ${why}`, { cause: err });\n      }\n      const addr = Number(BigInt.asUintN(64, packed) >> 32n);\n      const len = Number(BigInt.asUintN(32, packed));\n",
		Desc:   "the memory's buffer is taken before idem_step, not after: an answer in memory the step grew is not seen",
		Breaks: "ABI.md Memory (memory can grow during idem_step: a host re-reads the memory's buffer after each call)",
	},
	{
		ID: "js-answer-end-of-memory-refused", File: "wasm/js/idem.mjs",
		Old:    "if (addr + len > memory.byteLength) throw",
		New:    "if (addr + len >= memory.byteLength) throw",
		Desc:   "an answer that ends exactly at the end of the guest's memory is refused",
		Breaks: "ABI.md Malformed answers (only an address and length outside the memory)",
	},
	// ---- constants and the host's duties ----------------------------------
	{
		ID: "js-enum-expired-nothing-due", File: "wasm/js/idem.mjs",
		Old:    "LeaseExpired: 17, Expired: 18, NothingDue: 19, Pruned: 20,",
		New:    "LeaseExpired: 17, Expired: 19, NothingDue: 18, Pruned: 20,",
		Desc:   "the JavaScript DecisionKind's Expired and NothingDue have each other's number",
		Breaks: "README.md Values (enums are the Go core's numbers)",
	},
	{
		ID: "js-warning-filter-kept", File: "wasm/js/idem.mjs",
		Old:    "  } finally {\n    process.emitWarning = emit;\n  }\n",
		New:    "  } catch (err) {\n    process.emitWarning = emit;\n    throw err;\n  }\n",
		Desc:   "the warning filter stays installed after node:wasi loaded: the program's own WASI-worded warnings are swallowed",
		Breaks: "README.md Warnings (every other warning, then or later, prints)",
	},
	{
		ID: "js-trap-keeps-instance", File: "wasm/js/idem.mjs",
		Old:    "        inst = null;\n        replace();\n",
		New:    "        replace();\n",
		Desc:   "after a trap the old instance keeps serving steps until its replacement is ready",
		Breaks: "ABI.md Traps (until the new instance is ready a step throws TrapError)",
	},
	{
		ID: "js-step-no-retry-replace", File: "wasm/js/idem.mjs",
		Old:    "        if (pending === null) replace(); // the last replacement failed: try again\n",
		New:    "",
		Desc:   "after a failed replacement a step no longer starts another: only ready() does",
		Breaks: "ABI.md Traps (the step after such a failure tries again)",
	},
	{
		ID: "js-replace-error-stale", File: "wasm/js/idem.mjs",
		Old:    "(i) => { inst = i; pending = null; replaceError = null; },",
		New:    "(i) => { inst = i; pending = null; },",
		Desc:   "a replacement that succeeds keeps the error of the one that failed before: a later trap's TrapError names a stale cause",
		Breaks: "ABI.md Traps (ready() rejects with why the instance could not be made)",
	},
}
