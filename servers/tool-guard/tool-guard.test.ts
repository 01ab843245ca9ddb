/**
 * tool-guard against the real agent: sprout-agent's `createAgent`, the fake LLM of
 * "sprout-agent/testing" playing a model that calls tools, the guard started over stdio as the
 * agent would start it, under the runtime running this test, and a small tool server (in this
 * process) that records what actually ran:
 *
 *   npm test (node --import tsx --test tool-guard.test.ts)  |  bun test  |  deno test -A
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";
import { createAgent } from "sprout-agent";
import { startFakeLlm } from "sprout-agent/testing";

const here = new URL(".", import.meta.url).pathname;
const g = globalThis as { Deno?: unknown; Bun?: unknown };
/** The command that runs a .ts file under this test's runtime (Node needs tsx for .ts). */
const runtime = g.Deno
  ? [process.execPath, "run", "-A"]
  : g.Bun
  ? [process.execPath]
  : [process.execPath, "--import", "tsx"];

/** Stands in for a filesystem and a shell server: records each call, runs nothing. */
function workServer(
  ran: Array<{ tool: string; args: Record<string, unknown> }>,
): McpServer {
  const server = new McpServer({ name: "work", version: "1.0.0" });
  const record = (tool: string) => (args: Record<string, unknown>) => {
    ran.push({ tool, args });
    return { content: [{ type: "text" as const, text: `${tool} ran` }] };
  };
  server.registerTool(
    "write_file",
    {
      description: "Writes a file",
      inputSchema: z.object({ path: z.string(), content: z.string() }),
    },
    record("write_file"),
  );
  server.registerTool(
    "shell",
    {
      description: "Runs a shell command",
      inputSchema: z.object({ command: z.string() }),
    },
    record("shell"),
  );
  return server;
}

test("_PreToolUse denies a write outside the folder, asks before rm, rewrites git push --force", async () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "tool-guard-"))); // the folder the agent works in
  const call = (id: string, name: string, args: Record<string, unknown>) => ({
    id,
    name,
    arguments: args,
  });
  const llm = await startFakeLlm({
    responses: [
      {
        toolCalls: [
          call("c1", "work__write_file", {
            path: "../outside.txt",
            content: "x",
          }),
          call("c2", "work__write_file", {
            path: "notes/today.md",
            content: "x",
          }),
          call("c3", "work__shell", { command: "rm -rf build" }),
          call("c4", "work__shell", { command: "git push -f origin main" }),
        ],
      },
      { text: "Done." },
    ],
  });
  const ran: Array<{ tool: string; args: Record<string, unknown> }> = [];
  const agent = await createAgent({
    model: {
      provider: "anthropic",
      model: "fake",
      apiKey: "k",
      baseUrl: llm.anthropicBaseUrl,
    },
    mcpServers: {
      mcpServers: {
        // The guard as .mcp.json would start it; --ask rm leaves git push to the rewrite alone.
        guard: {
          command: runtime[0],
          args: [...runtime.slice(1), "stdio.ts", "--ask", "rm"],
          cwd: here,
        },
      },
    },
    inProcessServers: {
      work: (transport) => serveStdio(() => workServer(ran), { transport }),
    },
    hookServers: ["guard"], // MCP_HOOK_SERVERS=guard on the command line
    cwd: dir,
  });
  try {
    assert.deepEqual(agent.failures, []);
    const run = agent.prompt("Tidy up and push");
    for await (const _ of run);
    assert.equal((await run.result).stopReason, "end_turn");
    // Only the write inside the folder ran, and the push ran with --force-with-lease.
    assert.deepEqual(ran, [
      { tool: "write_file", args: { path: "notes/today.md", content: "x" } },
      {
        tool: "shell",
        args: { command: "git push --force-with-lease origin main" },
      },
    ]);
    // The model was told why: each rule by name.
    const sent = JSON.stringify(llm.requests[1]?.body);
    assert.match(sent, /rule write-outside-cwd.*outside\.txt/);
    assert.match(
      sent,
      /tool-guard asks before .*rm.* \(rule ask-before\).*no one can answer/,
    );
    assert.match(sent, /--force was rewritten to --force-with-lease/);
  } finally {
    await agent.close();
    await llm.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
