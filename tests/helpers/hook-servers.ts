/**
 * Test helpers for the example hook servers (servers/*): start `main.ts` as a child under a
 * runtime and wait for its `listening on …` line; connect an MCP client over HTTP (a real
 * port, or in-process through `app.request`) or over stdio; post raw JSON-RPC.
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { runsOnce, type Runtime, runtime, tsCommand } from "./runtime.ts";

/** The runtimes to exercise servers under: all three in the one runner that runs slow checks, else the current one. */
export const serverRuntimes: Runtime[] = runsOnce ? ["bun", "deno", "node"] : [runtime()];

/** A hook server started as a child process. */
export interface StartedServer {
  /** `http://127.0.0.1:PORT/mcp`, from the first stdout line. */
  url: string;
  /** The first stdout line, verbatim. */
  firstLine: string;
  child: ChildProcess;
  /** Everything the child wrote on stderr so far. */
  stderr(): string;
  /** SIGTERM, then waits for the exit (SIGKILL after 5 s); resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** The environment children get: ours (Deno children need DENO_DIR and friends). */
export function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  return { ...env, ...extra };
}

/**
 * Starts `file` (a main.ts) under `which`, waits up to 60 s for its `listening on` line.
 * Unless `env` says otherwise, the child gets a fresh `XDG_STATE_HOME` (removed by `stop()`),
 * so the todo-enforcer's default durable store starts empty and no test sees another's lists.
 */
export async function startServer(
  file: string,
  args: string[],
  which: Runtime,
  env: Record<string, string> = {},
): Promise<StartedServer> {
  const [command = "", ...rest] = tsCommand(file, which);
  const stateHome = env.XDG_STATE_HOME === undefined ? mkdtempSync(join(tmpdir(), "sprout-state-")) : undefined;
  const child = spawn(command, [...rest, ...args], {
    env: childEnv({ ...(stateHome === undefined ? {} : { XDG_STATE_HOME: stateHome }), ...env }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const removeState = () => {
    if (stateHome !== undefined) rmSync(stateHome, { recursive: true, force: true });
  };
  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const firstLine = await new Promise<string>((resolve, reject) => {
    child.once("exit", removeState);
    let out = "";
    const timer = setTimeout(
      () => reject(new Error(`Server "${file}" under ${which} printed no line in 60 s; stderr: ${stderr}`)),
      60_000,
    );
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      const newline = out.indexOf("\n");
      if (newline !== -1) {
        clearTimeout(timer);
        resolve(out.slice(0, newline));
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`Server "${file}" under ${which} exited with ${code}; stderr: ${stderr}`));
    });
  });
  const url = firstLine.replace(/^listening on /, "");
  return {
    url,
    firstLine,
    child,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) {
        removeState();
        return child.exitCode;
      }
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      const code = await exited;
      clearTimeout(timer);
      removeState();
      return code;
    },
  };
}

/**
 * Runs `file` (a main.ts) under `which` until it exits by itself, for start-up refusals: its
 * exit code and what it wrote. Killed after 60 s (then `code` is null).
 */
export async function runServerToExit(
  file: string,
  args: string[],
  which: Runtime,
  options: { env?: Record<string, string>; cwd?: string } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [command = "", ...rest] = tsCommand(file, which);
  const child = spawn(command, [...rest, ...args], {
    env: childEnv(options.env),
    stdio: ["ignore", "pipe", "pipe"],
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const code = await new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/**
 * A `fetch` that hands requests to a Hono app in-process, with the `Host` header a real client
 * sends, and the `Content-Length` an HTTP client would send for a string body.
 */
export function appFetch(
  app: { request(url: string, init?: RequestInit): Response | Promise<Response> },
  headers: Record<string, string> = {},
) {
  return async (url: string | URL, init?: RequestInit): Promise<Response> => {
    const merged = new Headers(init?.headers);
    merged.set("host", new URL(url).host);
    if (typeof init?.body === "string" && !merged.has("content-length")) {
      merged.set("content-length", String(new TextEncoder().encode(init.body).byteLength));
    }
    for (const [name, value] of Object.entries(headers)) merged.set(name, value);
    return await app.request(String(url), { ...init, headers: merged });
  };
}

/** Connects an MCP client over HTTP; `mode` `auto` speaks the modern revision, `legacy` the 2025 handshake. */
export async function httpClient(
  url: string,
  options: {
    fetch?: (url: string | URL, init?: RequestInit) => Promise<Response>;
    headers?: Record<string, string>;
    mode?: "auto" | "legacy";
  } = {},
): Promise<Client> {
  const client = new Client({ name: "hook-server-test", version: "1.0.0" }, {
    versionNegotiation: { mode: options.mode ?? "auto" },
  });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
    ...(options.headers === undefined ? {} : { requestInit: { headers: options.headers } }),
  });
  await client.connect(transport);
  return client;
}

/** Connects an MCP client to `file` (a stdio.ts) run as a child under `which`. */
export async function stdioClient(
  file: string,
  args: string[],
  which: Runtime,
  mode: "auto" | "legacy" = "legacy",
): Promise<Client> {
  const [command = "", ...rest] = tsCommand(file, which);
  const transport = new StdioClientTransport({ command, args: [...rest, ...args], env: childEnv(), stderr: "pipe" });
  const client = new Client({ name: "hook-server-test", version: "1.0.0" }, { versionNegotiation: { mode } });
  await client.connect(transport, { timeout: 60_000 });
  return client;
}

/** The text of a tool result: its text blocks joined with `\n`. */
export function resultText(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] }).content ?? [];
  return content
    .filter((block) => block.type === "text")
    .map((block) => block.text ?? "")
    .join("\n");
}

/** The `_meta` that sprout-agent sends with every request of session `id`. */
export function sessionMeta(id: string): { _meta: Record<string, unknown> } {
  return { _meta: { "sprout-agent/session": id } };
}

/** One raw JSON-RPC POST; reads a JSON or an SSE answer. `body` is `undefined` for an empty body (202). */
export async function postJsonRpc(
  url: string,
  message: unknown,
  options: { headers?: Record<string, string>; fetch?: (url: string, init: RequestInit) => Promise<Response> } = {},
): Promise<{ status: number; body: unknown }> {
  const doFetch = options.fetch ?? ((u: string, init: RequestInit) => fetch(u, init));
  const response = await doFetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...options.headers },
    body: typeof message === "string" ? message : JSON.stringify(message),
  });
  const text = await response.text();
  if (text.trim() === "") return { status: response.status, body: undefined };
  if ((response.headers.get("content-type") ?? "").includes("text/event-stream")) {
    const data = text
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => JSON.parse(line.slice(5).trim()) as { id?: unknown });
    return { status: response.status, body: data.find((message) => message.id !== undefined) ?? data.at(-1) };
  }
  return { status: response.status, body: JSON.parse(text) };
}

/**
 * A modern (2026-07-28) `tools/call` as sprout-agent sends it over HTTP: the `_meta` envelope
 * with the session id, and the `Mcp-Method`/`Mcp-Name` headers. For {@link postJsonRpc}.
 */
export function modernToolCall(
  id: number,
  name: string,
  args: Record<string, unknown>,
  session: string,
): { message: unknown; headers: Record<string, string> } {
  const _meta = {
    "sprout-agent/session": session,
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": { name: "hook-server-test", version: "1.0.0" },
    "io.modelcontextprotocol/clientCapabilities": {},
  };
  return {
    message: { jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args, _meta } },
    headers: { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": name },
  };
}
