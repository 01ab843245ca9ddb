/**
 * Retries of LLM requests (SPEC section 9): connection errors, 408, 429, 5xx, 529 and overload
 * errors (also an error event inside a stream) are retried with jittered exponential backoff
 * from 500 ms to 8 s, honouring `retry-after`/`retry-after-ms`, at most 4 attempts; 400, 401,
 * 403 and 404 are not. Shared by `anthropic.ts` and `openai.ts`.
 * @module
 */

import { AgentError } from "../util/errors.ts";
import { abortReason, sleep } from "../util/time.ts";

/** SPEC section 9: at most 4 attempts. */
export const MAX_ATTEMPTS = 4;
/** First backoff, in milliseconds. */
export const BASE_DELAY_MS = 500;
/** Largest computed backoff, in milliseconds. */
export const MAX_DELAY_MS = 8000;
/** A `retry-after` longer than this (ms) is not waited for: the request fails at once. */
export const MAX_RETRY_AFTER_MS = 60_000;

/**
 * One failed attempt, thrown by the attempt function given to {@link withRetry}.
 * `status` is the HTTP status (or the status the provider's stream error stands for);
 * `detail` is the provider's error text (never an API key).
 */
export class AttemptError extends Error {
  readonly status: number | undefined;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly detail: string;
  constructor(
    detail: string,
    options: { status?: number; retryable: boolean; retryAfterMs?: number; cause?: unknown },
  ) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "AttemptError";
    this.detail = detail;
    this.status = options.status;
    this.retryable = options.retryable;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** True for the HTTP statuses SPEC section 9 retries: 408, 429, 5xx (529 included). */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status <= 599);
}

/**
 * Reads `retry-after-ms` (milliseconds) or `retry-after` (seconds or an HTTP date).
 * @param now the current time in ms since the epoch (for HTTP dates); default `Date.now()`
 * @returns the wait in milliseconds, or `undefined` when absent or unreadable
 */
export function parseRetryAfter(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = headers.get("retry-after-ms");
  if (ms !== null && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return Math.ceil(Number(ms));
  const raw = headers.get("retry-after");
  if (raw === null) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(raw)) return Math.ceil(Number(raw) * 1000);
  const date = Date.parse(raw);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/**
 * The jittered backoff before retry number `attempt` (1-based): `base * 2^(attempt-1)` capped
 * at `max`, times a random factor in [0.8, 1.2], capped at `max` again.
 */
export function backoffDelay(
  attempt: number,
  options: { baseMs?: number; maxMs?: number; random?: () => number } = {},
): number {
  const base = options.baseMs ?? BASE_DELAY_MS;
  const max = options.maxMs ?? MAX_DELAY_MS;
  const nominal = Math.min(max, base * 2 ** (attempt - 1));
  const factor = 0.8 + 0.4 * (options.random ?? Math.random)();
  return Math.min(max, Math.round(nominal * factor));
}

/**
 * Options of {@link withRetry}.
 * @example
 * // Tests shorten the waits of a model's retries:
 * const model = createOpenAiModel({ apiKey: "k", model: "m", retry: { baseDelayMs: 1, maxDelayMs: 5 } });
 */
export interface RetryOptions {
  /** Names the provider in the final error, e.g. `Anthropic`. */
  provider: string;
  /** Aborts the attempt in flight and any wait; the promise rejects with an `AbortError`. */
  signal?: AbortSignal;
  /** Default {@link MAX_ATTEMPTS} (4). */
  maxAttempts?: number;
  /** Default {@link BASE_DELAY_MS} (500). */
  baseDelayMs?: number;
  /** Default {@link MAX_DELAY_MS} (8000). */
  maxDelayMs?: number;
  /** Injectable wait (tests); default {@link sleep}. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Injectable randomness in [0, 1); default `Math.random`. */
  random?: () => number;
  /** Called before each wait (SPEC: `LlmRequest.onRetry`). */
  onRetry?: (info: { attempt: number; delayMs: number; reason: string }) => void;
}

/**
 * Runs `attempt` until it succeeds, fails with a non-retryable {@link AttemptError}, or the
 * attempts run out. Any other error thrown by `attempt` is treated as a connection error
 * (retried), except an abort while `signal` is aborted.
 * @throws {AgentError} code `llm`, `status` set, naming the status and the provider's text:
 *   `Anthropic request failed with status 529 after 4 attempts: overloaded_error: Overloaded`
 * @throws an `AbortError` when `signal` aborts (during an attempt or a wait)
 */
export async function withRetry<T>(attempt: (n: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const maxAttempts = options.maxAttempts ?? MAX_ATTEMPTS;
  const wait = options.sleep ?? sleep;
  const signal = options.signal;
  for (let n = 1;; n++) {
    if (signal?.aborted) throw abortReason(signal);
    let failure: AttemptError;
    try {
      return await attempt(n);
    } catch (error) {
      if (signal?.aborted) throw abortReason(signal);
      failure = error instanceof AttemptError
        ? error
        : new AttemptError(`connection error: ${describe(error)}`, { retryable: true, cause: error });
    }
    const tooLong = failure.retryAfterMs !== undefined && failure.retryAfterMs > MAX_RETRY_AFTER_MS;
    if (!failure.retryable || n >= maxAttempts || tooLong) throw finalError(options.provider, failure, n);
    const backoff = backoffDelay(n, {
      ...(options.baseDelayMs === undefined ? {} : { baseMs: options.baseDelayMs }),
      ...(options.maxDelayMs === undefined ? {} : { maxMs: options.maxDelayMs }),
      ...(options.random === undefined ? {} : { random: options.random }),
    });
    const delayMs = Math.max(backoff, failure.retryAfterMs ?? 0);
    const reason = failure.status === undefined ? failure.detail : `status ${failure.status}: ${failure.detail}`;
    options.onRetry?.({ attempt: n, delayMs, reason });
    await wait(delayMs, signal);
  }
}

function finalError(provider: string, failure: AttemptError, attempts: number): AgentError {
  const status = failure.status === undefined ? "" : ` with status ${failure.status}`;
  const after = attempts > 1 ? ` after ${attempts} attempts` : "";
  return new AgentError("llm", `${provider} request failed${status}${after}: ${failure.detail}`, {
    cause: failure,
    ...(failure.status === undefined ? {} : { status: failure.status }),
  });
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  const inner = cause instanceof Error && cause.message && cause.message !== error.message ? ` (${cause.message})` : "";
  return `${error.message}${inner}`;
}
