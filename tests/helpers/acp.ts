// deno-lint-ignore-file no-explicit-any
/**
 * Helpers for the ACP tests: the agent (`cli.ts acp`) as a child process under the current
 * runtime, speaking raw JSON-RPC lines; the ACP MCP fixture as a stdio server config or an
 * HTTP server; temp folders and scripts.
 * @module
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { repoRoot, tsCommand } from "./runtime.ts";
import { type HttpFixture, startHttpCommand } from "../fixtures/mcp/helpers.ts";

/** The ACP MCP fixture (tests/fixtures/acp/server.ts). */
export const fixtureFile = `${repoRoot}tests/fixtures/acp/server.ts`;

/** A temp folder removed by `cleanup()`. */
export function tempDir(): { path: string; file(name: string, text: string): string; cleanup(): void } {
  const path = mkdtempSync(join(tmpdir(), "sprout-acp-"));
  return {
    path,
    file(name, text) {
      const file = join(path, name);
      writeFileSync(file, text);
      return file;
    },
    cleanup: () => rmSync(path, { recursive: true, force: true }),
  };
}

/** Lines of a log file written by the fixture (empty when it does not exist yet). */
export function readLog(file: string): string[] {
  try {
    return readFileSync(file, "utf8").split("\n").filter((l) => l !== "");
  } catch {
    return [];
  }
}

/** The ACP `mcpServers` entry that runs the fixture over stdio under the current runtime. */
export function stdioFixture(name: string, env: Record<string, string> = {}): Record<string, unknown> {
  const [command, ...args] = tsCommand(fixtureFile);
  return { name, command: command!, args, env: Object.entries(env).map(([k, v]) => ({ name: k, value: v })) };
}

/** The fixture served over HTTP, started under the current runtime. */
export function startHttpFixture(env: Record<string, string> = {}): Promise<HttpFixture> {
  const [command, ...args] = tsCommand(fixtureFile);
  return startHttpCommand(command!, [...args, "--http"], { ...process.env, ...env });
}

/** A JSON-RPC message from the agent. */
export type Message = Record<string, unknown> & {
  id?: unknown;
  method?: string;
  params?: any;
  result?: any;
  error?: any;
};

/** The agent under test, spoken to in raw lines. */
export interface RawAgent {
  child: ChildProcessWithoutNullStreams;
  /** Every message received so far, in order. */
  messages: Message[];
  stderr(): string;
  /** Writes one line (a `\n` is added). */
  sendLine(line: string): void;
  send(message: Record<string, unknown>): void;
  /** Sends a request with a fresh numeric id and resolves with its response. */
  request(method: string, params?: unknown): Promise<Message>;
  /** Resolves with the first message (from `from` on) that matches. */
  waitFor(match: (m: Message) => boolean, from?: number, timeoutMs?: number): Promise<Message>;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  /** Ends stdin and waits for the exit; SIGKILL after `timeoutMs`. */
  close(timeoutMs?: number): Promise<number | null>;
}

/** Spawns `cli.ts acp` under the current runtime with `env` added to the test's environment. */
export function spawnAgent(env: Record<string, string>): RawAgent {
  const [command, ...args] = tsCommand("cli.ts");
  const child = spawn(command!, [...args, "acp"], {
    cwd: repoRoot,
    env: { ...process.env, NO_COLOR: "1", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const messages: Message[] = [];
  let err = "";
  let pending = "";
  const waiters = new Set<() => void>();
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    pending += chunk;
    let nl: number;
    while ((nl = pending.indexOf("\n")) !== -1) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (line.trim() === "") continue;
      messages.push(JSON.parse(line) as Message); // a non-JSON line on stdout fails the test
      for (const wake of [...waiters]) wake();
    }
  });
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => (err += chunk));
  child.stdin.on("error", () => {});
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  let nextId = 1000;
  const waitFor = (match: (m: Message) => boolean, from = 0, timeoutMs = 30_000) =>
    new Promise<Message>((resolve, reject) => {
      const check = () => {
        const found = messages.slice(from).find(match);
        if (found === undefined) return false;
        waiters.delete(check);
        clearTimeout(timer);
        resolve(found);
        return true;
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(
          new Error(
            `No matching message after ${timeoutMs} ms; got ${
              JSON.stringify(messages.slice(from)).slice(0, 2000)
            }; stderr: ${err.slice(-2000)}`,
          ),
        );
      }, timeoutMs);
      if (!check()) waiters.add(check);
    });
  const agent: RawAgent = {
    child,
    messages,
    stderr: () => err,
    sendLine: (line) => void child.stdin.write(`${line}\n`),
    send: (message) => agent.sendLine(JSON.stringify(message)),
    request(method, params) {
      const id = nextId++;
      const from = messages.length;
      agent.send({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) });
      return waitFor((m) => m.id === id && m.method === undefined, from);
    },
    waitFor,
    exited,
    async close(timeoutMs = 10_000) {
      child.stdin.end();
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
  return agent;
}

/** Resolves with `promise`'s value, or with `"timeout"` after `ms` (the timer never outlives it). */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | "timeout"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([promise, new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `check` every 50 ms until it is true or `ms` pass; returns its last value. */
export async function eventually(check: () => boolean, ms = 5000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

export { alive } from "./processes.ts";
