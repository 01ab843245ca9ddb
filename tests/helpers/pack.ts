/**
 * The npm package as a user gets it, for the tests that install it: `npm pack` once per test
 * process (it builds dist/ through `prepack`, a few seconds), and commands run with no
 * registry reachable. The tarball's folder is removed when the process exits.
 * @module
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import assert from "node:assert/strict";
import { repoRoot } from "./runtime.ts";

/** How a command ended. */
export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment for npm with no registry reachable (every request goes to a closed port), without agent variables. */
export function offlineEnv(
  extra: Record<string, string> = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (
      v !== undefined &&
      !/^(npm_|SPROUT_AGENT_|ANTHROPIC_|OPENAI_COMPAT_|MCP_HOOK_SERVERS$)/i
        .test(k)
    ) env[k] = v;
  }
  return {
    ...env,
    NO_COLOR: "1",
    npm_config_registry: "http://127.0.0.1:9/",
    npm_config_update_notifier: "false",
    ...extra,
  };
}

/** Runs `cmd` in `cwd`, killed after `timeoutMs` (default 60 s); resolves with its output. */
export function run(
  cmd: string,
  args: string[],
  cwd: string,
  env: Record<string, string> = offlineEnv(),
  timeoutMs = 60_000,
): Promise<Ran> {
  const child = spawn(cmd, args, { cwd, env });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  return new Promise((resolve) =>
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    })
  );
}

/** Asserts that `ran` exited 0 (the message shows its output) and returns its stdout. */
export function ok(ran: Ran, what: string): string {
  assert.equal(ran.code, 0, `${what} failed:\n${ran.stderr}\n${ran.stdout}`);
  return ran.stdout;
}

/** The packed tarball: its absolute path and the files it holds. */
export interface Packed {
  tarball: string;
  files: string[];
}

let packed: Promise<Packed> | undefined;

/** `npm pack` of the repository, once per process; later calls share the first tarball. */
export function packOnce(): Promise<Packed> {
  packed ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), "sprout-pack-"));
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
    const out = ok(
      await run("npm", ["pack", "--json", "--pack-destination", dir], repoRoot),
      "npm pack",
    );
    const [first] = JSON.parse(out.replace(/^[^[]*/, "")) as Array<
      { filename: string; files: Array<{ path: string }> }
    >;
    return {
      tarball: join(dir, first!.filename),
      files: first!.files.map((f) => f.path),
    };
  })();
  return packed;
}
