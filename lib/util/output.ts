/**
 * Output that is never lost (issue 9): a writer that counts the writes a stream has not
 * flushed yet, so the process can wait for them before it exits.
 *
 * Why counting: a pipe holds 64 KiB. Past that, Node, Bun and Deno queue writes in the
 * process, and `process.exit()` throws the queue away (Bun: `| (sleep 2; cat)` got 50 KB of
 * 310 KB). Bun reports neither `writableLength` nor `writableNeedDrain` for its queue and calls
 * the callback of an empty write at once, but it calls each real write's callback only once the
 * bytes are in the pipe. So the writer passes a callback to every write and counts.
 * (`redirectConsole`, which needs `node:util`, lives in console.ts, so that a run, which
 * builds these writers, never loads `node:util`.)
 * @module
 */

/**
 * How long a flush waits without progress, in ms: 5 s. A flush waits as long as the reader
 * keeps taking output, however slowly, and gives up once no write has completed for 5 s, so a
 * reader that never reads (a parent waiting for the exit before it reads) cannot hold the
 * process forever. Below Docker's 10 s stop grace.
 */
export const FLUSH_TIMEOUT_MS = 5000;

/** A stream such as `process.stdout`: Node's `Writable.write(chunk, callback)` shape. */
export interface WritableLike {
  /**
   * Writes `chunk`. A `write` declared with a second parameter must call `callback` once the
   * chunk is handed to the OS (or failed); one declared with a single parameter is taken as
   * synchronous. The return value is ignored.
   */
  write(chunk: string, callback?: (error?: Error | null) => void): unknown;
  /** Used, when present, to learn that the reader has gone (`EPIPE`). */
  on?(event: "error", listener: (error: Error) => void): unknown;
}

/** A writer made by {@link trackedOutput}. */
export interface TrackedOutput {
  /** Writes `text` (dropped once the stream failed); never throws. */
  write(text: string): void;
  /** True once a write failed or the stream emitted `error` (the reader has gone). */
  readonly closed: boolean;
  /** Writes not yet flushed. */
  readonly pending: number;
  /**
   * Resolves `true` once every write so far is flushed or the stream failed, `false` once no
   * write has completed for `timeoutMs` (default {@link FLUSH_TIMEOUT_MS}) with writes still
   * pending. Never rejects.
   */
  flush(timeoutMs?: number): Promise<boolean>;
}

/** Options of {@link trackedOutput}. */
export interface TrackedOutputOptions {
  /** Called once when the stream fails: a write's error or its `error` event (e.g. `EPIPE`). */
  onClosed?: (error: Error) => void;
}

/**
 * Wraps `stream` in a writer that counts unflushed writes. It listens for `error` on the
 * stream (so an `EPIPE` is never an uncaught exception): after one, writes are dropped and
 * `flush` resolves at once.
 * @example
 * const out = trackedOutput(process.stdout);
 * out.write("a large line\n");
 * await out.flush(); // then process.exit(0) loses nothing
 */
export function trackedOutput(stream: WritableLike, options: TrackedOutputOptions = {}): TrackedOutput {
  const takesCallback = stream.write.length >= 2;
  let pending = 0;
  let closed = false;
  /** Each waiting flush: called after every completed write with whether all are done. */
  const waiters = new Set<(done: boolean) => void>();
  const settle = () => {
    const done = pending === 0 || closed;
    for (const wake of [...waiters]) wake(done);
  };
  const close = (error: Error) => {
    if (closed) return;
    closed = true;
    options.onClosed?.(error);
    settle();
  };
  stream.on?.("error", close);
  return {
    write(text) {
      if (closed) return;
      if (!takesCallback) {
        try {
          stream.write(text);
        } catch (error) {
          close(error as Error);
        }
        return;
      }
      pending++;
      let done = false;
      const finish = (error?: Error | null) => {
        if (done) return;
        done = true;
        pending--;
        if (error) close(error);
        settle();
      };
      try {
        stream.write(text, finish);
      } catch (error) {
        finish(error as Error);
      }
    },
    get closed() {
      return closed;
    },
    get pending() {
      return pending;
    },
    flush(timeoutMs = FLUSH_TIMEOUT_MS) {
      if (pending === 0 || closed) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const giveUp = () => {
          waiters.delete(wake);
          resolve(false);
        };
        let timer = setTimeout(giveUp, timeoutMs);
        const wake = (done: boolean) => {
          clearTimeout(timer);
          if (!done) {
            timer = setTimeout(giveUp, timeoutMs); // progress: the reader is reading
            return;
          }
          waiters.delete(wake);
          resolve(true);
        };
        waiters.add(wake);
      });
    },
  };
}
