/**
 * W3C trace context (https://www.w3.org/TR/trace-context/): `traceparent` parsed, checked and
 * formatted, new ids from `Math.random` (see `randomHex`), and the span the code runs in now, kept in
 * an `AsyncLocalStorage` so that every MCP request sent inside it carries it in `params._meta`
 * (SEP-414, SPEC section 10) without each caller passing it along.
 * @module
 */

import { AsyncLocalStorage } from "node:async_hooks";

/** The `_meta` key (and ACP `_meta` key) of the W3C `traceparent`. */
export const TRACEPARENT_META_KEY = "traceparent";
/** The `_meta` key of the W3C `tracestate`. */
export const TRACESTATE_META_KEY = "tracestate";

/**
 * A span's place in a trace: what a `traceparent` names, plus the `tracestate` passed along.
 * Ids are lowercase hex, never all zeros.
 */
export interface TraceContext {
  /** 32 hex digits. */
  traceId: string;
  /** 16 hex digits: this span. */
  spanId: string;
  /** 2 hex digits; `01` = sampled. */
  flags: string;
  /** The W3C `tracestate` list, passed on unchanged (checked, at most 512 characters). */
  tracestate?: string;
  /** The span this one is a child of (16 hex digits); absent for a root, or a parent read from a `traceparent`. */
  parentSpanId?: string;
}

/** A `traceparent`, and optionally a `tracestate`, to continue (as received in a `_meta`). */
export interface TraceParent {
  /** `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`. */
  traceparent: string;
  /** `key=value` list members separated by commas. */
  tracestate?: string;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZEROS = /^0+$/;
const TRACESTATE_MEMBER =
  /^[a-z0-9][a-z0-9_\-*/@]{0,255}=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;

/**
 * Reads a `traceparent` header value: version `00` exactly as specified; a later version is read
 * by its first four fields, as the W3C text asks. Ids of zeros, version `ff` and anything else
 * are `undefined` (then a new trace starts).
 * @example
 * parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
 * // {traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", flags: "01"}
 */
export function parseTraceparent(value: unknown): TraceContext | undefined {
  if (typeof value !== "string") return undefined;
  const match = TRACEPARENT.exec(value.trim());
  if (match === null) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string?,
  ];
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined;
  if (ZEROS.test(traceId) || ZEROS.test(spanId)) return undefined;
  return { traceId, spanId, flags };
}

/**
 * A `tracestate` value if it is a valid list (at most 32 `key=value` members, 512 characters),
 * blank members dropped; else `undefined`.
 */
export function parseTracestate(value: unknown): string | undefined {
  if (typeof value !== "string" || value.length > 512) return undefined;
  const members = value.split(",").map((m) => m.trim()).filter((m) => m !== "");
  if (members.length === 0 || members.length > 32) return undefined;
  return members.every((m) => TRACESTATE_MEMBER.test(m)) ? members.join(",") : undefined;
}

/** The `traceparent` of a context: `00-<traceId>-<spanId>-<flags>`. */
export function formatTraceparent(context: Pick<TraceContext, "traceId" | "spanId" | "flags">): string {
  return `00-${context.traceId}-${context.spanId}-${context.flags}`;
}

/**
 * `bytes` random bytes as hex, from `Math.random`, as OpenTelemetry JS's own id generator
 * makes them: ids must be unique, not secret (W3C Trace Context), and
 * `crypto.getRandomValues` would load Node's whole Web Crypto layer into every run (about 3 ms
 * of a start-up, paid by a command hook on every event; docs/PERFORMANCE.md).
 */
function randomHex(bytes: number): string {
  let hex = "";
  for (let i = 0; i < bytes; i++) hex += Math.floor(Math.random() * 256).toString(16).padStart(2, "0");
  return ZEROS.test(hex) ? randomHex(bytes) : hex;
}

/** A new random trace id: 32 lowercase hex digits, not all zeros. */
export function newTraceId(): string {
  return randomHex(16);
}

/** A new random span id: 16 lowercase hex digits, not all zeros. */
export function newSpanId(): string {
  return randomHex(8);
}

/**
 * A context to continue: the parsed `traceparent` (with its checked `tracestate`), or
 * `undefined` when it is missing or invalid.
 */
export function continueTrace(parent: Partial<TraceParent> | undefined): TraceContext | undefined {
  const context = parseTraceparent(parent?.traceparent);
  if (context === undefined) return undefined;
  const state = parseTracestate(parent?.tracestate);
  return state === undefined ? context : { ...context, tracestate: state };
}

/**
 * The `traceparent`/`tracestate` pair of an incoming `_meta` (ACP `session/prompt`), when it has
 * a valid `traceparent`; else `undefined`.
 */
export function traceParentFromMeta(meta: unknown): TraceParent | undefined {
  if (typeof meta !== "object" || meta === null) return undefined;
  const record = meta as Record<string, unknown>;
  const context = continueTrace({
    traceparent: record[TRACEPARENT_META_KEY] as string,
    tracestate: record[TRACESTATE_META_KEY] as string,
  });
  if (context === undefined) return undefined;
  return {
    traceparent: formatTraceparent(context),
    ...(context.tracestate === undefined ? {} : { tracestate: context.tracestate }),
  };
}

/**
 * A new span in `parent`'s trace (same trace id, flags and state, a new span id), or the root of
 * a new sampled trace when there is no parent.
 */
export function childSpan(parent: TraceContext | undefined): TraceContext {
  if (parent === undefined) return { traceId: newTraceId(), spanId: newSpanId(), flags: "01" };
  return { ...parent, spanId: newSpanId(), parentSpanId: parent.spanId };
}

const current = new AsyncLocalStorage<TraceContext>();

/** The span the code runs in now (set by {@link inSpan}), or `undefined`. */
export function currentSpan(): TraceContext | undefined {
  return current.getStore();
}

/** Runs `fn` with `span` as the current span, for it and everything it awaits. */
export function inSpan<T>(span: TraceContext, fn: () => T): T {
  return current.run(span, fn);
}

/**
 * The trace entries of a request's `_meta` (SEP-414): `traceparent` naming the current span,
 * and its `tracestate` if any; `{}` outside a span.
 */
export function traceMeta(): Record<string, string> {
  const span = current.getStore();
  if (span === undefined) return {};
  const meta: Record<string, string> = { [TRACEPARENT_META_KEY]: formatTraceparent(span) };
  if (span.tracestate !== undefined) meta[TRACESTATE_META_KEY] = span.tracestate;
  return meta;
}

/** The ids an event carries for exporters (SPEC section 11): its span, its trace, its parent span. */
export interface SpanIds {
  /** 32 hex digits. */
  traceId: string;
  /** 16 hex digits. */
  spanId: string;
  /** 16 hex digits; absent for a root span. */
  parentSpanId?: string;
}

/** The {@link SpanIds} of a span, or `undefined` for none. */
export function spanIds(span: TraceContext | undefined): SpanIds | undefined {
  if (span === undefined) return undefined;
  return span.parentSpanId === undefined
    ? { traceId: span.traceId, spanId: span.spanId }
    : { traceId: span.traceId, spanId: span.spanId, parentSpanId: span.parentSpanId };
}
