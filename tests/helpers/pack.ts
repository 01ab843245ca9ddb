/**
 * The npm package as a user gets it, for the tests that install it: `npm pack` once per test
 * process (it builds dist/ through `prepack`, a few seconds), and commands run with no
 * registry reachable. The tarball's folder is removed when the process exits.
 * @module
 */
import { spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
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

/** The lock folder `npm pack` runs under; one left by a killed process is taken over after 5 minutes. */
const PACK_LOCK = join(repoRoot, "node_modules", ".cache", "sprout-agent-tests", "npm-pack.lock");

/** Runs `job` holding {@link PACK_LOCK} (a folder made with `mkdir`, polled every 200 ms). */
async function withPackLock<T>(job: () => Promise<T>): Promise<T> {
  mkdirSync(dirname(PACK_LOCK), { recursive: true });
  for (;;) {
    try {
      mkdirSync(PACK_LOCK);
      break;
    } catch {
      let age = 0;
      try {
        age = Date.now() - statSync(PACK_LOCK).mtimeMs;
      } catch { /* released meanwhile */ }
      if (age > 300_000) rmSync(PACK_LOCK, { recursive: true, force: true });
      else await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  try {
    return await job();
  } finally {
    rmSync(PACK_LOCK, { recursive: true, force: true });
  }
}

/** `npm pack` of the repository, once per process; later calls share the first tarball. */
export function packOnce(): Promise<Packed> {
  packed ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), "sprout-pack-"));
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
    // One `npm pack` at a time across the test processes: its `prepack` build empties dist/
    // first, so a second pack at the same moment would miss files (seen under Bun's parallel
    // workers: "dist/mod.js is missing from the tarball").
    const out = ok(
      await withPackLock(() =>
        run("npm", ["pack", "--json", "--pack-destination", dir], repoRoot, offlineEnv(), 180_000)
      ),
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

/**
 * Copies the example server folder `source` out of the repository into a new temporary folder
 * (`<prefix>XXXXXX/<its name>`, node_modules left behind) and installs its dependencies from
 * its own package.json with no registry reachable: the repository's lockfile entries (the same
 * versions, whose tarballs `npm ci` left in the npm cache) under the copy's root entry,
 * `npm install --offline`, and the unpublished sprout-agent from the packed tarball.
 * @returns `dir`, the temporary folder to remove, and `copy`, the installed copy in it
 */
export async function installCopy(source: string, prefix: string): Promise<{ dir: string; copy: string }> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const copy = join(dir, source.split("/").filter(Boolean).pop()!);
  cpSync(source, copy, { recursive: true, filter: (path) => !path.includes("node_modules") });
  const pkg = JSON.parse(readFileSync(join(copy, "package.json"), "utf8"));
  const lock = JSON.parse(readFileSync(join(repoRoot, "package-lock.json"), "utf8"));
  const { dependencies, devDependencies } = pkg;
  lock.name = pkg.name;
  lock.version = pkg.version;
  lock.packages[""] = { name: pkg.name, version: pkg.version, dependencies, devDependencies };
  for (const [path, entry] of Object.entries<Record<string, unknown>>(lock.packages)) {
    // The cache is keyed by the tarball's URL, which this lockfile leaves out.
    const name = path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);
    if (path !== "" && entry.resolved === undefined && entry.link === undefined) {
      entry.resolved = `https://registry.npmjs.org/${name}/-/${name.split("/").pop()}-${entry.version}.tgz`;
    }
  }
  writeFileSync(join(copy, "package-lock.json"), JSON.stringify(lock, null, 2));
  const { tarball } = await packOnce();
  const env = offlineEnv();
  delete env.npm_config_registry; // the cache's keys name the real registry
  ok(await run("npm", ["install", "--offline", "--no-audit", "--no-fund", tarball], copy, env, 120_000), "npm install");
  return { dir, copy };
}
