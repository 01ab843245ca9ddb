/**
 * The real Claude Code CLI as a test peer (issue 24): installed on demand into a cache folder
 * (its native binary is about 245 MB, too much for a dev dependency every `npm ci` pays for),
 * a fake Anthropic server shaped for it, and one `claude -p` run in a folder of its own.
 * @module
 */
import { Buffer } from "node:buffer";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { validateAnthropicRequest } from "../../lib/testing/validate.ts";
import { anthropicEvents, type FakeReply } from "../../lib/testing/wire.ts";

/**
 * The Claude Code release the tests run (`npm view @anthropic-ai/claude-code version` on
 * 2026-12-03). Pinned: its hook and MCP behaviour is what the tests assert.
 */
export const CLAUDE_CODE_VERSION = "2.1.332";

/** `${XDG_CACHE_HOME:-~/.cache}/sprout-agent-tests/claude-code-VERSION`. */
export function claudeCodeDir(): string {
  const cache = process.env["XDG_CACHE_HOME"] || join(homedir(), ".cache");
  return join(cache, "sprout-agent-tests", `claude-code-${CLAUDE_CODE_VERSION}`);
}

/** How long one install may take before its whole process group is killed (ms). */
const INSTALL_MS = 300_000;

/**
 * The path of the `claude` binary, installing the pinned release first when it is not in the
 * cache (`npm install --prefix` into a temporary folder, then renamed into place, so no
 * runner ever sees a half-installed one; runners starting together wait for the one that
 * installs, on a lock folder). Resolves `{ skip }` with why when the install fails or takes
 * longer than 5 minutes (no network, no npm, a stalled registry): the tests that need it then
 * skip, saying so. Never hangs: npm runs in a process group of its own, killed whole at the
 * deadline (its postinstall script is a grandchild), and a lock older than an install can
 * last is taken over. Await it at a test file's top level, before its `describe`.
 */
export async function installClaudeCode(): Promise<{ bin: string } | { skip: string }> {
  const dir = claudeCodeDir();
  const bin = join(dir, "node_modules", ".bin", "claude");
  if (existsSync(bin)) return { bin };
  const lock = `${dir}.lock`;
  mkdirSync(dirname(dir), { recursive: true });
  const start = Date.now();
  for (;;) {
    const failed = failureSince(dir, start);
    if (failed !== undefined) return { skip: failed };
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (existsSync(bin)) return { bin };
      // Left by a killed run, or held past any install's deadline: taken over.
      if (Date.now() - lockTime(lock) > INSTALL_MS + 60_000) rmSync(lock, { recursive: true, force: true });
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  try {
    const failed = failureSince(dir, start);
    if (failed !== undefined) return { skip: failed };
    return existsSync(bin) ? { bin } : await install(dir, bin);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Why the install failed, when it did at or after `since` (ms; `DIR.failed`, written by {@link install}). */
function failureSince(dir: string, since: number): string | undefined {
  try {
    if (statSync(`${dir}.failed`).mtimeMs < since - 1000) return undefined;
    return readFileSync(`${dir}.failed`, "utf8");
  } catch {
    return undefined;
  }
}

/** When the lock folder was made (ms since the epoch; 0 when it is gone). */
function lockTime(lock: string): number {
  try {
    return statSync(lock).mtimeMs;
  } catch {
    return 0;
  }
}

/** `npm install --prefix` into a temporary folder, renamed to `dir` when it worked. */
async function install(dir: string, bin: string): Promise<{ bin: string } | { skip: string }> {
  const tmp = `${dir}.${process.pid}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const npm = await runGroup("npm", [
    "install",
    "--prefix",
    tmp,
    "--no-audit",
    "--no-fund",
    "--loglevel=error",
    "--fetch-retries=1",
    `@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}`,
  ], { timeoutMs: INSTALL_MS });
  if (npm.code !== 0 || !existsSync(join(tmp, "node_modules", ".bin", "claude"))) {
    rmSync(tmp, { recursive: true, force: true });
    const why = npm.timedOut
      ? `npm did not finish within ${INSTALL_MS / 1000} s`
      : npm.stderr.trim().split("\n").slice(0, 3).join("; ") || `exit ${npm.code}`;
    const skip = `could not install @anthropic-ai/claude-code@${CLAUDE_CODE_VERSION} into ${dir}: ${why}`;
    writeFileSync(`${dir}.failed`, skip); // the runners waiting for this install skip at once
    return { skip };
  }
  rmSync(`${dir}.failed`, { force: true });
  rmSync(dir, { recursive: true, force: true }); // a broken earlier install, without its binary
  renameSync(tmp, dir);
  return existsSync(bin) ? { bin } : { skip: `${bin} is missing after the install` };
}

/** How a {@link runGroup} process ended. */
interface GroupRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** True when it was killed at its deadline. */
  timedOut: boolean;
}

/**
 * Runs `command` in a process group of its own and resolves when it exits: the group is then
 * killed whole (what it started and left behind: MCP servers, hook commands, a postinstall
 * script), and so it is at `timeoutMs`. Resolves within 2 s of the exit even when a straggler
 * that escaped the group still holds the output pipes (they are then let go). Never rejects:
 * a command that cannot start is exit code `null` with the error as its stderr.
 */
function runGroup(
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; timeoutMs: number },
): Promise<GroupRun> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? (process.env as Record<string, string>),
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    child.stdout!.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr!.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch { /* the group is gone */ }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, options.timeoutMs);
    let settled = false;
    const done = (code: number | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ code, stdout, stderr, timedOut });
    };
    child.once("error", (error) => {
      stderr += error.message;
      done(null);
    });
    child.once("exit", (code) => {
      killGroup();
      const letGo = setTimeout(() => {
        child.stdout!.destroy();
        child.stderr!.destroy();
        done(code);
      }, 2000);
      child.once("close", () => {
        clearTimeout(letGo);
        done(code);
      });
    });
  });
}

/** One request Claude Code sent to the fake. */
export interface ClaudeRequest {
  method: string;
  /** The path with its query string, e.g. `/v1/messages?beta=true`. */
  url: string;
  /** The parsed JSON body (`{}` for none). */
  body: Record<string, unknown>;
  /** Why the fake answered 400 (the validator's first problem), when it did. */
  rejected?: string;
}

/** A running fake Anthropic server for Claude Code. */
export interface ClaudeFake {
  /** For `ANTHROPIC_BASE_URL`. */
  url: string;
  /** Every request, in arrival order. */
  requests: ClaudeRequest[];
  /** The `POST /v1/messages` requests only (one per model turn). */
  turns(): ClaudeRequest[];
  close(): Promise<void>;
}

/**
 * The fake Anthropic Messages API as Claude Code uses it: `HEAD /` (its reachability probe)
 * answers 200; each `POST /v1/messages?beta=true` is checked by the same validator as the
 * agent's fake (lib/testing/validate.ts) with one allowance for this peer, the `role: "system"`
 * messages Claude Code puts inside `messages` (the real API accepts them from it), and is
 * answered with `reply(request, index)` streamed in the wire's real SSE events
 * (lib/testing/wire.ts). `reply` may be async (to change a hook server's state between turns).
 * Anything else answers 404.
 */
export async function startClaudeFake(
  reply: (request: ClaudeRequest, index: number) => FakeReply | Promise<FakeReply>,
): Promise<ClaudeFake> {
  const requests: ClaudeRequest[] = [];
  const sockets = new Set<Socket>();
  let served = 0;
  const server = createServer((req, res) => {
    void (async () => {
      const raw = await readBody(req);
      let body: Record<string, unknown> = {};
      try {
        if (raw !== "") body = JSON.parse(raw) as Record<string, unknown>;
      } catch { /* recorded as {} and rejected below */ }
      const request: ClaudeRequest = { method: req.method ?? "", url: req.url ?? "/", body };
      requests.push(request);
      const path = request.url.split("?")[0];
      if (request.method === "HEAD" && path === "/") {
        res.writeHead(200).end();
        return;
      }
      if (request.method !== "POST" || path !== "/v1/messages") {
        res.writeHead(404, { "content-type": "application/json" }).end(
          JSON.stringify({
            type: "error",
            error: { type: "not_found_error", message: `(fake) no ${req.method} ${path}` },
          }),
        );
        return;
      }
      const messages = Array.isArray(body["messages"]) ? body["messages"] as Array<Record<string, unknown>> : [];
      const problems = validateAnthropicRequest({ ...body, messages: messages.filter((m) => m["role"] !== "system") });
      if (problems.length > 0) {
        request.rejected = problems[0]!;
        res.writeHead(400, { "content-type": "application/json" }).end(
          JSON.stringify({ type: "error", error: { type: "invalid_request_error", message: problems[0] } }),
        );
        return;
      }
      const index = served++;
      const turn = await reply(request, index);
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      for (const piece of anthropicEvents(turn, body, index + 1)) {
        if ("pause" in piece) continue;
        const data = typeof piece.data === "string" ? piece.data : JSON.stringify(piece.data);
        res.write(`${piece.event === undefined ? "" : `event: ${piece.event}\n`}data: ${data}\n\n`);
      }
      res.end();
    })().catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(error));
      else res.destroy();
    });
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    turns: () => requests.filter((r) => r.method === "POST" && r.rejected === undefined),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    req.on("data", (c: Uint8Array) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** How one `claude -p` run ended. */
export interface ClaudeRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `claude -p PROMPT ARGS…` in `cwd`, offline against `fake` (its `url`): its home is
 * `home` (no settings of the machine's user), no traffic but the model's, MCP servers
 * connected before the first request (`MCP_CONNECTION_NONBLOCKING=0`; in `-p` mode it
 * otherwise asks the model before a slow stdio server is up). The environment is the test's
 * without any Anthropic or sprout-agent setting, plus `env`. Claude Code runs in a process
 * group of its own, killed whole when it exits (the MCP servers and hook commands it started)
 * or at `timeoutMs` (default 120 s), so a run always ends.
 */
export async function runClaude(options: {
  bin: string;
  fake: Pick<ClaudeFake, "url">;
  cwd: string;
  home: string;
  prompt: string;
  args?: string[];
  env?: Record<string, string>;
  timeoutMs?: number;
}): Promise<ClaudeRun> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(SPROUT_AGENT_|ANTHROPIC_|CLAUDE_|MCP_)/.test(k)) env[k] = v;
  }
  Object.assign(env, {
    HOME: options.home,
    ANTHROPIC_BASE_URL: options.fake.url,
    ANTHROPIC_API_KEY: "sk-ant-fake-key-for-tests",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_TELEMETRY: "1",
    MCP_CONNECTION_NONBLOCKING: "0",
    NO_COLOR: "1",
    ...options.env,
  });
  const timeoutMs = options.timeoutMs ?? 120_000;
  const run = await runGroup(options.bin, ["-p", options.prompt, ...(options.args ?? [])], {
    cwd: options.cwd,
    env,
    timeoutMs,
  });
  const stderr = run.timedOut ? `${run.stderr}\n(killed: still running after ${timeoutMs} ms)` : run.stderr;
  return { code: run.code, stdout: run.stdout, stderr };
}
