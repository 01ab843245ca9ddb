/**
 * The CLI's process I/O: the one writer of stdout and of stderr (every write counted and
 * flushed before exit, lib/util/output.ts), `exit(code)`, and the secrets redacted from all
 * that is printed. The writers are built on first use, so a run pays for no stream wrapper,
 * TTY check or `error` listener before it prints (and `acp`, which writes stdout itself,
 * never builds the stdout one).
 * @module
 */

import process from "node:process";
import { killAllServers } from "../mcp/exit.ts";
import { AgentError } from "../util/errors.ts";
import { FLUSH_TIMEOUT_MS, type TrackedOutput, trackedOutput } from "../util/output.ts";
import { redact } from "../util/redact.ts";
import { formatSeconds } from "../util/time.ts";

/**
 * API keys, configured header values and the credential variables the MCP configuration
 * references, by value: redacted from everything printed (guarantee 6). The commands set it
 * once they have read the configuration.
 */
export const printed: { secrets: string[] } = { secrets: [] };

let stdoutWriter: TrackedOutput | undefined;
let stderrWriter: TrackedOutput | undefined;
let stdoutLost: number | undefined;
let exiting = false;

// Every byte for stdout and stderr goes through these writers, and every exit goes through
// exit() below, which waits for them to flush: a pipe holds 64 KiB, and process.exit() drops
// what the runtime still queues (Bun lost 260 KB of 310 KB behind a slow reader).
// A closed stdout (`cli.ts run --json … | head -1`) ends the run quietly, as SIGPIPE would.

/** The tracked writer of `process.stdout`, built on first use. */
export function stdout(): TrackedOutput {
  stdoutWriter ??= trackedOutput(process.stdout, {
    onClosed: (error: NodeJS.ErrnoException) => {
      stdoutLost = error.code === "EPIPE" ? 141 : 1;
      // A reader that went away is the quiet case; any other failure (a full disk) is said.
      if (stdoutLost === 1) process.stderr.write(`sprout-agent: Cannot write to stdout: ${error.message}\n`);
      exit(stdoutLost);
    },
  });
  return stdoutWriter;
}

/** The tracked writer of `process.stderr`, built on first use. */
export function stderr(): TrackedOutput {
  stderrWriter ??= trackedOutput(process.stderr);
  return stderrWriter;
}

/**
 * Whether stdin is a terminal (`process.stdin.isTTY`). Under Deno through `Deno.stdin`:
 * building `process.stdin` there loads the Node layer's streams, which a run that never reads
 * stdin must not pay before its first LLM request (issue 21). (Bun's `node:tty` costs as much
 * as its `process.stdin`, about 6 ms, and a run that prints pays it for stdout anyway.)
 */
export function stdinIsTerminal(): boolean {
  const deno = (globalThis as { Deno?: { stdin: { isTerminal(): boolean } } }).Deno;
  return deno === undefined ? process.stdin.isTTY === true : deno.stdin.isTerminal();
}

/** True once {@link exit} was called: the process is flushing its output and ending. */
export function isExiting(): boolean {
  return exiting;
}

/**
 * Ends the process with `code` once stdout and stderr are flushed, or once the reader has
 * taken no output for FLUSH_TIMEOUT_MS (5 s; then output is lost: a 0 becomes 1, with a line
 * on stderr). Stdio servers are killed first. A later call is ignored, except that a stdout
 * closed while flushing turns a 0 into 141 (EPIPE) or 1. process.exit() is explicit so a
 * stdin reader or a keep-alive socket cannot hold the process open. (Deno writes pipes
 * synchronously: there a reader that never reads holds the process until it closes the pipe.)
 */
export function exit(code: number): void {
  if (exiting) return;
  exiting = true;
  killAllServers();
  const out = stdoutWriter;
  void Promise.all([out?.flush(FLUSH_TIMEOUT_MS) ?? true, stderrWriter?.flush(FLUSH_TIMEOUT_MS) ?? true]).then(
    ([flushed]) => {
      if (!flushed) {
        process.stderr.write(
          `sprout-agent: Cannot flush stdout: the reader took no output for ${formatSeconds(FLUSH_TIMEOUT_MS)} s, ${
            out?.pending ?? 0
          } writes lost\n`,
        );
      }
      const lost = stdoutLost ?? (flushed ? undefined : 1);
      process.exit(code === 0 && lost !== undefined ? lost : code);
    },
  );
}

/**
 * Ends the process with the exit status `work` resolves to ({@link exit}), or, when it
 * rejects, with one line on stderr (`sprout-agent: MESSAGE`, secrets redacted; the stack only
 * for an error that is not an `AgentError`) and 2 for a usage, configuration or session error
 * (the caller's to fix, SPEC 12.6), 3 for a required server that could not start (SPEC 3.1),
 * 1 for the rest. Used by `runCli` and by the package's hook-bridge bundle (scripts/build.mjs).
 */
export function exitWhenDone(work: Promise<number>): void {
  work.then(
    (code) => exit(code),
    (error: unknown) => {
      const usage = error instanceof AgentError &&
        (error.code === "config" || error.code === "usage" || error.code === "session");
      const text = usage || error instanceof AgentError
        ? (error as Error).message
        : error instanceof Error
        ? error.stack ?? error.message
        : String(error);
      stderr().write(`sprout-agent: ${redact(text, printed.secrets)}\n`);
      // createAgent throws nothing else of the code mcp-connect.
      const required = error instanceof AgentError && error.code === "mcp-connect";
      exit(usage ? 2 : required ? 3 : 1);
    },
  );
}
