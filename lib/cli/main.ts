/**
 * The CLI's dispatch: `--help`, `--version`, then one command module (`run`, `hooks`, `hook-bridge`, `hook-proxy`, `acp`);
 * every error becomes one line on stderr and an exit status (2 for usage and configuration,
 * 1 for the rest), every exit waits for output to flush (lib/cli/io.ts).
 * @module
 */

import { AgentError } from "../util/errors.ts";
import { VERSION } from "../util/version.ts";
import { USAGE } from "./args.ts";
import { exitWhenDone, stderr, stdout } from "./io.ts";
import { closest } from "./suggest.ts";

/** The commands, and the words that stand for `--help` and `--version`, for "did you mean". */
const COMMANDS = ["run", "sessions", "hooks", "hook-bridge", "hook-proxy", "acp", "help", "--help", "--version"];

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined) {
    stderr().write(USAGE);
    return 2;
  }
  if (command === "--help" || command === "-h" || command === "help") {
    stdout().write(USAGE);
    return 0;
  }
  if (command === "--version" || command === "-V") {
    stdout().write(`sprout-agent ${VERSION}\n`);
    return 0;
  }
  // `--help` counts only before `--`: after it, everything is the prompt.
  const flags = rest.includes("--") ? rest.slice(0, rest.indexOf("--")) : rest;
  if (flags.includes("--help") || flags.includes("-h")) {
    stdout().write(USAGE);
    return 0;
  }
  if (command === "run") return await (await import("./run.ts")).run(rest);
  if (command === "sessions") return await (await import("./sessions.ts")).sessions(rest);
  if (command === "hooks") return await (await import("./hooks.ts")).hooks(rest);
  if (command === "acp") return await (await import("./acp.ts")).acp(rest);
  if (command === "hook-bridge") return await (await import("./hook-bridge.ts")).hookBridge(rest);
  if (command === "hook-proxy") return await (await import("./hook-proxy.ts")).hookProxy(rest);
  const near = closest(command, COMMANDS);
  const hint = near === undefined
    ? "use run, sessions, hooks, hook-bridge, hook-proxy or acp"
    : `did you mean ${near}?`;
  throw new AgentError("usage", `Unknown command ${JSON.stringify(command)}: ${hint} (see --help)`);
}

/**
 * Runs the command line `argv` (without the runtime and script: `process.argv.slice(2)`) and
 * ends the process with its exit status (SPEC section 11, {@link exitWhenDone}). Never returns normally.
 */
export function runCli(argv: string[]): void {
  exitWhenDone(main(argv));
}
