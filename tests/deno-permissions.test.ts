/**
 * Under Deno, a stdio server needs `--allow-sys` (finding the command checks its executable
 * bit, which reads the user id) and `--allow-run` (spawning it). Without them the agent names
 * the missing flag instead of calling the command "not found on PATH", and a denied spawn is
 * a warning, not an uncaught error that ends the run. Deno only: it is Deno's permission model.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { cleanEnv } from "./helpers/cli.ts";
import { repoRoot, runtime } from "./helpers/runtime.ts";

function runDeno(flags: string[], dir: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = cleanEnv({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: join(dir, "script.json") });
  const args = ["run", "--no-prompt", "--quiet", "--allow-read", "--allow-env", ...flags, join(repoRoot, "cli.ts")];
  const child = spawn(process.execPath, [...args, "run", "--mcp-config", join(dir, "mcp.json"), "hi"], {
    cwd: dir,
    env,
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

describe("Deno permissions for stdio servers", {
  skip: runtime() !== "deno" && "Deno's permission model: runs under deno",
}, () => {
  test("a missing --allow-sys or --allow-run is named, and the run still ends normally", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sprout-perm-"));
    try {
      writeFileSync(join(dir, "script.json"), JSON.stringify([{ text: "finished" }]));
      writeFileSync(
        join(dir, "mcp.json"),
        JSON.stringify({ mcpServers: { fs: { command: "node", args: ["-e", ""] } } }),
      );
      const cases: Array<[string[], string]> = [
        [[], "Deno lacks --allow-run and --allow-sys, which stdio servers need"],
        [["--allow-run"], "Deno lacks --allow-sys (stdio servers need --allow-run and --allow-sys)"],
        [["--allow-sys"], "Deno lacks --allow-run (stdio servers need --allow-run and --allow-sys)"],
      ];
      const runs = await Promise.all(cases.map(([flags]) => runDeno(flags, dir)));
      runs.forEach((run, i) => {
        const [flags, reason] = cases[i]!;
        assert.equal(run.code, 0, `flags ${flags.join(" ")}: ${run.stderr}`);
        assert.match(run.stdout, /^finished\n/, `flags ${flags.join(" ")}`);
        assert.ok(
          run.stderr.includes(`warning: Cannot start server "fs": ${reason}`),
          `flags ${flags.join(" ")}: ${run.stderr}`,
        );
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
