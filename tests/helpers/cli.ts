/**
 * Helpers for tests that run `cli.ts run` as a child process under the current runtime: a
 * clean environment, `.mcp.json` files for the fixture server, the run itself with its
 * stdout parsed as `--json` events, and the fixture's call log.
 * @module
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { fixtureCommand } from "./session.ts";
import { repoRoot, tsCommand } from "./runtime.ts";

/** How a CLI run ended. */
export interface CliRun {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** stdout lines that start with `{`, parsed (with `--json`). */
  events: Array<Record<string, unknown>>;
  /** Wall time from spawn to exit, in ms. */
  ms: number;
  /** The agent's pid. */
  pid: number;
}

/** The test's environment without any provider, agent or hook setting, plus `extra`. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(SPROUT_AGENT_|ANTHROPIC_|OPENAI_COMPAT_|MCP_HOOK_SERVERS)/.test(k)) env[k] = v;
  }
  return { ...env, NO_COLOR: "1", ...extra };
}

/**
 * Runs `cli.ts` with `args` under the current runtime. `onLine` sees each stdout line and can
 * signal the agent with `process.kill(pid, sig)` (under Deno `child.kill()` skips the child's
 * handler). The agent is SIGKILLed after `timeoutMs` (default 60 s) so a hang fails the test.
 */
export function runCli(
  args: string[],
  env: Record<string, string>,
  options: {
    cwd?: string;
    stdin?: string;
    timeoutMs?: number;
    onLine?: (line: string, signal: (sig: NodeJS.Signals) => void) => void;
    /** Called once the agent is spawned, with the function that signals it. */
    onStart?: (signal: (sig: NodeJS.Signals) => void) => void;
  } = {},
): Promise<CliRun> {
  const [cmd, ...pre] = tsCommand(join(repoRoot, "cli.ts"));
  const started = Date.now();
  const child = spawn(cmd!, [...pre, ...args], { env: cleanEnv(env), cwd: options.cwd ?? repoRoot });
  let stdout = "";
  let stderr = "";
  let pending = "";
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(child.pid!, sig);
    } catch {
      // already gone
    }
  };
  child.stdout.on("data", (d: Buffer) => {
    stdout += d;
    pending += d;
    let i: number;
    while ((i = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, i);
      pending = pending.slice(i + 1);
      options.onLine?.(line, signal);
    }
  });
  child.stderr.on("data", (d) => (stderr += d));
  child.stdin.on("error", () => {});
  child.stdin.end(options.stdin ?? "");
  options.onStart?.(signal);
  const killer = setTimeout(() => signal("SIGKILL"), options.timeoutMs ?? 60_000);
  return new Promise((resolve) => {
    child.on("close", (code, sig) => {
      clearTimeout(killer);
      const events = stdout.split("\n").filter((l) => l.startsWith("{")).map((l) =>
        JSON.parse(l) as Record<string, unknown>
      );
      resolve({ code, signal: sig, stdout, stderr, events, ms: Date.now() - started, pid: child.pid! });
    });
  });
}

/** Runs `tasks` with at most `limit` at once; results in order. */
export async function pool<T>(tasks: Array<() => Promise<T>>, limit = 3): Promise<T[]> {
  const out: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, async () => {
    while (next < tasks.length) {
      const i = next++;
      out[i] = await tasks[i]!();
    }
  }));
  return out;
}

/** Writes an `.mcp.json` in `dir` whose servers are the agent-server fixture with these `FIXTURE_*` envs, plus `extra` entries. */
export function fixtureConfig(
  dir: string,
  servers: Record<string, Record<string, string>>,
  extra: Record<string, unknown> = {},
): string {
  const { command, args } = fixtureCommand();
  const file = join(dir, `mcp-${Math.random().toString(16).slice(2)}.json`);
  const mcpServers: Record<string, unknown> = {};
  for (const [name, env] of Object.entries(servers)) mcpServers[name] = { command, args, env };
  writeFileSync(file, JSON.stringify({ mcpServers: { ...mcpServers, ...extra } }));
  return file;
}

/** The `tools/call` lines the fixture wrote to its `FIXTURE_LOG` file. */
export function fixtureCalls(log: string): Array<{ tool: string; args: unknown }> {
  try {
    return readFileSync(log, "utf8").trim().split("\n").filter(Boolean).map((l) =>
      JSON.parse(l) as { tool: string; args: unknown }
    );
  } catch {
    return [];
  }
}
