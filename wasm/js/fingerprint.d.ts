// Types of fingerprint.mjs: idem's request fingerprint (Go's package
// fingerprint, compiled to ../fingerprint.wasm), byte for byte Go's.
//
// Arguments Go's types could not hold are refused before they reach the
// module: a TypeError for a value of the wrong type (a use case, pointer or
// body string with a lone surrogate too: it has no UTF-8 form), a
// RangeError for a number out of range.

/** The module layout version this host speaks (ABI.md, "The fingerprint module"). */
export declare const FINGERPRINT_ABI_VERSION: number;

/** Go's error kinds by name, in the module's kind order. */
export declare const FINGERPRINT_KINDS: readonly FingerprintErrorKind[];

/** The names of Go's fingerprint.Err* kinds. */
export type FingerprintErrorKind =
  | 'ErrSyntax' | 'ErrInvalidUTF8' | 'ErrSurrogate' | 'ErrDuplicateName'
  | 'ErrNumber' | 'ErrNumberOverflow' | 'ErrPrecision' | 'ErrTooDeep'
  | 'ErrTooLarge' | 'ErrTrailingData' | 'ErrBOM' | 'ErrPointer';

/** Go's *fingerprint.Error. */
export declare class FingerprintError extends Error {
  /** The Go Kind's name ('ErrUnidentified' for an error of no listed kind, which Go never returns). */
  readonly kind: FingerprintErrorKind | 'ErrUnidentified';
  /** The byte offset in the body where the problem was found; -1 when none (a pointer of newSpec, an absent required pointer). */
  readonly offset: number;
  /** Go's Error() text, byte for byte. */
  message: string;
}

/** The module misbehaved (a wrong layout version, a missing export, a trap, an undecodable answer), not the input. */
export declare class FingerprintModuleError extends Error {}

/** Body of a request: bytes, or a string taken as its UTF-8. */
export type Body = Uint8Array | string;

/** fingerprint.NewSpec's options. */
export interface SpecOptions {
  /** fingerprint.Include: only the values at these JSON Pointers count, in this order. [] is Include given no pointer, which Go refuses (ErrPointer); leave it out for no Include. */
  include?: string[];
  /** fingerprint.Exclude: the values at these JSON Pointers never count. */
  exclude?: string[];
  /** fingerprint.RequireIncluded: an included pointer that selects nothing is an ErrPointer. */
  requireIncluded?: boolean;
  /** fingerprint.AllowImpreciseNumbers: numbers a double cannot carry exactly are rounded, not refused. */
  allowImpreciseNumbers?: boolean;
  /** Canonicalizer.BytesMax: 0 (or left out) 1 MiB, negative no limit. A safe integer. */
  bytesMax?: number;
  /** Canonicalizer.DepthMax: 0 or less (or left out) 128; at most 10000. A safe integer. */
  depthMax?: number;
}

/** A compiled fingerprint definition (Go's *fingerprint.Spec). */
export interface Spec {
  /** Spec.Of: the 32-byte SHA-256 fingerprint of the body; throws FingerprintError. */
  of(body: Body): Uint8Array;
  /** Frees the spec in the module; of() throws a TypeError after it. A spec left to the garbage collector is freed too. */
  release(): void;
}

export interface Fingerprinter {
  readonly abiVersion: number;
  /**
   * fingerprint.NewSpec. useCase: a string; schemaVersion: an integer
   * 0..2^32-1. Throws FingerprintError (kind 'ErrPointer') for a malformed
   * or contradictory pointer.
   */
  newSpec(useCase: string, schemaVersion: number, options?: SpecOptions): Spec;
  /** fingerprint.Canonicalize with the default limits: the body's RFC 8785 canonical form. Throws FingerprintError. */
  canonicalize(body: Body): Uint8Array;
}

/**
 * Compiles and instantiates the module (options.wasm: its bytes, path or
 * URL; ../fingerprint.wasm by default). After it, every call is synchronous.
 */
export declare function loadFingerprint(options?: { wasm?: BufferSource | URL | string }): Promise<Fingerprinter>;
