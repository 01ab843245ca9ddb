/**
 * The real Claude Code CLI (npm `@anthropic-ai/claude-code`, pinned in tests/helpers/claude-code-peer.ts,
 * installed on demand into a cache folder) against our hook servers, offline, with a fake
 * Anthropic server (issue 24): `cli.ts hook-bridge` as its command hook, installed with the
 * settings `hook-bridge --print-config claude` prints. A todo-enforcer objection makes Claude Code
 * continue its turn; a tool-guard `_PreToolUse` deny blocks its tool; session and prompt context
 * reach its model; our `_Stop` budget ends its loop; an unreachable server fails open; a
 * subagent gets `_SubagentStart`'s context and `_SubagentStop`'s objection under its own budget.
 * Runs under each of the three runtimes: the bridge Claude Code spawns on every event runs under
 * the runtime running this file (about 6 s a runner once Claude Code is installed; the first run
 * installs it, a minute or two, one runner installing while the others wait).
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hookSettings } from "../lib/bridge/snippets.ts";
import { type ClaudeFake, installClaudeCode, runClaude, startClaudeFake } from "./helpers/claude-code-peer.ts";
import { fixtureCommand } from "./helpers/session.ts";
import { httpClient, type StartedServer, startServer } from "./helpers/hook-servers.ts";
import { repoRoot, runtime, tsCommand } from "./helpers/runtime.ts";

const claude = await installClaudeCode();
const skip = "skip" in claude ? claude.skip : false;
if (skip !== false) console.log(`skipping Claude Code with hook-bridge: ${skip}`);

type Message = { role: string; content: unknown };
/** The messages of a recorded request. */
const messagesOf = (body: Record<string, unknown>) => (body["messages"] ?? []) as Message[];
/** The text of a message's content (a string, or its text and tool_result blocks). */
function textOf(message: Message | undefined): string {
  if (message === undefined) return "";
  if (typeof message.content === "string") return message.content;
  return (message.content as Array<Record<string, unknown>>).map((b) =>
    typeof b["text"] === "string"
      ? b["text"]
      : b["type"] === "tool_result"
      ? textOf({ role: "user", content: b["content"] ?? "" })
      : ""
  ).join("\n");
}

/** A project folder with Claude Code's settings running `cli.ts hook-bridge` (as printed) and a `.mcp.json` for the bridge. */
function project(root: string, name: string, servers: Record<string, unknown>): string {
  const dir = join(root, name);
  mkdirSync(join(dir, ".claude"), { recursive: true });
  const command = tsCommand(join(repoRoot, "cli.ts")).join(" ");
  writeFileSync(join(dir, ".claude", "settings.json"), JSON.stringify(hookSettings("claude", command), null, 2));
  writeFileSync(join(dir, ".mcp.json"), JSON.stringify({ mcpServers: servers }));
  return dir;
}

describe("Claude Code with cli.ts hook-bridge as its command hook", { skip }, () => {
  let root: string;
  let home: string;
  let todo: StartedServer;
  let fake: ClaudeFake | undefined;
  before(async () => {
    root = mkdtempSync(join(tmpdir(), "sprout-claude-code-"));
    home = join(root, "home");
    mkdirSync(home);
    todo = await startServer(
      join(repoRoot, "servers/todo-enforcer/main.ts"),
      ["--port", "0", "--store", "memory"],
      runtime(),
    );
  });
  after(async () => {
    await fake?.close();
    await todo.stop();
    rmSync(root, { recursive: true, force: true });
  });
  const bin = "bin" in claude ? claude.bin : "";
  // Claude Code reads no project .mcp.json here: the hook servers are the bridge's, not its own.
  const noServers = ["--strict-mcp-config", "--mcp-config", '{"mcpServers":{}}'];

  test("C46 a todo-enforcer objection makes Claude Code continue its turn; an empty _Stop lets it end", async () => {
    const session = "3f2b8c1e-9a4d-4e6f-8b7a-1c2d3e4f5a6b";
    const client = await httpClient(todo.url);
    const write = (done: boolean) =>
      client.callTool({
        name: "todo",
        arguments: { todos: [{ id: 1, title: "Write the docs", done }] },
        _meta: { "sprout-agent/session": session },
      });
    await write(false);
    fake = await startClaudeFake(async (_request, index) => {
      if (index === 0) return { text: "I am done." };
      await write(true); // the continued turn finishes the item
      return { text: "The docs are written." };
    });
    const cwd = project(root, "todo", { todo: { type: "http", url: todo.url } });
    const run = await runClaude({
      bin,
      fake,
      cwd,
      home,
      prompt: "Write the docs",
      args: [...noServers, "--session-id", session],
      env: { MCP_HOOK_SERVERS: "todo", XDG_STATE_HOME: join(root, "state") },
    });
    await client.close();
    assert.equal(run.code, 0, run.stderr);
    const turns = fake.turns();
    assert.equal(turns.length, 2, JSON.stringify(fake.requests.map((r) => [r.method, r.url, r.rejected])));
    const last = messagesOf(turns[1]!.body).filter((m) => m.role !== "system").at(-1);
    assert.equal(last?.role, "user");
    // Claude Code 2.1 wraps the feedback in a <system-reminder> saying it comes from a hook.
    const feedback = textOf(last).match(/(?:^|\n)Stop hook feedback:\n(\{.*\})(?:\n|$)/)?.[1];
    assert.ok(feedback !== undefined, textOf(last));
    const objection = JSON.parse(feedback) as { hook: string; server: string; text: string };
    assert.deepEqual([objection.hook, objection.server], ["_Stop", "todo"]);
    assert.match(objection.text, /^You have open todo items\. Keep working\.\n\n\[ \] 1\. Write the docs/);
    assert.match(run.stdout, /The docs are written\./);
  });

  test("a tool-guard _PreToolUse deny blocks Claude Code's Write outside the folder; one inside runs", async () => {
    const outside = join(root, "outside.txt");
    const [command, ...args] = tsCommand(join(repoRoot, "servers/tool-guard/stdio.ts"));
    const cwd = project(root, "guard", {
      guard: { command, args: [...args, "--write-tools", "claude__Write", "--path-args", "file_path"] },
    });
    const inside = join(cwd, "inside.txt");
    await fake?.close();
    const write = (path: string) => ({ toolCalls: [{ name: "Write", arguments: { file_path: path, content: "x" } }] });
    fake = await startClaudeFake((_request, index) =>
      index === 0 ? write(inside) : index === 1 ? write(outside) : { text: "The write was denied." }
    );
    const run = await runClaude({
      bin,
      fake,
      cwd,
      home,
      prompt: "Write inside.txt and outside.txt",
      args: [...noServers, "--allowedTools", "Write"],
      env: { MCP_HOOK_SERVERS: "guard", XDG_STATE_HOME: join(root, "state") },
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(existsSync(inside), true, "the allowed Write did not run");
    assert.equal(existsSync(outside), false, "the denied Write ran");
    const turns = fake.turns();
    assert.equal(turns.length, 3, JSON.stringify(fake.requests.map((r) => [r.method, r.url, r.rejected])));
    const result = (turn: number) => textOf(messagesOf(turns[turn]!.body).filter((m) => m.role !== "system").at(-1));
    assert.doesNotMatch(result(1), /Denied by tool-guard/);
    assert.match(result(2), /Denied by tool-guard \(rule write-outside-cwd\)/);
  });

  test("SessionStart and UserPromptSubmit text reach its model; the _Stop budget ends its loop after N objections", async () => {
    const { command, args } = fixtureCommand();
    const cwd = project(root, "nag", {
      nag: {
        command,
        args,
        env: {
          FIXTURE_STOP: "Not yet.",
          FIXTURE_START_HOOK: "Session context from the hook.",
          FIXTURE_PROMPT_HOOK: "Prompt context from the hook.",
          FIXTURE_NO_TOOLS: "1",
        },
      },
    });
    await fake?.close();
    fake = await startClaudeFake((_request, index) => ({ text: `Stopping, take ${index + 1}.` }));
    const run = await runClaude({
      bin,
      fake,
      cwd,
      home,
      prompt: "Do the work",
      args: noServers,
      env: { MCP_HOOK_SERVERS: "nag", SPROUT_AGENT_STOP_MAX_REJECTIONS: "2", XDG_STATE_HOME: join(root, "state") },
    });
    assert.equal(run.code, 0, run.stderr);
    const turns = fake.turns();
    // Two objections, then the budget lets the third stop through (Claude Code's own cap is 8).
    assert.equal(turns.length, 3, JSON.stringify(fake.requests.map((r) => [r.method, r.url, r.rejected])));
    // Claude Code 2.1 puts additionalContext in its role "system" messages, after its own label.
    const system = messagesOf(turns[0]!.body).filter((m) => m.role === "system").map(textOf).join("\n");
    for (
      const [event, hook, text] of [["SessionStart", "_SessionStart", "Session"], [
        "UserPromptSubmit",
        "_UserPromptSubmit",
        "Prompt",
      ]]
    ) {
      const injected = JSON.stringify({ hook, server: "nag", text: `${text} context from the hook.` });
      assert.ok(system.includes(`${event} hook additional context: ${injected}`), system);
    }
    for (const turn of turns.slice(1)) {
      const last = textOf(messagesOf(turn.body).filter((m) => m.role !== "system").at(-1));
      assert.match(last, /(?:^|\n)Stop hook feedback:\n\{"hook":"_Stop","server":"nag","text":"Not yet\."\}/);
    }
    assert.match(run.stdout, /Stopping, take 3\./);
    // Its SessionEnd forgot the session's budget: no state file is left.
    assert.deepEqual(readdirSync(join(root, "state", "sprout-agent", "bridge")), []);
  });

  test("Claude Code's subagent: SubagentStart's context reaches the child's model, the child's calls name it, SubagentStop objects under the child's budget", async () => {
    const log = join(root, "subagent-hooks.log");
    const [command, ...args] = tsCommand(
      join(repoRoot, "tests/fixtures/subagent-hook-server.ts"),
      runtime() === "node" ? "bun" : runtime(),
    );
    const cwd = project(root, "subagent", { sub: { command, args, env: { SUBAGENT_HOOK_LOG: log } } });
    const TASK = "Count the files in this folder";
    const isChild = (messages: Message[]) =>
      messages.some((m) => textOf(m).includes(TASK)) && !messages.some((m) => textOf(m).includes("Delegate the count"));
    await fake?.close();
    fake = await startClaudeFake((request) => {
      const messages = messagesOf(request.body).filter((m) => m.role !== "system");
      const all = messages.map(textOf).join("\n");
      // The child's requests hold the task the parent delegated, not the parent's prompt.
      if (isChild(messages)) return { text: "Found 3 files." };
      if (all.includes("Found 3 files.")) return { text: "The subagent found 3 files." };
      // Claude Code 2.1 runs the subagent in the background: its tool result names the task's
      // output file, and the child's report comes back as a later notification.
      if (all.includes("output_file:")) return { text: "Waiting for the subagent." };
      // Claude Code's delegation tool (Agent, formerly Task), as its request lists it.
      const tools = (request.body["tools"] ?? []) as Array<{ name: string }>;
      const name = tools.find((t) => t.name === "Agent" || t.name === "Task")?.name ?? "Agent";
      return {
        toolCalls: [{
          name,
          arguments: { description: "Count files", prompt: TASK, subagent_type: "general-purpose" },
        }],
      };
    });
    const run = await runClaude({
      bin,
      fake,
      cwd,
      home,
      prompt: "Delegate the count",
      args: [...noServers, "--allowedTools", "Agent,Task"],
      // One objection per child: the stdio server starts afresh at each event and cannot
      // remember that it objected, so the child's own budget ends its loop.
      env: { MCP_HOOK_SERVERS: "sub", SPROUT_AGENT_STOP_MAX_REJECTIONS: "1", XDG_STATE_HOME: join(root, "state") },
      timeoutMs: 90_000,
    });
    const seenTurns = () =>
      JSON.stringify(fake!.turns().map((t) => messagesOf(t.body).map(textOf).join(" | ").slice(-400)));
    assert.equal(run.code, 0, `${run.stderr}\n${run.stdout.slice(0, 2000)}\n${seenTurns()}`);
    assert.match(run.stdout, /The subagent found 3 files\./);
    const childTurns = fake.turns().filter((t) => isChild(messagesOf(t.body).filter((m) => m.role !== "system")));
    // _SubagentStop objected once ("Check your work once more"): the child ran a second turn,
    // and its budget (1) let the second stop through without calling the server.
    assert.equal(childTurns.length, 2, JSON.stringify(fake.turns().map((t) => messagesOf(t.body).map(textOf))));
    const childText = messagesOf(childTurns[0]!.body).map(textOf).join("\n");
    assert.match(childText, /"hook":"_SubagentStart","server":"sub","text":"Context for general-purpose: "/);
    assert.match(messagesOf(childTurns[1]!.body).map(textOf).join("\n"), /Check your work once more/);
    const records = readFileSync(log, "utf8").trim().split("\n").map((l) =>
      JSON.parse(l) as { hook: string; agent: string }
    );
    const calls = records.map((r) => `${r.hook} ${r.agent}`);
    assert.deepEqual(calls.filter((c) => c.startsWith("_Subagent")), [
      "_SubagentStart general-purpose",
      "_SubagentStop general-purpose",
    ]);
    // The parent's own calls carry no agent: its _Stop ran for it alone.
    assert.ok(calls.includes("_Stop main"), calls.join(", "));
    assert.ok(!calls.includes("_Stop general-purpose"), calls.join(", "));
  });

  test("C46 a bridge that cannot reach its hook server fails open: Claude Code ends its turn; a hook exiting 2 would block it", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    const cwd = project(root, "down", { down: { type: "http", url: `http://127.0.0.1:${port}/mcp` } });
    await fake?.close();
    fake = await startClaudeFake(() => ({ text: "Finished." }));
    const run = await runClaude({
      bin,
      fake,
      cwd,
      home,
      prompt: "Finish",
      args: noServers,
      env: { MCP_HOOK_SERVERS: "down", XDG_STATE_HOME: join(root, "state") },
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(fake.turns().length, 1);
    assert.match(run.stdout, /Finished\./);
    // Why the bridge never exits 2: the same host reads a command hook's exit 2 as "block" and
    // continues the turn with its stderr, up to its own cap.
    writeFileSync(
      join(cwd, ".claude", "settings.json"),
      JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: "command", command: "echo usage error >&2; exit 2" }] }] } }),
    );
    await fake.close();
    fake = await startClaudeFake(() => ({ text: "Finished." }));
    const looped = await runClaude({ bin, fake, cwd, home, prompt: "Finish", args: noServers });
    assert.equal(looped.code, 0, looped.stderr);
    const turns = fake.turns();
    assert.ok(turns.length > 2, `${turns.length} requests`);
    assert.match(textOf(messagesOf(turns[1]!.body).filter((m) => m.role !== "system").at(-1)), /usage error/);
  });
});
