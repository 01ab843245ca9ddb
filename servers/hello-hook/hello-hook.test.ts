/**
 * hello-hook against the real agent: sprout-agent's `createAgent`, with the fake LLM of
 * "sprout-agent/testing" playing the model, and the hook server started as the agent would,
 * over stdio and over HTTP, under the runtime running this test:
 *
 *   npm test (node --import tsx --test hello-hook.test.ts)  |  bun test  |  deno test -A
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { createAgent } from "sprout-agent";
import { startFakeLlm } from "sprout-agent/testing";

const here = new URL(".", import.meta.url).pathname;
const g = globalThis as { Deno?: unknown; Bun?: unknown };
/** The command that runs hello-hook.ts under this test's runtime (Node needs tsx for .ts). */
const runtime = g.Deno
  ? [process.execPath, "run", "-A"]
  : g.Bun
  ? [process.execPath]
  : [process.execPath, "--import", "tsx"];

/** Starts hello-hook over HTTP; resolves with its URL and a way to stop it. */
function startHttp(env: Record<string, string>): Promise<{ url: string; stop: () => void }> {
  const args = [...runtime.slice(1), "hello-hook.ts", "--port", "0"];
  const child = spawn(runtime[0]!, args, {
    cwd: here,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    child.on("exit", (code) => reject(new Error(`hello-hook exited with ${code}`)));
    child.stdout.on("data", (chunk: Buffer) => {
      const url = /listening on (\S+)/.exec(String(chunk))?.[1];
      if (url) resolve({ url, stop: () => child.kill() });
    });
  });
}

for (const transport of ["stdio", "http"] as const) {
  test(`_Stop objects over ${transport} while the file exists, and lets the turn end once it is gone`, async () => {
    // The agent works in `dir`; the hook server runs in its own folder, and finds NOT_DONE.md
    // in the agent's folder through the cwd the agent sends in _meta.
    const dir = mkdtempSync(join(tmpdir(), "hello-hook-"));
    const notDone = join(dir, "NOT_DONE.md");
    writeFileSync(notDone, "- write the README");
    const llm = await startFakeLlm({ responses: [{ text: "Done." }, { text: "Done now." }, { text: "Done." }] });
    const http = transport === "http" ? await startHttp({}) : undefined;
    const hello = http ? { type: "http", url: http.url } : {
      command: runtime[0],
      args: [...runtime.slice(1), "hello-hook.ts", "--stdio"],
      cwd: here, // the server's own folder (default: the agent's)
    };
    const agent = await createAgent({
      model: { provider: "anthropic", model: "fake", apiKey: "k", baseUrl: llm.anthropicBaseUrl },
      mcpServers: { mcpServers: { hello } },
      hookServers: ["hello"], // MCP_HOOK_SERVERS=hello on the command line
      cwd: dir, // the folder the agent works in
    });
    try {
      assert.deepEqual(agent.failures, []);
      // The file exists: the first "Done." is objected to, and the model sees why.
      const first = agent.prompt("Write the README");
      for await (const _ of first);
      assert.equal((await first.result).objections, 1);
      assert.match(JSON.stringify(llm.requests[1]?.body), /NOT_DONE\.md still exists.*write the README/);
      // The file is gone: the turn ends at once.
      rmSync(notDone);
      const second = agent.prompt("Anything left?");
      for await (const _ of second);
      assert.equal((await second.result).objections, 0);
      assert.equal(llm.requests.length, 3);
    } finally {
      await agent.close();
      http?.stop();
      await llm.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
