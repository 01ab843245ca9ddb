/**
 * The tool guard's own command-line options, shared by main.ts (HTTP) and stdio.ts. Each list
 * is comma-separated; `none` is the empty list; an unset (or empty) variable keeps the default.
 *
 *   --write-tools   TOOL_GUARD_WRITE_TOOLS    globs of tools whose paths must stay inside cwd
 *   --path-args     TOOL_GUARD_PATH_ARGS      the argument names that hold those paths
 *   --shell-tools   TOOL_GUARD_SHELL_TOOLS    globs of tools that run shell commands
 *   --command-args  TOOL_GUARD_COMMAND_ARGS   the argument names that hold the command
 *   --ask           TOOL_GUARD_ASK            commands to ask about ("rm,git push,curl | sh")
 *   --force-with-lease on|off                 TOOL_GUARD_FORCE_WITH_LEASE (default on)
 * @module
 */
import { DEFAULT_RULES, type GuardRules } from "./rules.ts";

/** The `parseArgs` option table for the guard's flags. */
export const GUARD_FLAGS = {
  "write-tools": { type: "string" },
  "path-args": { type: "string" },
  "shell-tools": { type: "string" },
  "command-args": { type: "string" },
  ask: { type: "string" },
  "force-with-lease": { type: "string" },
} as const;

const { writeTools, pathArgs, shellTools, commandArgs, ask } = DEFAULT_RULES;

/** Help lines for the guard's flags. */
export const GUARD_USAGE = `  --write-tools   globs of write tools (env TOOL_GUARD_WRITE_TOOLS, default "${writeTools}")
  --path-args     their path arguments (env TOOL_GUARD_PATH_ARGS, default "${pathArgs}")
  --shell-tools   globs of shell tools (env TOOL_GUARD_SHELL_TOOLS, default "${shellTools}")
  --command-args  their command arguments (env TOOL_GUARD_COMMAND_ARGS, default "${commandArgs}")
  --ask           commands to ask about (env TOOL_GUARD_ASK, default "${ask}")
  --force-with-lease on|off  rewrite git push --force (env TOOL_GUARD_FORCE_WITH_LEASE, default on)
  Lists are comma-separated; "none" is the empty list.`;

/** Parsed flag values, as `parseArgs` returns them for {@link GUARD_FLAGS}. */
export type GuardFlagValues = { [K in keyof typeof GUARD_FLAGS]?: string | undefined };

/**
 * The rules from parsed flags, then the environment, then {@link DEFAULT_RULES}.
 * @throws Error naming the flag when a value is empty or not one it takes
 */
export function guardRules(values: GuardFlagValues, env: Record<string, string | undefined>): GuardRules {
  const pick = (flag: keyof GuardFlagValues, variable: string, fallback: readonly string[]): string[] => {
    const text = values[flag] ?? (env[variable] || undefined);
    if (text === undefined) return [...fallback];
    if (text.trim() === "none") return [];
    const items = text.split(",").map((item) => item.trim()).filter(Boolean);
    if (items.length === 0) {
      throw new Error(`Invalid --${flag} "${text}": give comma-separated entries, or none for an empty list`);
    }
    return items;
  };
  const lease = values["force-with-lease"] ?? (env.TOOL_GUARD_FORCE_WITH_LEASE || "on");
  if (lease !== "on" && lease !== "off") throw new Error(`Invalid --force-with-lease "${lease}": expected on or off`);
  return {
    writeTools: pick("write-tools", "TOOL_GUARD_WRITE_TOOLS", writeTools),
    pathArgs: pick("path-args", "TOOL_GUARD_PATH_ARGS", pathArgs),
    shellTools: pick("shell-tools", "TOOL_GUARD_SHELL_TOOLS", shellTools),
    commandArgs: pick("command-args", "TOOL_GUARD_COMMAND_ARGS", commandArgs),
    ask: pick("ask", "TOOL_GUARD_ASK", ask),
    forceWithLease: lease === "on",
  };
}
