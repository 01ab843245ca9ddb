/**
 * Deno imports `mod.ts` by URL with no configuration and runs a scripted prompt through it
 * (issue 2: the core must be importable by URL). The repository is served over HTTP on
 * 127.0.0.1; the Deno program runs in an empty folder with `--no-config`, with the flags the
 * README's Deno permissions table gives for it.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, normalize } from "node:path";
import process from "node:process";
import { repoRoot, runsOnce } from "./helpers/runtime.ts";

describe("mod.ts by URL", { skip: !runsOnce && "runs once, under bun" }, () => {
  test("deno imports mod.ts over HTTP with no configuration and runs a scripted prompt; without --allow-import it names the flag", async () => {
    const server = createServer((req, res) => {
      const path = normalize(decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname));
      try {
        const body = readFileSync(join(repoRoot, path));
        res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
        res.end(body);
      } catch {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const dir = mkdtempSync(join(tmpdir(), "sprout-url-"));
    try {
      writeFileSync(join(dir, "script.json"), JSON.stringify([{ text: "hello from a URL import" }]));
      writeFileSync(
        join(dir, "main.ts"),
        `import { agentOptionsFromEnv, createAgent } from "http://127.0.0.1:${port}/mod.ts";
const options = agentOptionsFromEnv({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: ${
          JSON.stringify(join(dir, "script.json"))
        } }, { readFile: (p) => Deno.readTextFileSync(p) });
const agent = await createAgent({ ...options, sessionId: "url" });
const run = agent.prompt("say hello");
let text = "";
for await (const e of run) if (e.type === "text-delta") text += e.text;
const result = await run.result;
await agent.close();
console.log(JSON.stringify({ text, stopReason: result.stopReason }));
`,
      );
      const deno = join(repoRoot, "node_modules/.bin/deno");
      const runDeno = async (flags: string[]) => {
        const child = spawn(deno, ["run", "--no-config", "--no-lock", ...flags, "main.ts"], {
          cwd: dir,
          env: { ...process.env, NO_COLOR: "1" },
        });
        let out = "";
        let err = "";
        child.stdout.on("data", (d) => (out += d));
        child.stderr.on("data", (d) => (err += d));
        const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
        return { code, out, err };
      };
      // The flags of the README's Deno permissions table: --allow-import for the host, and
      // --allow-read --allow-env for what this program reads (the script file, the environment).
      const imported = await runDeno([`--allow-import=127.0.0.1:${port}`, "--allow-read", "--allow-env"]);
      assert.equal(imported.code, 0, `deno failed: ${imported.err}`);
      const last = JSON.parse(imported.out.trim().split("\n").pop()!);
      assert.deepEqual(last, { text: "hello from a URL import", stopReason: "end_turn" });
      // Without --allow-import, Deno 2 refuses the host and names the flag.
      const refused = await runDeno(["--no-prompt", "--allow-read", "--allow-env"]);
      assert.notEqual(refused.code, 0);
      assert.match(refused.err, /Requires import access to "127\.0\.0\.1:\d+", run again with the --allow-import flag/);
    } finally {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
