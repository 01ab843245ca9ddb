/**
 * `cli.ts hook-bridge`: a command hook for Claude Code, Codex, Gemini CLI and Copilot CLI that
 * runs the host's event through our MCP hook servers (lib/bridge/, docs/BRIDGE.md), and
 * `--print-config HOST`, the settings that install it. It exits 0 for every failure of its own
 * (a host reads exit status 2 as "block"): a bad flag, configuration or payload, or a server that
 * cannot be reached, fails open with a message on stderr.
 * @module
 */

import process from "node:process";
import { runBridge } from "../bridge/bridge.ts";
import { bridgeStateDir } from "../bridge/budget.ts";
import { type HostName, HOSTS } from "../bridge/hosts.ts";
import { CONFIG_FILES, hookSettings, mergeSettings } from "../bridge/snippets.ts";
import { nodeFs, readText } from "./files.ts";
import { stderr, stdout } from "./io.ts";
import { loadServers } from "./servers.ts";

/** The arguments of `hook-bridge`. */
interface BridgeArgs {
  host?: HostName;
  event?: string;
  mcpConfig?: string;
  printConfig?: HostName;
  command?: string;
  merge?: string;
}

/** The flags of `hook-bridge`, each with a value. */
const FLAGS = ["--host", "--event", "--mcp-config", "--print-config", "--command", "--merge"];

/** Parses the flags; returns a message for people instead of throwing (a throw would exit 2). */
function parseBridgeArgs(args: readonly string[]): BridgeArgs | string {
  const out: BridgeArgs = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const [flag, inline] = arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [
      arg,
      undefined,
    ];
    if (!FLAGS.includes(flag!)) {
      return `Unknown flag ${JSON.stringify(arg)}: hook-bridge takes ${FLAGS.join(", ")}`;
    }
    const value = inline ?? args[++i];
    if (value === undefined || value === "") return `Missing value for ${flag}`;
    if (flag === "--host" || flag === "--print-config") {
      if (!(HOSTS as readonly string[]).includes(value)) {
        return `Invalid ${flag} ${JSON.stringify(value)}: expected one of ${HOSTS.join(", ")}`;
      }
      if (flag === "--host") out.host = value as HostName;
      else out.printConfig = value as HostName;
    } else if (flag === "--event") out.event = value;
    else if (flag === "--mcp-config") out.mcpConfig = value;
    else if (flag === "--command") out.command = value;
    else out.merge = value;
  }
  if (out.merge !== undefined && out.printConfig === undefined) return "--merge FILE needs --print-config HOST";
  return out;
}

/**
 * `--merge FILE`: merges `snippet` into the settings file `file` (created, with its folder,
 * when missing) through a temporary file and a rename, so the user's content is never lost
 * half-written. Returns the exit status: 0, or 1 with a message when the file is not JSON (or
 * not a settings object) or cannot be written; the file is then left as it was.
 */
export function mergeInto(file: string, snippet: Record<string, unknown>, command: string): number {
  const fs = nodeFs();
  let existing: unknown = {};
  let mode = 0o644;
  try {
    const text = fs.readFileSync(file, "utf8");
    mode = fs.statSync(file).mode & 0o777;
    try {
      existing = text.trim() === "" ? {} : JSON.parse(text);
    } catch (error) {
      stderr().write(
        `sprout-agent ${command}: Cannot merge into ${JSON.stringify(file)}: it is not JSON (${
          (error as Error).message
        }); the file is left as it was\n`,
      );
      return 1;
    }
  } catch (error) {
    if ((error as { code?: unknown }).code !== "ENOENT") {
      stderr().write(`sprout-agent ${command}: Cannot read ${JSON.stringify(file)}: ${(error as Error).message}\n`);
      return 1;
    }
  }
  let merged: Record<string, unknown>;
  let added: number;
  try {
    ({ merged, added } = mergeSettings(existing, snippet));
  } catch (error) {
    stderr().write(
      `sprout-agent ${command}: Cannot merge into ${JSON.stringify(file)}: ${
        (error as Error).message
      }; the file is left as it was\n`,
    );
    return 1;
  }
  if (added === 0) {
    stderr().write(`sprout-agent ${command}: ${file} already has these settings: nothing changed\n`);
    return 0;
  }
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    const dir = file.includes("/") ? file.slice(0, file.lastIndexOf("/")) : "";
    if (dir !== "") fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(tmp, `${JSON.stringify(merged, null, 2)}\n`, { mode });
    fs.renameSync(tmp, file);
  } catch (error) {
    fs.rmSync(tmp, { force: true });
    stderr().write(`sprout-agent ${command}: Cannot write ${JSON.stringify(file)}: ${(error as Error).message}\n`);
    return 1;
  }
  stderr().write(`sprout-agent ${command}: merged ${added} entr${added === 1 ? "y" : "ies"} into ${file}\n`);
  return 0;
}

/** All of stdin as UTF-8. By its events: an async iterator over the stream costs Node about 0.5 ms of each event. */
function readStdin(): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    process.stdin.on("data", (chunk: Uint8Array) => chunks.push(chunk))
      .once("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
      .once("error", reject);
  });
}

/** `cli.ts hook-bridge ARGS…`. Resolves with the exit status: 0, except 1 for a bad `--print-config` line. Never throws. */
export async function hookBridge(args: string[]): Promise<number> {
  const parsed = parseBridgeArgs(args);
  if (typeof parsed === "string") {
    // Even a wrong line in a host's settings must not block the host's agent: fail open.
    stderr().write(`sprout-agent hook-bridge: ${parsed} (see --help; failing open: nothing was blocked)\n`);
    return args.includes("--print-config") ? 1 : 0;
  }
  if (parsed.printConfig !== undefined) {
    const settings = hookSettings(parsed.printConfig, parsed.command);
    if (parsed.merge !== undefined) return mergeInto(parsed.merge, settings, "hook-bridge");
    stderr().write(`# Merge into ${CONFIG_FILES[parsed.printConfig]}\n`);
    stdout().write(`${JSON.stringify(settings, null, 2)}\n`);
    return 0;
  }
  try {
    const input = await readStdin();
    // Under Node, node:http instead of fetch: loading undici costs each event ~90 ms (docs/PERFORMANCE.md).
    const node = !("Bun" in globalThis) && !("Deno" in globalThis);
    const fetch = node ? (await import("../bridge/node-fetch.ts")).nodeHttpFetch as typeof globalThis.fetch : undefined;
    const result = await runBridge({
      ...(fetch === undefined ? {} : { fetch }),
      ...(parsed.host === undefined ? {} : { host: parsed.host }),
      ...(parsed.event === undefined ? {} : { event: parsed.event }),
      input,
      servers: () => loadServers(parsed.mcpConfig).servers,
      env: process.env,
      readFile: readText,
      cwd: process.cwd(),
      stateDir: bridgeStateDir(process.env),
    });
    for (const line of result.stderr) stderr().write(`${line}\n`);
    if (result.json !== undefined) stdout().write(`${JSON.stringify(result.json)}\n`);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    stderr().write(`sprout-agent hook-bridge: ${message} (failing open: nothing was blocked)\n`);
  }
  return 0;
}
