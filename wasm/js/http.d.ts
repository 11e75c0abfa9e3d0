// Types of http.mjs: Go's idemhttp middleware for node:http and Express.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Core, Policy } from './idem.d.ts';
import type { Attempt, Executor, Store } from './executor.d.ts';

/** A handler as node:http and Express call it. */
export type Handler = (req: IncomingMessage & { body?: unknown; rawBody?: Buffer }, res: ServerResponse, next?: (err?: unknown) => void) => unknown;

export interface Route {
  /** The operation ("payments.create"): part of every record's scope. */
  useCase: string;
  /** The caller's name: an error or '' is answered 401. Either this or anonymous. */
  principal?: (req: IncomingMessage) => string | Promise<string>;
  /** Every caller shares one key space (keys must be unguessable). */
  anonymous?: boolean;
  /** The tenant; an error is answered 400. */
  tenant?: (req: IncomingMessage) => string | Promise<string>;
  /** The key's header (Idempotency-Key). */
  keyHeader?: string;
  /** A request without the key passes through unprotected (default: 400). */
  keyOptional?: boolean;
  /** Protected methods (POST and PATCH). */
  methods?: string[];
  /** Request media ranges taken (JSON only: application/json and any +json). */
  mediaTypes?: string[];
  /** The body limit (the policy's requestBytesMax). */
  bodyBytesMax?: number;
  /** Response headers stored and replayed besides Content-Type and Location. */
  replayHeaders?: string[];
  /** JSON Pointers left out of the fingerprint (a client timestamp), or the only ones that count. */
  exclude?: string[];
  include?: string[];
  /** A fingerprint spec of loadFingerprint()'s newSpec, instead of exclude and include. */
  fingerprint?: { of(body: Uint8Array): Uint8Array };
  /** Bounds the handler's run (60 s): its signal aborts with an ExecutionTimeoutError. */
  executionTimeoutMs?: number;
  /** Where each 5xx answered is logged, once (a 503 at warn, others at error). */
  logger?: { warn(msg: string, fields: object): void; error(msg: string, fields: object): void };
}

export declare function newRoute(executor: Executor, fingerprints: { newSpec(useCase: string, version: number, options?: object): { of(body: Uint8Array): Uint8Array } }, route: Route, options?: { underWay?: Set<Promise<unknown>> }): (handler: Handler) => Handler;

export declare function createIdem(options?: {
  store?: Store | ((core: Core) => Store | Promise<Store>);
  policy?: Policy;
  core?: Core;
  executorOptions?: { outcomeTimeout?: bigint; heartbeatInterval?: bigint; clock?: () => bigint };
}): Promise<{
  core: Core; store: Store; executor: Executor;
  route(route: Route): (handler: Handler) => Handler;
  /** Resolves once every protected request under way has answered and recorded its outcome. */
  drain(): Promise<void>;
}>;

/** The attempt a protected handler runs as; signal aborts when the lease is lost or the execution timeout passes. Null outside the middleware. */
export declare function attemptOf(req: IncomingMessage): (Attempt & { signal: AbortSignal }) | null;
/** The handler did nothing: its answer goes to this client only, and the key is free. */
export declare function notExecuted(req: IncomingMessage, cause?: Error): boolean;
/** The handler may have had its effect: the key stays unknown until the reconciler settles it. */
export declare function outcomeUnknown(req: IncomingMessage, cause?: Error): boolean;

export declare class ExecutionTimeoutError extends Error {}
export declare const KEY_HEADER_DEFAULT: 'Idempotency-Key';
export declare const REPLAYED_HEADER: 'Idempotent-Replayed';
export declare const ANONYMOUS_PRINCIPAL: 'anonymous';
export declare const PROBLEM_TYPE_BASE: string;
export declare const Code: Readonly<Record<string, string>>;
export interface Problem { type: string; title: string; status: number; detail: string; code: string; retryAfterSeconds: number }
export declare function newProblem(code: string, status: number, detail?: string): Problem;
export declare function writeProblem(res: ServerResponse, p: Problem): void;
export declare function retryAfterSeconds(ns: bigint): number;
