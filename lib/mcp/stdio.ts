/**
 * The stdio side of the MCP client: spawning a server in its own process group with a
 * cleared environment, newline-delimited JSON framing with a size cap, a bounded stderr
 * tail, and killing whole process groups (on close, on kill, and when the agent exits).
 * SPEC section 10.
 * @module
 */

import type { ChildProcess } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import process from "node:process";
import { AgentError } from "../util/errors.ts";
import { withTimeout } from "../util/time.ts";
import type { JsonRpcId } from "./jsonrpc.ts";
import { killAllServers, killGroup, liveGroups } from "./exit.ts";
import { JsonIdScanner } from "./line-scan.ts";
import type { McpExitInfo, StdioServerConfig } from "./types.ts";

/** Variables passed from the agent's environment to every stdio server (SPEC section 10). */
export const PASS_THROUGH_ENV: readonly string[] = [
  "PATH",
  "HOME",
  "USER",
  "LANG",
  "TERM",
  "TMPDIR",
  "SHELL",
  "DENO_DIR",
  "BUN_INSTALL",
  "XDG_CACHE_HOME",
  "NODE_PATH",
  "npm_config_cache",
];

/** The size of the stderr tail kept per server, in bytes (UTF-16 units, close enough). */
export const STDERR_TAIL_BYTES = 64 * 1024;
/** The longest stderr line handed to `onStderrLine`, in UTF-16 units; a longer one is handed on in pieces. */
export const STDERR_LINE_CHARS = 16 * 1024;

/**
 * The environment a stdio server gets: the pass-through variables (and every `LC_*`) from
 * `parent`, then the server's own `env`. Nothing else: API keys never leak.
 * @example childEnv({ PATH: "/bin", ANTHROPIC_API_KEY: "k" }, { TOKEN: "t" }) // {PATH, TOKEN}
 */
export function childEnv(
  parent: Record<string, string | undefined>,
  own: Record<string, string>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(parent)) {
    if (value === undefined) continue;
    if (PASS_THROUGH_ENV.includes(key) || key.startsWith("LC_")) env[key] = value;
  }
  return { ...env, ...own };
}

/**
 * Finds `command` the way a shell would: a name with a `/` is resolved against `cwd`,
 * anything else is looked up in the folders of `path`. Returns the absolute path of an
 * executable file, or `undefined`.
 * @throws Deno's permission error when Deno may not check the executable bit (`accessSync`
 *   reads the user id, which needs `--allow-sys`)
 */
export function findCommand(command: string, path: string | undefined, cwd: string): string | undefined {
  const candidates = command.includes("/")
    ? [isAbsolute(command) ? command : resolve(cwd, command)]
    : (path ?? "").split(delimiter).filter((dir) => dir !== "").map((dir) => join(resolve(cwd, dir), command));
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch (error) {
      if (isPermissionError(error)) throw error;
      // not here
    }
  }
  return undefined;
}

/** Deno's error for an access it was not given (`NotCapable`; `PermissionDenied` before Deno 2). */
function isPermissionError(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return name === "NotCapable" || name === "PermissionDenied";
}

interface DenoPermissions {
  permissions: { querySync(descriptor: { name: string; kind?: string; command?: string }): { state: string } };
}

/**
 * Under Deno, the flags a stdio server needs that this process was not given: `--allow-sys`
 * (finding the command checks its executable bit, which reads the user id) and `--allow-run`
 * (spawning `file`). Empty under Node and Bun, and when both are granted.
 */
function missingDenoFlags(file: string | undefined): string[] {
  const deno = (globalThis as { Deno?: DenoPermissions }).Deno;
  if (deno === undefined) return [];
  const granted = (descriptor: { name: string; kind?: string; command?: string }) => {
    try {
      return deno.permissions.querySync(descriptor).state === "granted";
    } catch {
      return true; // cannot tell: report nothing rather than a wrong flag
    }
  };
  const missing: string[] = [];
  if (!granted(file === undefined ? { name: "run" } : { name: "run", command: file })) missing.push("--allow-run");
  if (!granted({ name: "sys", kind: "uid" })) missing.push("--allow-sys");
  return missing;
}

/** The reason a stdio server could not start for lack of Deno permissions, or undefined. */
function permissionProblem(file: string | undefined): string | undefined {
  const missing = missingDenoFlags(file);
  if (missing.length === 0) return undefined;
  if (missing.length === 2) return "Deno lacks --allow-run and --allow-sys, which stdio servers need";
  return `Deno lacks ${missing[0]} (stdio servers need --allow-run and --allow-sys)`;
}

let exitHookInstalled = false;

/** How long a killed server gets between SIGTERM and SIGKILL, in milliseconds. */
export const KILL_GRACE_MS = 500;

export { killAllServers };

/** A stdout line that went over `maxLineBytes` and was skipped (see {@link SpawnStdioOptions.onOversize}). */
export interface OversizeLine {
  /** Bytes of the line so far (all of it when `complete`), without the newline. */
  bytes: number;
  /** True when the line has ended. */
  complete: boolean;
  /** The message's top-level `id`, when it could be read from the bytes that went past. */
  id?: JsonRpcId;
  /** True when the message has a top-level `method` (a request or notification from the server). */
  isRequest: boolean;
}

/** Options of {@link spawnStdio}. */
export interface SpawnStdioOptions {
  /** Server name, for messages. */
  name: string;
  /** Default working folder (the server's `cwd` wins). */
  cwd: string;
  /** The agent's environment, source of the pass-through list. */
  env: Record<string, string | undefined>;
  /** Largest line accepted, in bytes; longer lines are skipped with a warning. */
  maxLineBytes: number;
  /** Each parsed JSON message from stdout. */
  onMessage: (message: unknown) => void;
  /**
   * A line longer than `maxLineBytes` is being skipped: called once per such line, as soon
   * as its top-level `id` has streamed past (`complete: false`), or when the line ends.
   */
  onOversize?: (line: OversizeLine) => void;
  onWarning: (message: string) => void;
  /**
   * Each line the server writes to stderr, as it arrives, without its line end (`\n` or
   * `\r\n`); a line longer than {@link STDERR_LINE_CHARS} comes in pieces of that size, and an
   * unfinished last line when the process ends. The tail is kept whether or not this is set.
   */
  onStderrLine?: (line: string) => void;
  /** The process ended (after its stderr was drained, at most ~100 ms later). */
  onExit: (info: McpExitInfo) => void;
}

/** A running stdio server. */
export interface StdioProcess {
  readonly pid: number;
  /** False once the process exited. */
  readonly alive: boolean;
  /** Resolves when the process has exited. */
  readonly exited: Promise<McpExitInfo>;
  /** The stderr tail so far. */
  stderrTail(): string;
  /** Writes one JSON message as a line. Rejects when stdin is closed. */
  send(message: unknown): Promise<void>;
  /**
   * Kills the whole process group: SIGTERM now, SIGKILL {@link KILL_GRACE_MS} later (at once
   * when the leader already exited).
   */
  kill(): void;
  /** Closes stdin, waits `graceMs`, SIGTERM to the group, waits, then SIGKILL to the group. */
  close(graceMs?: number): Promise<void>;
}

/** `node:child_process`, loaded by the first spawn: a run without stdio servers never loads it (issue 21). */
let childProcess: Promise<typeof import("node:child_process")> | undefined;

/**
 * Starts a stdio server in its own process group (`detached: true`). Asynchronous only
 * because the first call loads `node:child_process`; the process is spawned before it resolves.
 * @throws {AgentError} `mcp-connect` (a rejection) when the command is not found on `PATH` or
 *   cannot start, naming the missing Deno flag (`--allow-run`, `--allow-sys`) when that is why
 */
export async function spawnStdio(config: StdioServerConfig, options: SpawnStdioOptions): Promise<StdioProcess> {
  const { spawn } = await (childProcess ??= import("node:child_process"));
  const env = childEnv(options.env, config.env);
  const cwd = config.cwd ?? options.cwd;
  let file: string | undefined;
  try {
    file = findCommand(config.command, env.PATH, cwd);
  } catch (error) {
    const reason = permissionProblem(undefined) ?? `Deno may not check that command "${config.command}" is executable`;
    throw new AgentError("mcp-connect", `Cannot start server "${options.name}": ${reason}`, { cause: error });
  }
  if (file === undefined) {
    const where = config.command.includes("/") ? "not found or not executable" : "not found on PATH";
    throw new AgentError("mcp-connect", `Cannot start server "${options.name}": command "${config.command}" ${where}`);
  }
  let child: ChildProcess;
  try {
    child = spawn(file, config.args, { cwd, env, detached: true, stdio: ["pipe", "pipe", "pipe"] });
  } catch (error) {
    throw new AgentError("mcp-connect", `Cannot start server "${options.name}": ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (child.pid === undefined) {
    // The reason arrives later as an `error` event (Deno: a denied --allow-run); without a
    // listener it would be an uncaught error that ends the agent.
    child.on("error", () => {});
    const reason = permissionProblem(file) ?? `command "${config.command}" did not start`;
    throw new AgentError("mcp-connect", `Cannot start server "${options.name}": ${reason}`);
  }
  return new StdioChild(child, child.pid, options);
}

class StdioChild implements StdioProcess {
  readonly pid: number;
  readonly exited: Promise<McpExitInfo>;
  #child: ChildProcess;
  #options: SpawnStdioOptions;
  #alive = true;
  #stderr = "";
  #stderrDecoder = new TextDecoder();
  /** The unfinished stderr line, for `onStderrLine`. */
  #stderrLine = "";
  #lineParts: string[] = [];
  #lineBytes = 0;
  #skipping = false;
  /** While skipping a line: reads the id of the skipped message; undefined once reported. */
  #scan: JsonIdScanner | undefined;
  #skippedBytes = 0;
  #decoder = new TextDecoder();

  constructor(child: ChildProcess, pid: number, options: SpawnStdioOptions) {
    this.#child = child;
    this.pid = pid;
    this.#options = options;
    liveGroups.add(pid);
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      process.on("exit", killAllServers);
    }
    child.stdin?.on("error", () => {}); // EPIPE after the server died: reported through exit
    child.stdout?.on("data", (chunk: Uint8Array) => this.#onStdout(chunk));
    let stderrEnded: () => void = () => {};
    const stderrDone = new Promise<void>((r) => (stderrEnded = r));
    child.stderr?.on(
      "data",
      (chunk: Uint8Array) => this.#onStderr(this.#stderrDecoder.decode(chunk, { stream: true })),
    );
    child.stderr?.on("end", () => stderrEnded());
    child.stderr?.on("error", () => stderrEnded());
    this.exited = new Promise((resolveExit) => {
      let done = false;
      const finish = (code: number | null, signal: string | null, extra?: string) => {
        if (done) return;
        done = true;
        this.#alive = false;
        // The leader is gone, so the connection is dead: anything left in its process group
        // (a wrapper's background job, a worker it spawned) is an orphan. Kill it now, while
        // the group id is still known to be ours, instead of leaving it to outlive the agent.
        killGroup(pid, "SIGKILL");
        liveGroups.delete(pid);
        const settle = () => {
          this.#onStderr(this.#stderrDecoder.decode());
          if (this.#stderrLine !== "") this.#options.onStderrLine?.(this.#stderrLine);
          this.#stderrLine = "";
          if (extra) this.#appendStderr(extra);
          const info: McpExitInfo = { code, signal, stderrTail: this.#stderr };
          resolveExit(info);
          options.onExit(info);
        };
        // Give stderr a moment to drain, but never wait on a grandchild holding the pipe.
        void withTimeout(stderrDone, 100).then(settle);
      };
      child.on("exit", (code, signal) => finish(code, signal));
      child.on("error", (error) => finish(null, null, `\n${error.message}`));
    });
  }

  get alive(): boolean {
    return this.#alive;
  }

  stderrTail(): string {
    return this.#stderr;
  }

  send(message: unknown): Promise<void> {
    const stdin = this.#child.stdin;
    if (!this.#alive || !stdin || stdin.destroyed || !stdin.writable) {
      return Promise.reject(
        new AgentError("mcp", `Cannot write to server "${this.#options.name}": its stdin is closed`),
      );
    }
    return new Promise((resolveWrite, rejectWrite) => {
      stdin.write(`${JSON.stringify(message)}\n`, (error) => {
        if (error) {
          rejectWrite(new AgentError("mcp", `Cannot write to server "${this.#options.name}": ${error.message}`));
        } else resolveWrite();
      });
    });
  }

  kill(): void {
    if (!this.#alive) {
      killGroup(this.pid, "SIGKILL");
      liveGroups.delete(this.pid);
      return;
    }
    // SIGTERM first, so a server can stop what it started in other process groups (test-gate
    // kills its test run); SIGKILL the group KILL_GRACE_MS later whatever happens. Until then
    // the group stays in liveGroups, so an agent exiting meanwhile still kills it.
    killGroup(this.pid, "SIGTERM");
    const pid = this.pid;
    setTimeout(() => {
      killGroup(pid, "SIGKILL");
      liveGroups.delete(pid);
    }, KILL_GRACE_MS).unref?.();
  }

  async close(graceMs = 300): Promise<void> {
    if (this.#alive) {
      this.#child.stdin?.end();
      if (!(await this.#waitExit(graceMs))) {
        killGroup(this.pid, "SIGTERM");
        await this.#waitExit(700);
      }
    }
    // Always: a grandchild may outlive the leader (a wrapper shell's background job).
    this.kill();
    await this.#waitExit(1000);
  }

  async #waitExit(ms: number): Promise<boolean> {
    if (!this.#alive) return true;
    return (await withTimeout(this.exited.then(() => true), ms)) ?? false;
  }

  /** Server output on stderr: kept in the tail, and handed on line by line when asked. */
  #onStderr(text: string): void {
    this.#appendStderr(text);
    const onLine = this.#options.onStderrLine;
    if (onLine === undefined || text === "") return;
    const lines = (this.#stderrLine + text).split("\n");
    this.#stderrLine = lines.pop() ?? "";
    const pieces = (line: string) => {
      for (let at = 0; at < line.length || at === 0; at += STDERR_LINE_CHARS) {
        onLine(line.slice(at, at + STDERR_LINE_CHARS));
      }
    };
    for (const line of lines) pieces(line.endsWith("\r") ? line.slice(0, -1) : line);
    if (this.#stderrLine.length > STDERR_LINE_CHARS) {
      const keep = this.#stderrLine.length % STDERR_LINE_CHARS;
      pieces(this.#stderrLine.slice(0, this.#stderrLine.length - keep));
      this.#stderrLine = this.#stderrLine.slice(this.#stderrLine.length - keep);
    }
  }

  #appendStderr(text: string): void {
    if (text === "") return;
    this.#stderr += text;
    if (this.#stderr.length > STDERR_TAIL_BYTES) this.#stderr = this.#stderr.slice(-STDERR_TAIL_BYTES);
  }

  #onStdout(chunk: Uint8Array): void {
    let start = 0;
    while (start <= chunk.length) {
      const nl = chunk.indexOf(10, start);
      const end = nl === -1 ? chunk.length : nl;
      if (!this.#skipping && end > start) {
        if (this.#lineBytes + (end - start) > this.#options.maxLineBytes) {
          this.#skipping = true;
          this.#options.onWarning(
            `Skipped a line from server "${this.#options.name}" longer than ${this.#options.maxLineBytes} bytes (SPROUT_AGENT_MAX_LINE_BYTES)`,
          );
          // Read the id from the bytes kept so far (decoding kept every JSON punctuation byte),
          // then from every byte that streams past, without keeping them.
          this.#scan = new JsonIdScanner();
          this.#scan.push(new TextEncoder().encode(this.#lineParts.join("")));
          this.#skippedBytes = this.#lineBytes;
          this.#lineParts = [];
          this.#decoder = new TextDecoder();
        } else {
          this.#lineBytes += end - start;
          this.#lineParts.push(this.#decoder.decode(chunk.subarray(start, end), { stream: true }));
        }
      }
      if (this.#skipping) this.#skipped(chunk, start, end, nl !== -1);
      if (nl === -1) break;
      if (!this.#skipping) {
        this.#lineParts.push(this.#decoder.decode());
        this.#line(this.#lineParts.join(""));
      }
      this.#lineParts = [];
      this.#lineBytes = 0;
      this.#skipping = false;
      start = nl + 1;
    }
  }

  /**
   * Bytes `start`–`end` of a skipped line; reports it once its id and its kind (a response,
   * or a request from the server, whose ids are another id space) are known, or when it ends.
   */
  #skipped(chunk: Uint8Array, start: number, end: number, ended: boolean): void {
    this.#skippedBytes += end - start;
    const scan = this.#scan;
    if (scan === undefined) return; // already reported
    const known = () => scan.id !== undefined && (scan.hasMethod || scan.hasResult);
    if (!known()) scan.push(chunk, start, end);
    if (!known() && !ended) return;
    this.#scan = undefined;
    const line: OversizeLine = { bytes: this.#skippedBytes, complete: ended, isRequest: scan.hasMethod };
    if (scan.id !== undefined) line.id = scan.id;
    this.#options.onOversize?.(line);
  }

  #line(line: string): void {
    const text = line.trim();
    if (text === "") return;
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.#options.onWarning(
        `Ignored a line from server "${this.#options.name}" that is not JSON: "${text.slice(0, 200)}"`,
      );
      return;
    }
    this.#options.onMessage(message);
  }
}
