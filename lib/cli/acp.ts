/**
 * `cli.ts acp`: the Agent Client Protocol on stdin/stdout (lib/acp/), loaded only when asked
 * for, so `run` never pays for it. `--mcp-config FILE` (default `./.mcp.json` when it exists)
 * names the operator's servers, joined to every session's; `--allow`, `--ask` and `--deny`
 * add to the permission policy, as for `run`.
 * @module
 */

import { startTracing } from "./tracing.ts";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import process from "node:process";
import { AgentError } from "../util/errors.ts";
import { stdout } from "./io.ts";
import { loadServers } from "./servers.ts";
import { isServerOrPermissionFlag, takeServerOrPermissionFlag } from "./args.ts";
import { closest } from "./suggest.ts";

/** The arguments of `acp`. */
export interface AcpArgs {
  /** `--mcp-config FILE`; undefined: `./.mcp.json` when it exists. */
  mcpConfig: string | undefined;
  /** `--allow GLOB`, `--ask GLOB`, `--deny GLOB` (each repeatable): added to the permission policy (SPEC 7.8). */
  permissions: { allow: string[]; ask: string[]; deny: string[] };
}

/** The flags `acp` takes, for "did you mean". */
const ACP_FLAGS: readonly string[] = ["--mcp-config", "--allow", "--ask", "--deny", "--help"];

/**
 * Parses `acp`'s arguments. Throws `AgentError("usage")` on anything else (naming the closest
 * flag), a missing value, or a positional argument.
 */
export function parseAcpArgs(args: string[]): AcpArgs {
  const out: AcpArgs = { mcpConfig: undefined, permissions: { allow: [], ask: [], deny: [] } };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (isServerOrPermissionFlag(arg)) {
      i = takeServerOrPermissionFlag(args, i, out);
    } else if (arg.startsWith("-")) {
      const near = closest(arg, ACP_FLAGS);
      const hint = near === undefined ? "see --help" : `did you mean ${near}? (see --help)`;
      throw new AgentError("usage", `Unknown flag ${JSON.stringify(arg)} for acp: ${hint}`);
    } else {
      throw new AgentError(
        "usage",
        `Unexpected argument ${JSON.stringify(arg)}: acp takes no prompt (the client sends it; see --help)`,
      );
    }
  }
  return out;
}

/** `cli.ts acp [--mcp-config FILE] [--allow|--ask|--deny GLOB]…`: serves until stdin ends. Returns the exit status; throws `AgentError("usage" | "config")`. */
export async function acp(args: string[]): Promise<number> {
  const parsed = parseAcpArgs(args);
  // Read now, before stdin: a bad file is exit 2 with its message, as for run.
  const file = parsed.mcpConfig ?? (existsSync(".mcp.json") ? ".mcp.json" : undefined);
  const { servers, referenced } = loadServers(file);
  // The CLI's stdout writer watches the pipe: a client that closes it ends the process (141).
  stdout();
  // OTEL_* (SPEC 11, tracing): loaded only when they ask for traces; warnings go to stderr.
  const tracing = await startTracing(process.env, (message) => process.stderr.write(`warning: ${message}\n`));
  const { serveAcp } = await import("../acp/server.ts");
  // serveAcp writes process.stdout itself and resolves once what it wrote is flushed.
  const code = await serveAcp({
    env: process.env,
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    mcpServers: servers,
    ...(file === undefined ? {} : { mcpServersSource: resolve(file) }),
    permissions: parsed.permissions,
    secrets: referenced,
    ...(tracing === undefined ? {} : { observe: tracing.observe }),
  });
  await tracing?.shutdown();
  return code;
}
