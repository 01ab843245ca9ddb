/**
 * Issue 24 against the real Claude Code CLI (npm `@anthropic-ai/claude-code`, pinned, installed
 * on demand into a cache by tests/helpers/claude-code.ts; the tests skip, saying why, only when
 * it cannot be installed), run offline against a fake Anthropic API. One Claude Code process
 * per group:
 * - the command bridge: a todo-enforcer objection (over HTTP, keyed by Claude Code's
 *   `--session-id`) makes Claude Code continue its turn (`Stop hook feedback:`), and the
 *   bridge's `_Stop` budget lets the next stop through;
 * - the MCP proxy: the todo-enforcer and tool-guard behind `hook-proxy` as Claude Code's MCP
 *   servers, their hooks as `mcp_tool` hooks: the model's `todo` call reaches the server, the
 *   model never sees a `_` tool, tool-guard's `_PreToolUse` deny blocks Claude Code's `Write`,
 *   the open todo's objection continues the turn, and the budget ends it.
 * Our CLI and the servers run under Node (the bundles of tests/helpers/runtime.ts), whichever
 * runner runs this file; it runs in one runner only (`runsOnce`).
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hookSettings, mergeSettings, proxySettings } from "../lib/bridge/snippets.ts";
import {
  type FakeAnthropic,
  installClaudeCode,
  runClaude,
  sinceLastTurn,
  startFakeAnthropic,
} from "./helpers/claude-code.ts";
import { httpClient, type StartedServer, startServer } from "./helpers/hook-servers.ts";
import { repoRoot, runsOnce, tsCommand } from "./helpers/runtime.ts";

const installed = runsOnce ? await installClaudeCode() : { reason: "runs in one runner only (Bun's)" };
const skip = "reason" in installed ? `Claude Code end-to-end: ${installed.reason}` : false;
if (skip !== false) console.log(`skipping ${skip}`);
const bin = "bin" in installed ? installed.bin : "";

const cli = tsCommand(join(repoRoot, "cli.ts"), "node");
const shell = (argv: string[]) => argv.map((a) => JSON.stringify(a)).join(" ");
/** Any `mcp__server___hook` name: a `_` tool shown to Claude Code's model. */
const HOOK_TOOL = /mcp__[A-Za-z0-9_-]+?___[A-Za-z]/;
/** How Claude Code hands a stop hook's block to its model: the objection, as our injection JSON. */
const STOP_FEEDBACK =
  /Stop hook feedback:\n\{"hook":"_Stop","server":"todo","text":"You have open todo items\. Keep working\./;
const SESSION = "5b0c6f52-4a3e-4f7e-9d2a-1c2b3d4e5f60";

describe("Claude Code end to end", { skip }, () => {
  let dir: string;
  let todo: StartedServer | undefined;
  let api: FakeAnthropic | undefined;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "sprout-claude-"));
  });
  after(async () => {
    await api?.close();
    await todo?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  /** A project folder with Claude Code's settings (and MCP servers), and a HOME of its own. */
  const project = (name: string, settings: Record<string, unknown>, mcp?: Record<string, unknown>) => {
    const cwd = join(dir, name);
    mkdirSync(join(cwd, ".claude"), { recursive: true });
    mkdirSync(join(dir, `${name}-home`), { recursive: true });
    writeFileSync(
      join(cwd, ".claude", "settings.json"),
      JSON.stringify({ ...settings, ...(mcp === undefined ? {} : { enableAllProjectMcpServers: true }) }),
    );
    if (mcp !== undefined) writeFileSync(join(cwd, ".mcp.json"), JSON.stringify(mcp));
    return { cwd, home: join(dir, `${name}-home`) };
  };

  test("the bridge: a todo-enforcer objection continues Claude Code's turn, and the budget ends it", async () => {
    todo = await startServer(join(repoRoot, "servers/todo-enforcer/main.ts"), ["--store", "memory"], "node");
    const client = await httpClient(todo.url);
    await client.callTool({
      name: "todo",
      arguments: { todos: [{ id: 1, title: "Write the changelog", done: false }] },
      _meta: { "sprout-agent/session": SESSION },
    });
    await client.close();
    const servers = join(dir, "hook-servers.json");
    writeFileSync(servers, JSON.stringify({ mcpServers: { todo: { type: "http", url: todo.url } } }));
    const settings = hookSettings("claude", shell(cli));
    for (const groups of Object.values(settings.hooks) as Array<Array<{ hooks: Array<{ command: string }> }>>) {
      for (const handler of groups[0]!.hooks) handler.command += ` --mcp-config ${JSON.stringify(servers)}`;
    }
    const { cwd, home } = project("bridge", settings);
    api = await startFakeAnthropic((_, i) => ({ text: i === 0 ? "All done." : "Understood, stopping here." }));
    const run = await runClaude(bin, {
      cwd,
      home,
      api: api.url,
      prompt: "Write the changelog",
      args: ["--session-id", SESSION],
      env: { MCP_HOOK_SERVERS: "todo", SPROUT_AGENT_STOP_MAX_REJECTIONS: "1", XDG_STATE_HOME: join(dir, "state") },
    });
    assert.equal(run.code, 0, run.stderr + run.stdout);
    assert.equal(api.requests.length, 2, JSON.stringify(api.requests.map(sinceLastTurn)));
    const feedback = sinceLastTurn(api.requests[1]!);
    assert.equal(feedback.roles[0], "user");
    assert.match(feedback.text, STOP_FEEDBACK);
    assert.match(feedback.text, /Write the changelog/);
    await api.close();
    api = undefined;
  });

  test("C45 the proxy: no _ tool for the model, the todo reaches the server, a _PreToolUse deny blocks Write, the objection continues the turn", async () => {
    const outside = join(dir, "outside");
    mkdirSync(outside);
    const target = join(outside, "notes.txt");
    const node = cli[0]!;
    const proxy = (name: string, server: string, extra: string[] = []) => ({
      command: node,
      args: [
        ...cli.slice(1),
        "hook-proxy",
        "--name",
        name,
        "--",
        ...tsCommand(join(repoRoot, server), "node"),
        ...extra,
      ],
      env: { SPROUT_AGENT_STOP_MAX_REJECTIONS: "1" },
    });
    const mcp = {
      mcpServers: {
        todo: proxy("todo", "servers/todo-enforcer/stdio.ts"),
        // Claude Code's Write tool is claude__Write to our hooks, its path argument file_path.
        guard: proxy("guard", "servers/tool-guard/stdio.ts", [
          "--write-tools",
          "claude__Write",
          "--path-args",
          "file_path",
        ]),
      },
    };
    const settings = mergeSettings(proxySettings("todo"), proxySettings("guard")).merged;
    const { cwd, home } = project("proxy", settings, mcp);
    api = await startFakeAnthropic((_, i) =>
      [
        { toolCalls: [{ name: "mcp__todo__todo", arguments: { todos: [{ id: 1, title: "Tidy up", done: false }] } }] },
        { toolCalls: [{ name: "Write", arguments: { file_path: target, content: "x" } }] },
        { text: "All done." },
      ][i] ?? { text: "Understood, stopping here." }
    );
    const run = await runClaude(bin, {
      cwd,
      home,
      api: api.url,
      prompt: "Tidy up",
      args: ["--allowedTools", "mcp__todo__todo", "Write"],
    });
    assert.equal(run.code, 0, run.stderr + run.stdout);
    const turns = api.requests.map(sinceLastTurn);
    assert.equal(api.requests.length, 4, JSON.stringify(turns));
    // The model sees the proxied tool and no hook, in any request.
    assert.ok(api.requests.some((r) => r.raw.includes("mcp__todo__todo")));
    for (const r of api.requests) assert.doesNotMatch(r.raw, HOOK_TOOL);
    assert.match(turns[1]!.text, /\[ \] 1\. Tidy up/); // the todo tool's own result
    assert.match(turns[2]!.text, /write-outside-cwd/); // the deny, as Write's result
    assert.equal(existsSync(target), false);
    assert.equal(turns[3]!.roles[0], "user");
    assert.match(turns[3]!.text, STOP_FEEDBACK);
  });
});
