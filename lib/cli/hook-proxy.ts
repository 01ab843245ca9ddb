/**
 * `cli.ts hook-proxy`: the MCP proxy for Claude Code's `mcp_tool` hooks (lib/bridge/proxy.ts,
 * docs/BRIDGE.md), served on stdin/stdout, one JSON-RPC message a line; and
 * `--print-config mcp|settings [--merge FILE]`, the Claude Code configuration that starts it
 * and calls its hooks. The server is `--server NAME` of `--mcp-config FILE` (else
 * `./.mcp.json`; the file's only server when it has one), `--url URL` (Streamable HTTP) or
 * `-- COMMAND ARGS…` (stdio). It never exits 2 (Claude Code reads 2 as "block" from a hook):
 * 0 when stdin ends, 1 for a bad flag or configuration, with a message on stderr.
 * @module
 */

import { resolve } from "node:path";
import process from "node:process";
import { readLines } from "../acp/lines.ts";
import { HookProxy } from "../bridge/proxy.ts";
import { proxyMcpConfig, proxySettings } from "../bridge/snippets.ts";
import { loadConfig } from "../config/config.ts";
import type { JsonRpcMessage } from "../mcp/jsonrpc.ts";
import type { McpServerConfig } from "../mcp/types.ts";
import { readText } from "./files.ts";
import { mergeInto } from "./hook-bridge.ts";
import { stderr, stdout } from "./io.ts";
import { loadServers } from "./servers.ts";

/** The arguments of `hook-proxy`. */
interface ProxyArgs {
  mcpConfig?: string;
  server?: string;
  url?: string;
  name?: string;
  command?: string[];
  printConfig?: "mcp" | "settings";
  merge?: string;
  cli?: string;
}

const FLAGS = ["--mcp-config", "--server", "--url", "--name", "--print-config", "--merge", "--command"];
const PREFIX = "sprout-agent hook-proxy";

/** Parses the flags; a message for people instead of a throw (a throw would exit 2). */
function parseProxyArgs(args: readonly string[]): ProxyArgs | string {
  const out: ProxyArgs = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      out.command = args.slice(i + 1);
      if (out.command.length === 0) return "Missing the stdio server's command after --";
      break;
    }
    const eq = arg.indexOf("=");
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    if (!FLAGS.includes(flag)) return `Unknown flag ${JSON.stringify(arg)}: hook-proxy takes ${FLAGS.join(", ")}, --`;
    const value = eq > 0 ? arg.slice(eq + 1) : args[++i];
    if (value === undefined || value === "") return `Missing value for ${flag}`;
    if (flag === "--mcp-config") out.mcpConfig = value;
    else if (flag === "--server") out.server = value;
    else if (flag === "--url") out.url = value;
    else if (flag === "--name") out.name = value;
    else if (flag === "--merge") out.merge = value;
    else if (flag === "--command") out.cli = value;
    else if (value === "mcp" || value === "settings") out.printConfig = value;
    else return `Invalid --print-config ${JSON.stringify(value)}: expected mcp or settings`;
  }
  const sources = [out.server !== undefined || out.mcpConfig !== undefined, out.url !== undefined, out.command]
    .filter(Boolean).length;
  if (sources > 1) return "Give one server: --server NAME (of --mcp-config FILE), --url URL, or -- COMMAND ARGS…";
  if (out.merge !== undefined && out.printConfig === undefined) return "--merge FILE needs --print-config mcp|settings";
  return out;
}

/** The server the flags name. Throws `Error` with a message for people. */
function serverOf(args: ProxyArgs): McpServerConfig {
  const name = args.name ?? args.server ?? "hooks";
  if (args.url !== undefined) {
    if (!/^https?:\/\//.test(args.url)) {
      throw new Error(`Invalid --url ${JSON.stringify(args.url)}: expected http(s)://…`);
    }
    return { name, transport: { type: "http", url: args.url, headers: {} } };
  }
  if (args.command !== undefined) {
    const [command, ...rest] = args.command;
    return { name, transport: { type: "stdio", command: command!, args: rest, env: {} } };
  }
  const { servers } = loadServers(args.mcpConfig);
  if (args.server !== undefined) {
    const found = servers.find((s) => s.name === args.server);
    if (found === undefined) {
      throw new Error(
        `No server ${JSON.stringify(args.server)} in ${args.mcpConfig ?? ".mcp.json"} (it has ${
          servers.map((s) => s.name).join(", ") || "none"
        })`,
      );
    }
    return { ...found, name };
  }
  if (servers.length !== 1) {
    throw new Error(
      `Name the hook server: --server NAME of ${args.mcpConfig ?? "./.mcp.json"} (it has ${
        servers.length === 0 ? "no server" : servers.map((s) => s.name).join(", ")
      }), --url URL, or -- COMMAND ARGS…`,
    );
  }
  return { ...servers[0]!, name: args.name ?? servers[0]!.name };
}

/** The flags that start the same proxy again, for `--print-config mcp` (paths made absolute). */
function startArgs(args: ProxyArgs): string[] {
  if (args.url !== undefined) return ["--url", args.url, ...(args.name === undefined ? [] : ["--name", args.name])];
  if (args.command !== undefined) {
    return [...(args.name === undefined ? [] : ["--name", args.name]), "--", ...args.command];
  }
  const out: string[] = [];
  if (args.mcpConfig !== undefined) out.push("--mcp-config", resolve(args.mcpConfig));
  if (args.server !== undefined) out.push("--server", args.server);
  if (args.name !== undefined) out.push("--name", args.name);
  return out;
}

const send = (message: JsonRpcMessage) => void stdout().write(`${JSON.stringify(message)}\n`);

/** `cli.ts hook-proxy ARGS…`. Resolves with the exit status (0, or 1 for a bad flag or configuration). */
export async function hookProxy(args: string[]): Promise<number> {
  const parsed = parseProxyArgs(args);
  if (typeof parsed === "string") {
    stderr().write(`${PREFIX}: ${parsed} (see --help)\n`);
    return 1;
  }
  if (parsed.printConfig !== undefined) {
    const name = parsed.name ?? parsed.server ?? "hooks";
    const snippet = parsed.printConfig === "mcp"
      ? proxyMcpConfig(name, startArgs(parsed), parsed.cli)
      : proxySettings(name);
    if (parsed.merge !== undefined) return mergeInto(parsed.merge, snippet, "hook-proxy");
    stderr().write(
      `# Merge into ${parsed.printConfig === "mcp" ? ".mcp.json (or ~/.claude.json)" : ".claude/settings.json"}\n`,
    );
    stdout().write(`${JSON.stringify(snippet, null, 2)}\n`);
    return 0;
  }
  let server: McpServerConfig;
  let proxy: HookProxy;
  let maxLineBytes: number;
  try {
    server = serverOf(parsed);
    const config = loadConfig(process.env, readText);
    maxLineBytes = config.maxLineBytes;
    proxy = new HookProxy({
      server,
      config,
      env: process.env,
      cwd: process.cwd(),
      send: (message) => send(message),
      warn: (line) => stderr().write(`${line}\n`),
    });
  } catch (error) {
    stderr().write(`${PREFIX}: ${(error as Error).message}\n`);
    return 1;
  }
  proxy.start();
  const pending = new Set<Promise<void>>();
  const decoder = new TextDecoder();
  try {
    await readLines(process.stdin, { maxLineBytes }, {
      onLine(bytes) {
        const text = decoder.decode(bytes);
        if (text.trim() === "") return;
        let message: unknown;
        try {
          message = JSON.parse(text);
        } catch {
          send({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
          return;
        }
        const done = proxy.receive(message).finally(() => pending.delete(done));
        pending.add(done);
      },
      onOversize() {
        send({
          jsonrpc: "2.0",
          id: null,
          error: { code: -32600, message: `Request too large: over the ${maxLineBytes}-byte limit` },
        });
      },
    });
  } catch (error) {
    stderr().write(`${PREFIX}: stdin failed: ${(error as Error).message}\n`);
  }
  await Promise.allSettled([...pending]);
  await proxy.close();
  return 0;
}
