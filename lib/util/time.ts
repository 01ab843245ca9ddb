/**
 * Waiting and telling time: an abortable {@link sleep}, a {@link withTimeout} that gives up
 * waiting (it cancels nothing), and the two ways durations are written in messages
 * ({@link formatSeconds}, {@link formatDuration}). Timers are always cleared, so a finished
 * wait never holds the process open.
 * @module
 */

import { abortError, isAbortError } from "./errors.ts";

/**
 * The error an aborted wait rejects with: `signal.reason` when it is an `AbortError`,
 * else a fresh `AbortError` (so callers can test every cancel with `isAbortError`).
 * @example abortReason(AbortSignal.abort()).name // "AbortError"
 */
export function abortReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return isAbortError(reason) ? (reason as Error) : abortError();
}

/**
 * Waits `ms` milliseconds; rejects with {@link abortReason} as soon as `signal` aborts (at
 * once when it already has).
 * @example await sleep(100, controller.signal)
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal));
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Settles like `promise`, or resolves `undefined` once `ms` milliseconds have passed
 * first. The promise itself goes on (nothing is cancelled); the timer is cleared either way.
 * @example const info = await withTimeout(proc.exited, 500) // undefined: still running
 */
export async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Milliseconds as seconds with at most one decimal, for messages (`timed out after 2.5 s`);
 * the unit is the caller's.
 * @example formatSeconds(2500) // "2.5"; formatSeconds(30000) // "30"
 */
export function formatSeconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}

/**
 * A duration for people: under a second in whole milliseconds, else in seconds with one
 * decimal.
 * @example formatDuration(420) // "420 ms"; formatDuration(1530) // "1.5 s"
 */
export function formatDuration(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}
