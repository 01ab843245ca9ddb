/**
 * The CLI's words: the usage text and the arguments of `run` and `hooks` (SPEC section 11).
 * @module
 */

import { CONFIG_VARIABLES } from "../config/config.ts";
import { AgentError } from "../util/errors.ts";
import { VERSION } from "../util/version.ts";
import { closest } from "./suggest.ts";

/** `--help`'s text: the commands, the options, the exit statuses and every configuration variable. */
export const USAGE = `sprout-agent ${VERSION}: an LLM agent whose lifecycle MCP servers can steer

Usage:
  cli.ts run [--mcp-config FILE] [--json] [--allow|--ask|--deny GLOB]… [--continue | --resume ID] [PROMPT…]
                                                      run one prompt (PROMPT from stdin when absent or "-"),
                                                      in a new session or in the one named
  cli.ts sessions [--json]                            list the saved sessions, newest first
  cli.ts hooks [--mcp-config FILE] [--json]           list the servers' hooks and call each enabled one once,
                                                      as a dry run (exit 1 when one breaks the contract)
  cli.ts hook-bridge [--host claude|codex|gemini|copilot] [--event NAME] [--mcp-config FILE]
                                                      a command hook for another agent: its event on stdin
                                                      through the hook servers, its answer on stdout (exits 0)
  cli.ts hook-bridge --print-config claude|codex|gemini|copilot [--command CMD] [--merge FILE]
                                                      print (or merge into FILE) the host's settings for the bridge
  cli.ts hook-proxy [--server NAME] [--mcp-config FILE] [--name NAME] | --url URL | -- COMMAND ARGS…
                                                      an MCP server for Claude Code's mcp_tool hooks in front of one
                                                      hook server: its _ tools hidden, hook calls answered in
                                                      Claude Code's hook JSON (exits 0 at the end of stdin, 1 on errors)
  cli.ts hook-proxy --print-config mcp|settings [--name NAME] [--merge FILE]
                                                      Claude Code's .mcp.json entry or settings hooks for the proxy
  cli.ts acp [--mcp-config FILE] [--allow|--ask|--deny GLOB]…
                                                      serve the Agent Client Protocol on stdin/stdout (the
                                                      file's servers join every session's; asks go to the client)
  cli.ts --help | --version

Options:
  --mcp-config FILE   MCP servers in the .mcp.json shape (default: ./.mcp.json when it exists)
  --json              one JSON event per line on stdout; the last line is the result (hooks: one report line)
  --allow GLOB        run tools matching GLOB (over names such as fs__write_file) without asking
  --ask GLOB          ask before tools matching GLOB run (on a terminal; elsewhere they are denied)
  --deny GLOB         never run tools matching GLOB (deny beats ask beats allow; each flag repeatable)
  --continue, -c      go on with the newest session of this folder
  --resume ID         go on with session ID (sprout-agent sessions lists them)

Exit status: 0 done, 1 runtime failure, 2 usage or configuration error, 3 a required server could not
start (hook-bridge exits 0 whatever fails: it fails open; hook-proxy never exits 2), 130/143 after SIGINT/SIGTERM, 141 when the reader of stdout has gone. Every exit waits for stdout to take what was written
(giving up once it has taken nothing for 5 s).

Environment (default in brackets):
${CONFIG_VARIABLES.map((v) => `  ${v.name.padEnd(34)} ${v.meaning} [${v.default}]`).join("\n")}
`;

/** The arguments of `run` (and of `hooks`, which refuses a prompt). */
export interface RunArgs {
  /** `--mcp-config FILE`; undefined: `./.mcp.json` when it exists. */
  mcpConfig: string | undefined;
  /** `--json`: one JSON event per line on stdout. */
  json: boolean;
  /** The prompt's words (everything after `--` too). */
  prompt: string[];
  /** `--allow GLOB`, `--ask GLOB`, `--deny GLOB` (each repeatable): added to the permission policy (SPEC 7.8). */
  permissions: { allow: string[]; ask: string[]; deny: string[] };
  /** `--continue` (`-c`): the newest session of the current folder (SPEC 12.6). */
  continue: boolean;
  /** `--resume ID`: that session. */
  resume: string | undefined;
}

/** The flags `run` and `hooks` take, for "did you mean" (`--help` is read by `main.ts`). */
export const RUN_FLAGS: readonly string[] = [
  "--json",
  "--mcp-config",
  "--allow",
  "--ask",
  "--deny",
  "--continue",
  "--resume",
  "--help",
];

/**
 * Parses `run`'s arguments. Throws `AgentError("usage")` on an unknown flag (naming the
 * closest known one: `Unknown flag "--jsn": did you mean --json? (see --help)`) or a missing
 * `--mcp-config` value.
 */
export function parseRunArgs(args: string[]): RunArgs {
  const out: RunArgs = {
    mcpConfig: undefined,
    json: false,
    prompt: [],
    permissions: { allow: [], ask: [], deny: [] },
    continue: false,
    resume: undefined,
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      out.prompt.push(...args.slice(i + 1));
      break;
    }
    if (arg === "--json") out.json = true;
    else if (arg === "--continue" || arg === "-c") out.continue = true;
    else if (arg === "--resume" || arg.startsWith("--resume=")) {
      const value = arg.includes("=") ? arg.slice("--resume=".length) : args[++i];
      if (value === undefined || value.trim() === "") {
        throw new AgentError(
          "usage",
          "Missing value for --resume: give a session id (sprout-agent sessions lists them)",
        );
      }
      out.resume = value.trim();
    } else if (isServerOrPermissionFlag(arg)) i = takeServerOrPermissionFlag(args, i, out);
    else if (arg.startsWith("--json=")) {
      throw new AgentError("usage", `Unexpected value in ${JSON.stringify(arg)}: --json takes no value (see --help)`);
    } else if (arg.startsWith("--") || (arg.startsWith("-") && arg !== "-")) {
      const near = closest(arg, RUN_FLAGS);
      const hint = near === undefined ? "see --help" : `did you mean ${near}? (see --help)`;
      throw new AgentError("usage", `Unknown flag ${JSON.stringify(arg)}: ${hint}`);
    } else out.prompt.push(arg);
  }
  if (out.continue && out.resume !== undefined) {
    throw new AgentError("usage", "Unexpected --continue with --resume: give one of them");
  }
  return out;
}

/** True for `--mcp-config` and `--allow`, `--ask`, `--deny` (alone or `=VALUE`), which `run`, `hooks` and `acp` share. */
export function isServerOrPermissionFlag(arg: string): boolean {
  return /^--(mcp-config|allow|ask|deny)(=|$)/.test(arg);
}

/**
 * Reads the shared flag at `args[i]` (see {@link isServerOrPermissionFlag}) with its value
 * (`--flag VALUE` or `--flag=VALUE`) into `out`; returns the index of the last argument it
 * read. Throws `AgentError("usage")` on a missing value.
 */
export function takeServerOrPermissionFlag(
  args: readonly string[],
  i: number,
  out: Pick<RunArgs, "mcpConfig" | "permissions">,
): number {
  const arg = args[i]!;
  const flag = arg.slice(2).split("=")[0] as "mcp-config" | "allow" | "ask" | "deny";
  const inline = arg.includes("=");
  const value = inline ? arg.slice(arg.indexOf("=") + 1) : args[i + 1];
  const next = inline ? i : i + 1;
  if (flag === "mcp-config") {
    if (value === undefined || value === "") {
      throw new AgentError("usage", "Missing value for --mcp-config: give a file path");
    }
    out.mcpConfig = value;
    return next;
  }
  if (value === undefined || value.trim() === "") {
    throw new AgentError("usage", `Missing value for --${flag}: give a tool name or glob, such as "fs__*"`);
  }
  out.permissions[flag].push(value.trim());
  return next;
}
