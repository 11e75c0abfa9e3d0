// Types of idem.mjs. Durations are bigint nanoseconds; times are bigint Unix
// nanoseconds, null for the zero time; enums are the Go core's numbers
// (the constants below, held to the Go values by api.test.mjs).
//
// Inputs are checked by the host before they reach the core: a value out of
// its field's range, of the wrong type, or missing is an IdemInputError.
// Ranges: u8 0..255; u32 0..2^32-1; u64 (Int64 below: a bigint, or a safe
// integer) 0..2^64-1; i64 -2^63..2^63-1; a time's seconds fit an i64.

export declare const ABI_VERSION: number;
export declare const ERROR_CODES: readonly string[];

/** core.Status. */
export declare const Status: { readonly Absent: 0; readonly InProgress: 1; readonly Completed: 2; readonly FailedRetryable: 3; readonly Unknown: 4; readonly Expired: 5 };
/** core.EventKind. */
export declare const EventKind: { readonly Invalid: 0; readonly Reserve: 1; readonly Complete: 2; readonly Fail: 3; readonly MarkUnknown: 4; readonly Heartbeat: 5; readonly Resolve: 6; readonly Sweep: 7; readonly Evict: 8 };
/** core.Verdict. */
export declare const Verdict: { readonly Invalid: 0; readonly Executed: 1; readonly NotExecuted: 2; readonly StillUnknown: 3 };
/** core.DecisionKind. */
export declare const DecisionKind: {
  readonly Invalid: 0; readonly Execute: 1; readonly Replay: 2; readonly Mismatch: 3; readonly InFlight: 4; readonly Reconciling: 5;
  readonly Completed: 6; readonly Acknowledged: 7; readonly Failed: 8; readonly MarkedUnknown: 9; readonly Extended: 10;
  readonly Stale: 11; readonly Conflict: 12; readonly Resolved: 13; readonly Rescheduled: 14; readonly Abandoned: 15;
  readonly NotApplicable: 16; readonly LeaseExpired: 17; readonly Expired: 18; readonly NothingDue: 19; readonly Pruned: 20; readonly Evicted: 21;
};
/** core.WriteKind. */
export declare const WriteKind: { readonly None: 0; readonly Insert: 1; readonly Update: 2; readonly Delete: 3 };
/** core.InFlightAnswer. */
export declare const InFlightAnswer: { readonly Conflict: 0; readonly Accepted: 1 };
/** core.ExpiryMode. */
export declare const ExpiryMode: { readonly Soft: 0; readonly Hard: 1 };
/** core.FailMode. */
export declare const FailMode: { readonly Keep: 0; readonly Evict: 1 };

/** An enum's number: any u8 passes the host (the core refuses the ones it does not know). */
export type Status = number;
export type EventKind = number;
export type Verdict = number;
export type DecisionKind = number;
export type WriteKind = number;

/** A 64-bit integer in: a bigint, or a safe integer (Number.isSafeInteger). Out, a bigint. */
export type Int64 = bigint | number;

export interface Header { name: string; value: string }

export interface Response {
  statusCode: number | bigint; // i64; the answer's is a number
  headers?: Header[] | null; // null (or left out) and [] are different values, as in Go
  body?: Uint8Array | null; // likewise
  schemaVersion?: number; // u32; 0 if left out
}

/** A record: every field is required (absentRecord builds one). */
export interface Record {
  tenant: string; principal: string; useCase: string; key: string;
  status: Status;
  fingerprint: Uint8Array; // 32 bytes
  token: Int64; // u64
  version: Int64; // u64
  response: Response;
  lastErrorCode: string;
  lockedUntil: bigint | null;
  reconcileAfter: bigint | null;
  reconcileAttempts: number; // u32
  createdAt: bigint | null;
  completedAt: bigint | null;
  expiresAt: bigint | null;
}

/** A record as step returns it: 64-bit values are bigints, and the response is whole. */
export interface SteppedRecord extends Record {
  token: bigint;
  version: bigint;
  response: Required<Response>;
}

/**
 * An event: kind and now are required; the other fields may be left out and
 * are then their Go zero values (the core ignores the fields that do not
 * count for the kind, and refuses a missing one that does).
 */
export interface Event {
  kind: EventKind;
  now: bigint | null;
  fingerprint?: Uint8Array; // 32 bytes; zeros if left out
  token?: Int64; // u64
  response?: Response;
  errorCode?: string;
  verdict?: Verdict;
}

/** A policy: every field is required (policyDefault builds one). Durations are i64 nanoseconds. */
export interface Policy {
  leaseDuration: Int64; ttl: Int64; inFlightWait: Int64; inFlightAnswer: number;
  retryAfter: Int64; expiry: number; fail: number;
  reconcileBackoffBase: Int64; reconcileBackoffMax: Int64; reconcileAttemptsMax: number; tombstoneRetention: Int64;
  keyBytesMax: Int64; requestBytesMax: Int64; responseBytesMax: Int64;
}

export interface Transition {
  decision: { kind: DecisionKind; token: bigint; retryAfter: bigint };
  write: { kind: WriteKind; expectVersion: bigint; expectToken: bigint };
}

export interface Core {
  readonly abiVersion: number;
  /**
   * core.Step. Throws IdemError for an event the core refuses, IdemInputError
   * for a value the host refuses, TrapError after a trap, MalformedAnswerError
   * for an answer it cannot decode; the record passed in is never modified.
   */
  step(record: Record, event: Event, policy: Policy): { transition: Transition; record: SteppedRecord };
  /** Resolves when the instance is usable (after a trap, once it is replaced); rejects with a TrapError if it cannot be. */
  ready(): Promise<void>;
}

export declare function load(options?: { wasm?: BufferSource | URL | string }): Promise<Core>;
export declare function policyDefault(): Policy;
export declare function absentRecord(scope: { tenant?: string; principal: string; useCase: string; key: string }): SteppedRecord;

export declare class IdemError extends Error { code: string }
export declare class IdemInputError extends RangeError {
  /** The field, as 'event.response.headers[0].name'. */
  field: string;
  /** The value given (undefined for a missing field). */
  value: unknown;
}
export declare class AbiVersionError extends Error {}
export declare class TrapError extends Error {}
export declare class MalformedAnswerError extends Error {}
