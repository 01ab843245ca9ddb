/**
 * The permission prompt of `cli.ts run` on a terminal (SPEC section 7.8): a question on
 * stderr, one line of answer from stdin, one question at a time. Used only when stdin and
 * stderr are both a terminal and the prompt came from the arguments; elsewhere no one can
 * answer and an `ask` is a denial.
 * @module
 */

import type { PermissionAsk, PermissionOutcome } from "../hooks/permission.ts";

/** A readable stream such as `process.stdin`: `data` chunks and an `end`. */
export interface LineInput {
  on(event: "data" | "end", listener: (chunk: string | Uint8Array) => void): unknown;
  off(event: "data" | "end", listener: (chunk: string | Uint8Array) => void): unknown;
  resume(): unknown;
  pause(): unknown;
}

/** The answer a typed line means: `y`/`yes` once, `a`/`always`, `N`/`never`, anything else no. */
export function answerOf(line: string | undefined): PermissionOutcome {
  const word = (line ?? "").trim();
  if (/^(y|yes)$/i.test(word)) return "allow_once";
  if (/^(a|always)$/i.test(word)) return "allow_always";
  if (word === "N" || /^never$/i.test(word)) return "reject_always";
  return "reject_once";
}

/**
 * One line at a time from `input`, one question at a time: what the permission prompt and the
 * elicitation prompt (`elicit.ts`) share, so that two questions never read the same stdin at once.
 */
export interface LineReader {
  /** The next line without its end, or `undefined` at the end of `input` or when `signal` aborts. */
  read(signal: AbortSignal): Promise<string | undefined>;
  /** Runs `question` after every question queued before it. */
  queue<T>(question: () => Promise<T>): Promise<T>;
}

/** A {@link LineReader} over `input` (stdin), paused between questions; `onLine` runs after each line read. */
export function lineReader(input: LineInput, onLine?: () => void): LineReader {
  let queue: Promise<unknown> = Promise.resolve();
  const decoder = new TextDecoder();
  let buffered = "";
  const read = (signal: AbortSignal) =>
    new Promise<string | undefined>((resolve) => {
      const finish = (line: string | undefined) => {
        input.off("data", onData);
        input.off("end", onEnd);
        signal.removeEventListener("abort", onAbort);
        input.pause();
        resolve(line);
      };
      const take = () => {
        const at = buffered.indexOf("\n");
        if (at < 0) return false;
        const line = buffered.slice(0, at).replace(/\r$/, "");
        buffered = buffered.slice(at + 1);
        onLine?.();
        finish(line);
        return true;
      };
      const onData = (chunk: string | Uint8Array) => {
        buffered += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
        take();
      };
      const onEnd = (_chunk?: string | Uint8Array) => finish(undefined);
      const onAbort = () => finish(undefined);
      if (signal.aborted) return resolve(undefined);
      if (take()) return;
      input.on("data", onData);
      input.on("end", onEnd);
      signal.addEventListener("abort", onAbort, { once: true });
      input.resume();
    });
  return {
    read,
    queue<T>(question: () => Promise<T>): Promise<T> {
      const asked = queue.then(question);
      queue = asked.catch(() => {});
      return asked;
    },
  };
}

/**
 * A {@link PermissionAsk} that says each question on stderr (`say` writes whole lines, starting
 * on a fresh line; `write` the last one, left open for the answer) and reads its answer from
 * `input` (stdin, or a {@link LineReader} shared with the elicitation prompt), one question at
 * a time. A cancel (`signal`) or the end of `input` answers `reject_once`.
 * @example
 * const ask = terminalAsk((line) => process.stderr.write(`${line}\n`), (text) => process.stderr.write(text), process.stdin);
 */
export function terminalAsk(
  say: (line: string) => void,
  write: (text: string) => void,
  input: LineInput | LineReader,
): PermissionAsk {
  const lines = "queue" in input ? input : lineReader(input);
  return (request, signal) =>
    lines.queue(async (): Promise<PermissionOutcome> => {
      if (signal.aborted) return "reject_once";
      const args = JSON.stringify(request.call.arguments);
      const shown = args.length > 200 ? `${args.slice(0, 199)}…` : args;
      say(`? ${request.call.name} ${shown}`);
      say(`  ${request.reason}`);
      write("  Allow it? [y] once, [a] always, [n] no, [N] never: ");
      const outcome = answerOf(await lines.read(signal));
      if (signal.aborted) write("\n");
      return outcome;
    });
}
