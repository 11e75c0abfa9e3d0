// Types of executor.mjs and memstore.mjs: Go's Executor.Do for Node.js, and
// a memory store for it.
import type { Core, Event, Policy, Response } from './idem.d.ts';
import type { Applied, FlowRequest, Result } from './flow.d.ts';

export interface Scope { tenant: string; principal: string; useCase: string; key: string }

/** What an executor needs of a store (createMemoryStore's is one). */
export interface Store {
  /** Applies event to scope's record under policy (the store supplies now and, for a reserve, a fresh token). */
  apply(scope: Scope, event: Event, policy: Policy, options?: { held?: unknown; signal?: AbortSignal }): Promise<Applied>;
  /** Resolves once scope's record no longer has version and token, after waitMs, or rejects when signal aborts. */
  wait(scope: Scope, version: bigint, token: bigint, waitMs: number, signal?: AbortSignal): Promise<void>;
}

export interface Attempt { scope: Scope; token: bigint; lockedUntil: bigint | null }

export interface Executor {
  /** The policy the executor runs under. */
  readonly policy: Policy;
  do(request: FlowRequest, action: (a: { signal: AbortSignal; attempt: Attempt }) => Promise<Response>, options?: { signal?: AbortSignal }): Promise<Result>;
}

export declare function createExecutor(options: {
  core: Core; store: Store; policy: Policy;
  outcomeTimeout?: bigint; heartbeatInterval?: bigint; clock?: () => bigint;
}): Executor;

export declare function createMemoryStore(core: Core, options?: { clock?: () => bigint }): Store & { get(scope: Scope): unknown };
export declare function clockNow(): bigint;

/** A PostgreSQL store on store/pgx's table (pgstore.mjs); pool is a pg.Pool. */
export declare function createPgStore(core: Core, pool: unknown, options?: { schema?: string; table?: string }): Store & { close(): Promise<void> };

/** store/pgx's migrations from Node (pgmigrate.mjs): creates or upgrades idem_records in schema. */
export declare function migrate(pool: unknown, options?: { schema?: string }): Promise<void>;
export declare const SCHEMA_VERSION: number;
