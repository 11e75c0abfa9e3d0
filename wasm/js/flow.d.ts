// Types of flow.mjs: the executor's protocol (Go package flow) run in the
// module. Values are idem.mjs's (bigint nanoseconds, Unix-nanosecond times,
// null for no time).
import type { Core, Event, Policy, Record, Response, SteppedRecord, Transition } from './idem.d.ts';

export declare const EffectKind: Readonly<{ Apply: 1; Run: 2; Wait: 3; Answer: 4 }>;
export declare const ResultKind: Readonly<{ Executed: 1; Replayed: 2 }>;

export interface FlowConfig {
  policy: Policy;
  /** Bounds the write of an action's outcome (0 or absent: 10 s). */
  outcomeTimeout?: bigint;
  /** How often a running action's lease is extended (0 or absent: a third of the lease). */
  heartbeatInterval?: bigint;
}

export interface FlowRequest {
  tenant?: string; principal: string; useCase: string; key: string;
  /** 32 bytes: the request's fingerprint. */
  fingerprint: Uint8Array;
}

/** What a store applied (Go's store.Applied). */
export interface Applied { before: number; record: Record; transition: Transition; now: bigint | null }

export interface Result { kind: number; response: Required<Response>; token: bigint; recorded: boolean }

export type Effect =
  | { kind: 1; event: Required<Event>; held: SteppedRecord | Record | null; detached: boolean; timeout: bigint }
  | { kind: 2; attempt: { scope: { tenant: string; principal: string; useCase: string; key: string }; token: bigint; lockedUntil: bigint | null } }
  | { kind: 3; version: bigint; token: bigint; wait: bigint }
  | { kind: 4; panicked: boolean; result?: Result; error?: Error };

export declare class Flow {
  /** What the host must do now. */
  readonly next: Effect;
  readonly done: boolean;
  /** The response once done, or throws the answer's error (a FlowError, or the caller's own). */
  result(): Result;
  applied(applied: Applied | undefined, err?: Error | null): void;
  ran(response: Response | undefined, err?: Error | null): void;
  waited(elapsed: bigint): void;
  gone(err: Error): void;
  lease(sent: bigint): Lease;
  close(): void;
}

export declare class Lease {
  readonly event: Event;
  readonly interval: bigint;
  readonly tellBy: bigint | null;
  beaten(sent: bigint, now: bigint, applied: Applied | undefined, err?: Error | null): bigint;
  lost(now: bigint): { lost: boolean; cause: Error | null };
  beatTimeout(now: bigint): bigint;
}

export declare function beginFlow(core: Core, config: FlowConfig, request: FlowRequest): Flow;

export declare class NotExecutedError extends Error {
  code: string;
  constructor(message: string, options?: { code?: string; cause?: unknown });
}
export declare class StoreRejectedError extends Error {}
export declare class FlowError extends Error {
  code: string;
  status: number;
  retryAfter: bigint;
}
