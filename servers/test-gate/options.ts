/**
 * The test-gate's own command-line options, shared by main.ts (HTTP) and stdio.ts:
 * `--cmd` (`TEST_GATE_CMD`, default `bun test`), `--cwd` (`TEST_GATE_CWD`, default the folder
 * the agent sends, else the current one) and `--timeout` seconds (`TEST_GATE_TIMEOUT_SECS`, default 600).
 * @module
 */
import { resolve } from "node:path";
import process from "node:process";
import type { GatesOptions } from "./gates.ts";

/** The `parseArgs` option table for the gate's flags. */
export const GATE_FLAGS = {
  cmd: { type: "string" },
  cwd: { type: "string" },
  timeout: { type: "string" },
} as const;

/** Help lines for the gate's flags. */
export const GATE_USAGE = `  --cmd      the test command, run by the shell (env TEST_GATE_CMD, default "bun test")
  --cwd      the project folder (env TEST_GATE_CWD; default the folder the agent sends, else the current one)
  --timeout  seconds before a run is killed (env TEST_GATE_TIMEOUT_SECS, default 600)`;

/**
 * The gate's options from parsed flags, then the environment, then the defaults.
 * @throws Error naming the value when `--timeout` is not a positive number
 */
export function gateOptions(
  values: { cmd?: string | undefined; cwd?: string | undefined; timeout?: string | undefined },
  env: Record<string, string | undefined>,
): GatesOptions {
  const command = values.cmd ?? (env.TEST_GATE_CMD || "bun test");
  const cwd = resolve(values.cwd ?? (env.TEST_GATE_CWD || process.cwd()));
  const timeoutText = values.timeout ?? (env.TEST_GATE_TIMEOUT_SECS || "600");
  const seconds = Number(timeoutText);
  if (!/^\d+(\.\d+)?$/.test(timeoutText) || seconds <= 0) {
    throw new Error(`Invalid timeout "${timeoutText}": expected a positive number of seconds`);
  }
  // Timers fire at once past 2^31-1 ms (about 24.8 days), so a longer timeout would kill
  // every run immediately.
  if (seconds * 1000 > 2_147_483_647) {
    throw new Error(`Invalid timeout "${timeoutText}": at most 2147483 seconds (about 24 days)`);
  }
  if (command.trim() === "") throw new Error("Invalid test command: it is empty");
  // No folder given: follow the `cwd` sprout-agent sends with each hook call (gates.ts).
  const followAgentCwd = values.cwd === undefined && !env.TEST_GATE_CWD;
  return { command, cwd, timeoutMs: Math.round(seconds * 1000), followAgentCwd };
}
