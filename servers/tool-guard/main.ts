/**
 * Serves the tool guard over Streamable HTTP at `http://HOST:PORT/mcp`, under Bun, Deno or
 * Node (via tsx). The first line on stdout is `listening on http://HOST:PORT/mcp`.
 *
 *   bun servers/tool-guard/main.ts --port 8787 --ask "rm,git push"
 *   deno run --allow-net --allow-env --allow-sys=homedir servers/tool-guard/main.ts
 *   npx tsx servers/tool-guard/main.ts
 *
 * Options: `--host` (`HOST`, default 127.0.0.1), `--port` (`PORT`, default 0 = any free port),
 * `--token` (`HOOK_SERVER_TOKEN`: require `Authorization: Bearer <token>`), `--allowed-hosts`
 * (`ALLOWED_HOSTS`), and the rules (options.ts).
 * The serving code below is repeated from servers/test-gate/main.ts on purpose: each server
 * folder can be copied alone.
 * @module
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { createApp } from "./app.ts";
import { GUARD_FLAGS, GUARD_USAGE, guardRules } from "./options.ts";
import type { GuardRules } from "./rules.ts";

const USAGE = `Usage: main.ts [--host HOST] [--port PORT] [--token TOKEN] [--allowed-hosts NAMES] [rule options]
  --host     address to bind (env HOST, default 127.0.0.1)
  --port     port to bind, 0 = any free port (env PORT, default 0)
  --token    require "Authorization: Bearer TOKEN" on /mcp (env HOOK_SERVER_TOKEN)
  --allowed-hosts  comma-separated Host header names clients use (env ALLOWED_HOSTS);
             required when --host is not a localhost address (DNS rebinding)
${GUARD_USAGE}`;

/** The HTTP options shared by the example servers, from flags first, then the environment. */
interface HttpOptions {
  host: string;
  port: number;
  token?: string;
  /** Host header names accepted on a non-localhost bind. */
  allowedHosts?: string[];
  rules: GuardRules;
}

function parseHttpOptions(args: string[], env: NodeJS.ProcessEnv): HttpOptions {
  const { values } = parseArgs({
    args,
    options: {
      host: { type: "string" },
      port: { type: "string" },
      token: { type: "string" },
      "allowed-hosts": { type: "string" },
      help: { type: "boolean" },
      ...GUARD_FLAGS,
    },
  });
  if (values.help === true) {
    console.log(USAGE);
    process.exit(0);
  }
  const host = values.host ?? (env.HOST || "127.0.0.1");
  const portText = values.port ?? (env.PORT || "0");
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) {
    throw new Error(`Invalid port "${portText}": expected a whole number from 0 to 65535`);
  }
  const token = values.token ?? (env.HOOK_SERVER_TOKEN || undefined);
  const allowed = (values["allowed-hosts"] ?? (env.ALLOWED_HOSTS || "")).split(",").map((h) => h.trim()).filter(
    Boolean,
  );
  if (!["127.0.0.1", "localhost", "::1"].includes(host) && allowed.length === 0) {
    // Off localhost a web page could reach the server under any name it controls (DNS
    // rebinding); only the operator knows the right names, so the server asks for them.
    throw new Error(
      `Cannot bind "${host}" without --allowed-hosts: off localhost the Host header must be checked against the names clients use (DNS rebinding); name them, e.g. --allowed-hosts hooks.example.com,10.0.0.5 (env ALLOWED_HOSTS)`,
    );
  }
  return {
    host,
    port,
    ...(token === undefined || token === "" ? {} : { token }),
    ...(allowed.length > 0 ? { allowedHosts: allowed } : {}),
    rules: guardRules(values, env),
  };
}

/** A bound HTTP server: the port it got, and how to stop it. */
interface Listener {
  port: number;
  close(): Promise<void>;
}

type FetchHandler = (request: Request) => Response | Promise<Response>;

/** Just the parts of the Bun and Deno globals used here, so this file type-checks anywhere. */
interface RuntimeGlobals {
  Bun?: {
    serve(options: { fetch: FetchHandler; hostname: string; port: number; idleTimeout: number }): {
      port: number;
      stop(closeActive: boolean): unknown;
    };
  };
  Deno?: {
    serve(
      options: { hostname: string; port: number; onListen(): void },
      handler: FetchHandler,
    ): { addr: { port: number }; shutdown(): Promise<void> };
  };
}

/**
 * Serves `fetch` with the runtime's own server: `Bun.serve`, `Deno.serve`, or
 * `@hono/node-server` under Node (imported only there, so Bun and Deno users need not install it).
 */
async function listen(fetch: FetchHandler, hostname: string, port: number): Promise<Listener> {
  const { Bun, Deno } = globalThis as RuntimeGlobals;
  if (Bun !== undefined) {
    // idleTimeout 0: a tool call may legitimately take minutes before its response starts.
    const server = Bun.serve({ fetch, hostname, port, idleTimeout: 0 });
    return { port: server.port, close: async () => void (await server.stop(true)) };
  }
  if (Deno !== undefined) {
    const server = Deno.serve({ hostname, port, onListen() {} }, fetch); // onListen: keep stdout ours
    return { port: server.addr.port, close: () => server.shutdown() };
  }
  const { serve } = await import("@hono/node-server");
  return await new Promise((resolve, reject) => {
    const server = serve(
      { fetch, hostname, port },
      (info) => resolve({ port: info.port, close: () => new Promise((done) => server.close(() => done())) }),
    );
    server.once("error", reject);
  });
}

async function main(): Promise<void> {
  let options: HttpOptions;
  try {
    options = parseHttpOptions(process.argv.slice(2), process.env);
  } catch (error) {
    console.error(`${(error as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  const app = createApp({
    rules: options.rules,
    host: options.host,
    ...(options.token === undefined ? {} : { token: options.token }),
    ...(options.allowedHosts === undefined ? {} : { allowedHosts: options.allowedHosts }),
  });
  let listener: Listener;
  try {
    listener = await listen((request) => app.fetch(request), options.host, options.port);
  } catch (error) {
    console.error(`Cannot listen on "${options.host}:${options.port}": ${(error as Error).message}`);
    process.exit(1);
  }
  const urlHost = options.host.includes(":") ? `[${options.host}]` : options.host;
  console.log(`listening on http://${urlHost}:${listener.port}/mcp`);

  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    // Give in-flight requests a moment, but never hang on a stuck connection.
    await Promise.race([listener.close(), new Promise((done) => setTimeout(done, 2000))]);
    process.exit(0);
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
}

await main();
