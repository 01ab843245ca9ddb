/**
 * The example hook servers as the bench starts them: `servers/todo-enforcer/main.ts` over HTTP
 * and `stdio.ts` over stdio, under a chosen runtime, as MCP server configurations for our
 * registry and as commands for the official SDK's transports.
 * @module
 */
import type { McpServerConfig } from "../lib/mcp/types.ts";
import { startServer } from "../tests/helpers/hook-servers.ts";
import { childEnv, root, type Runtime, tsCommand } from "./harness.ts";

/** The todo-enforcer's stdio entry point. */
export const TODO_STDIO = `${root}servers/todo-enforcer/stdio.ts`;
/** The todo-enforcer's HTTP entry point. */
export const TODO_HTTP = `${root}servers/todo-enforcer/main.ts`;

/** A running HTTP hook server. */
export interface HttpServer {
  /** `http://127.0.0.1:PORT/mcp` */
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** Starts `file` (a `main.ts` printing `listening on URL`) under `which` on a free port. */
export async function startHttpServer(
  file: string,
  which: Runtime,
  env: Record<string, string> = {},
): Promise<HttpServer> {
  // The tests' helper: spawns under the runtime, waits for the first line; stop is SIGTERM, then SIGKILL.
  const server = await startServer(file, ["--port", "0"], which, env);
  return { url: server.url, pid: server.child.pid ?? 0, stop: async () => void (await server.stop()) };
}

/** The todo-enforcer over stdio under `which`, as our registry's configuration. */
export function stdioConfig(name: string, which: Runtime): McpServerConfig {
  const [command = "", ...args] = tsCommand(TODO_STDIO, which);
  // Our stdio client clears the environment (SPEC section 10); Deno needs its cache folder.
  const env = childEnv();
  const keep: Record<string, string> = {};
  for (const key of ["HOME", "PATH", "DENO_DIR", "XDG_CACHE_HOME"]) if (env[key] !== undefined) keep[key] = env[key];
  return { name, transport: { type: "stdio", command, args, env: keep } };
}

/** A Streamable HTTP endpoint as our registry's configuration. */
export function httpConfig(name: string, url: string): McpServerConfig {
  return { name, transport: { type: "http", url, headers: {} } };
}
