// Types of idem.mjs. Durations are bigint nanoseconds; times are bigint Unix
// nanoseconds, null for the zero time; enums are the Go core's numbers.

export declare const ABI_VERSION: number;
export declare const ERROR_CODES: readonly string[];

export interface Header { name: string; value: string }

export interface Response {
  statusCode: number;
  headers: Header[] | null; // null and [] are different values, as in Go
  body: Uint8Array | null;
  schemaVersion: number;
}

/** core.Status: 0 absent, 1 in_progress, 2 completed, 3 failed_retryable, 4 unknown, 5 expired. */
export type Status = number;

export interface Record {
  tenant: string; principal: string; useCase: string; key: string;
  status: Status;
  fingerprint: Uint8Array; // 32 bytes
  token: bigint;
  version: bigint;
  response: Response;
  lastErrorCode: string;
  lockedUntil: bigint | null;
  reconcileAfter: bigint | null;
  reconcileAttempts: number;
  createdAt: bigint | null;
  completedAt: bigint | null;
  expiresAt: bigint | null;
}

/** core.EventKind: 1 reserve, 2 complete, 3 fail, 4 mark_unknown, 5 heartbeat, 6 resolve, 7 sweep. */
export interface Event {
  kind: number;
  now: bigint | null;
  fingerprint: Uint8Array;
  token: bigint;
  response: Response;
  errorCode: string;
  verdict: number; // core.Verdict: 1 executed, 2 not_executed, 3 still_unknown
}

export interface Policy {
  leaseDuration: bigint; ttl: bigint; inFlightWait: bigint; inFlightAnswer: number;
  retryAfter: bigint; expiry: number; fail: number;
  reconcileBackoffBase: bigint; reconcileBackoffCap: bigint; reconcileAttemptsMax: number; tombstoneRetention: bigint;
  keyBytesMax: number; requestBytesMax: number; responseBytesMax: number;
}

export interface Result {
  decision: { kind: number; token: bigint; retryAfter: bigint }; // core.DecisionKind numbers
  write: { kind: number; expectVersion: bigint; expectToken: bigint }; // core.WriteKind: 0 none, 1 insert, 2 update, 3 delete
}

export interface Core {
  readonly abiVersion: number;
  /** core.Step. Throws IdemError for a refused event; the record passed in is not modified. */
  step(record: Record, event: Event, policy: Policy): { result: Result; record: Record };
  ready(): Promise<void>;
}

export declare function load(options?: { wasm?: BufferSource | URL | string }): Promise<Core>;
export declare function defaultPolicy(): Policy;
export declare function absentRecord(scope: { tenant?: string; principal: string; useCase: string; key: string }): Record;

export declare class IdemError extends Error { code: string }
export declare class AbiVersionError extends Error {}
export declare class TrapError extends Error {}
