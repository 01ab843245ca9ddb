/**
 * `cli.ts hook-bridge` (issue 24): each host's documented payloads (tests/fixtures/bridge/,
 * one file per host and event, each naming its source) read as our hook points; the answers in
 * each host's words, Codex's checked against its published output schemas; one event end to
 * end in-process against the todo-enforcer's app; and the command as a child process against
 * the todo-enforcer over HTTP and the fixture server over stdio.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { type BridgeAnswer, hostOutput } from "../lib/bridge/answers.ts";
import { runBridge } from "../lib/bridge/bridge.ts";
import { stopBudget } from "../lib/bridge/budget.ts";
import { detectHost, type HostName, readEvent } from "../lib/bridge/hosts.ts";
import { hookSettings } from "../lib/bridge/snippets.ts";
import type { HookName } from "../lib/hooks/points.ts";
import type { McpServerConfig } from "../lib/mcp/types.ts";
import { createApp } from "../servers/todo-enforcer/app.ts";
import { fixtureCalls, fixtureConfig, runCli } from "./helpers/cli.ts";
import { appFetch, httpClient, type StartedServer, startServer } from "./helpers/hook-servers.ts";
import { schemaProblems } from "./helpers/json-schema.ts";
import { repoRoot, runtime, tsCommand } from "./helpers/runtime.ts";

const FIXTURES = join(repoRoot, "tests/fixtures/bridge");
const fixture = (name: string) =>
  (JSON.parse(readFileSync(join(FIXTURES, `${name}.json`), "utf8")) as { payload: Record<string, unknown> }).payload;
const codexSchema = (name: string) =>
  (JSON.parse(readFileSync(join(FIXTURES, "codex-schemas", `${name}.command.output.schema.json`), "utf8")) as {
    schema: Record<string, unknown>;
  }).schema;

/** The hook point each documented payload fires. */
const EXPECTED: Record<string, HookName> = {
  "claude-stop": "_Stop",
  "claude-subagent-start": "_SubagentStart",
  "claude-subagent-stop": "_SubagentStop",
  "claude-pre-tool-use": "_PreToolUse",
  "claude-post-tool-use": "_PostToolUse",
  "claude-user-prompt-submit": "_UserPromptSubmit",
  "claude-session-start": "_SessionStart",
  "claude-session-end": "_SessionEnd",
  "claude-pre-compact": "_PreCompact",
  "codex-stop": "_Stop",
  "codex-pre-tool-use": "_PreToolUse",
  "codex-post-tool-use": "_PostToolUse",
  "codex-user-prompt-submit": "_UserPromptSubmit",
  "codex-session-start": "_SessionStart",
  "codex-subagent-start": "_SubagentStart",
  "gemini-after-agent": "_Stop",
  "gemini-before-tool": "_PreToolUse",
  "gemini-after-tool": "_PostToolUse",
  "gemini-before-agent": "_UserPromptSubmit",
  "gemini-session-start": "_SessionStart",
  "copilot-pre-tool-use": "_PreToolUse",
  "copilot-post-tool-use": "_PostToolUse",
  "copilot-agent-stop": "_Stop",
  "copilot-user-prompt-submitted": "_UserPromptSubmit",
  "copilot-PreToolUse": "_PreToolUse",
};

describe("hook-bridge: the hosts' documented payloads", () => {
  test("every fixture names its source and is mapped", () => {
    const names = readdirSync(FIXTURES).filter((f) => f.endsWith(".json")).map((f) => f.slice(0, -5)).sort();
    assert.deepEqual(names, Object.keys(EXPECTED).sort());
    for (const name of names) {
      const file = JSON.parse(readFileSync(join(FIXTURES, `${name}.json`), "utf8")) as { source: string };
      assert.match(file.source, /^https:\/\//, name);
    }
  });

  for (const [name, hook] of Object.entries(EXPECTED)) {
    test(`${name} fires ${hook}`, () => {
      const host = name.split("-")[0] as HostName;
      const event = readEvent(host, fixture(name));
      assert.equal(event.hook, hook);
      assert.equal(typeof event.sessionId, "string");
      if (hook === "_PreToolUse" || hook === "_PostToolUse") assert.ok(event.toolCall !== undefined);
      if (hook === "_PostToolUse") assert.ok(event.toolResult !== undefined);
    });
  }

  test("detection: Gemini CLI's names, Codex's turn_id, else Claude Code's shape; camelCase is Copilot CLI", () => {
    for (const name of Object.keys(EXPECTED)) {
      const expected = name === "copilot-PreToolUse" ? "claude" : name.split("-")[0];
      // Codex's SessionStart has no turn_id and Gemini CLI's SessionStart no name of its own: both
      // read as Claude Code's shape (the printed settings pass --host).
      const shared = name === "codex-session-start" || name === "gemini-session-start";
      assert.equal(detectHost(fixture(name)), shared ? "claude" : expected, name);
    }
    assert.equal(detectHost({ tool_name: "x" }), undefined);
  });

  test("tool calls: a built-in tool is qualified with the host's name, an MCP tool with its server", () => {
    const bash = readEvent("claude", fixture("claude-pre-tool-use")).toolCall!;
    assert.deepEqual(
      { name: bash.name, server: bash.server, tool: bash.tool, id: bash.id },
      { name: "claude__Bash", server: "claude", tool: "Bash", id: "toolu_01ABC123..." },
    );
    assert.equal(bash.arguments.command, "npm test");
    const mcp = readEvent("gemini", fixture("gemini-after-tool"));
    assert.deepEqual([mcp.toolCall!.name, mcp.toolCall!.server, mcp.toolCall!.tool], [
      "fs__read_file",
      "fs",
      "read_file",
    ]);
    assert.deepEqual(mcp.toolResult, { text: "hello", isError: false });
    // Copilot CLI's camelCase toolArgs is a JSON string: parsed.
    const copilot = readEvent("copilot", fixture("copilot-pre-tool-use")).toolCall!;
    assert.deepEqual(copilot.arguments, { command: "rm -rf build" });
    assert.equal(readEvent("copilot", fixture("copilot-post-tool-use")).toolResult!.text, "3 passing");
  });

  test("the session's fields: stop_hook_active, the last message, SessionStart's source", () => {
    const stop = readEvent("claude", fixture("claude-stop"));
    assert.equal(stop.stopHookActive, true);
    assert.equal(stop.lastAssistantText, "I've completed the refactoring. Here's a summary...");
    assert.equal(readEvent("gemini", fixture("gemini-after-agent")).lastAssistantText, "All done.");
    assert.equal(readEvent("codex", fixture("codex-session-start")).source, "resume");
    assert.equal(readEvent("claude", fixture("claude-session-start")).source, "startup");
    assert.throws(() => readEvent("copilot", { sessionId: "x" }), /names no event/);
  });
});

const BLOCK = '{"hook":"_Stop","server":"todo","text":"2 open"}';
const DENY = '{"hook":"_PreToolUse","server":"guard","text":"no rm"}';

describe("hook-bridge: answers in each host's words", () => {
  test("the schema checker rejects what Codex's schemas reject", () => {
    assert.notDeepEqual(schemaProblems(codexSchema("stop"), { decision: "deny", reason: "x" }), []);
    assert.notDeepEqual(schemaProblems(codexSchema("stop"), { decision: "block" }), []);
    assert.notDeepEqual(
      schemaProblems(codexSchema("pre-tool-use"), { hookSpecificOutput: { permissionDecision: "deny" } }),
      [],
    );
    assert.notDeepEqual(schemaProblems(codexSchema("pre-tool-use"), { permissionDecision: "deny" }), []);
    assert.deepEqual(schemaProblems(codexSchema("stop"), { decision: "block", reason: "x" }), []);
  });

  const cases: Array<[string, string, HookName, BridgeAnswer]> = [
    ["stop", "Stop", "_Stop", { block: BLOCK, notes: [] }],
    ["stop", "Stop", "_Stop", { halt: "enough", notes: ["a warning"] }],
    ["pre-tool-use", "PreToolUse", "_PreToolUse", { permission: { decision: "deny", reason: DENY }, notes: [] }],
    ["pre-tool-use", "PreToolUse", "_PreToolUse", { permission: { decision: "ask", reason: DENY }, notes: [] }],
    ["pre-tool-use", "PreToolUse", "_PreToolUse", {
      permission: { decision: "allow", updatedInput: { command: "ls" } },
      context: "ctx",
      notes: [],
    }],
    ["post-tool-use", "PostToolUse", "_PostToolUse", { context: "ctx", replaceResult: "new", notes: [] }],
    ["user-prompt-submit", "UserPromptSubmit", "_UserPromptSubmit", { context: "ctx", notes: [] }],
    ["session-start", "SessionStart", "_SessionStart", { context: "ctx", notes: ["n"] }],
  ];
  for (const [schema, event, hook, answer] of cases) {
    test(`Codex ${event} ${JSON.stringify(answer)} fits its published output schema`, () => {
      const { json } = hostOutput("codex", event, hook, answer);
      assert.ok(json !== undefined);
      assert.deepEqual(schemaProblems(codexSchema(schema), json), []);
    });
  }

  test("Codex cannot ask or rewrite: both become a deny that says why; an allow alone says nothing", () => {
    const ask = hostOutput("codex", "PreToolUse", "_PreToolUse", {
      permission: { decision: "ask", reason: DENY },
      notes: [],
    });
    const specific = ask.json!.hookSpecificOutput as Record<string, unknown>;
    assert.equal(specific.permissionDecision, "deny");
    assert.match(String(specific.permissionDecisionReason), /cannot ask/);
    const rewrite = hostOutput("codex", "PreToolUse", "_PreToolUse", {
      permission: { decision: "allow", updatedInput: { command: "ls" } },
      notes: [],
    });
    assert.match(
      String((rewrite.json!.hookSpecificOutput as Record<string, unknown>).permissionDecisionReason),
      /rewritten to \{"command":"ls"\}/,
    );
    assert.equal(
      hostOutput("codex", "PreToolUse", "_PreToolUse", { permission: { decision: "allow" }, notes: [] }).json,
      undefined,
    );
  });

  test("Claude Code: decision/reason at Stop, hookSpecificOutput at the tool and injecting points", () => {
    assert.deepEqual(hostOutput("claude", "Stop", "_Stop", { block: BLOCK, notes: [] }).json, {
      decision: "block",
      reason: BLOCK,
    });
    assert.deepEqual(
      hostOutput("claude", "PreToolUse", "_PreToolUse", {
        permission: { decision: "ask", reason: DENY, updatedInput: { a: 1 } },
        notes: [],
      }).json,
      {
        hookSpecificOutput: {
          hookEventName: "PreToolUse",
          permissionDecision: "ask",
          permissionDecisionReason: DENY,
          updatedInput: { a: 1 },
        },
      },
    );
    assert.deepEqual(hostOutput("claude", "SessionStart", "_SessionStart", { context: "ctx", notes: [] }).json, {
      hookSpecificOutput: { hookEventName: "SessionStart", additionalContext: "ctx" },
    });
    assert.deepEqual(hostOutput("claude", "SubagentStop", "_SubagentStop", { halt: "enough", notes: ["w"] }).json, {
      continue: false,
      stopReason: "enough",
      systemMessage: "w",
    });
    // Nothing to say: nothing on stdout.
    assert.equal(hostOutput("claude", "Stop", "_Stop", { notes: [] }).json, undefined);
  });

  test("Gemini CLI: deny at AfterAgent and BeforeTool, tool_input for a rewrite, a result replaced", () => {
    assert.deepEqual(hostOutput("gemini", "AfterAgent", "_Stop", { block: BLOCK, notes: [] }).json, {
      decision: "deny",
      reason: BLOCK,
    });
    const ask = hostOutput("gemini", "BeforeTool", "_PreToolUse", {
      permission: { decision: "ask", reason: DENY },
      notes: [],
    });
    assert.equal(ask.json!.decision, "deny");
    assert.deepEqual(
      hostOutput("gemini", "BeforeTool", "_PreToolUse", {
        permission: { decision: "allow", updatedInput: { command: "ls" } },
        notes: [],
      }).json,
      { hookSpecificOutput: { tool_input: { command: "ls" } } },
    );
    assert.deepEqual(
      hostOutput("gemini", "AfterTool", "_PostToolUse", { replaceResult: "new", context: "ctx", notes: [] }).json,
      { decision: "deny", reason: "new", hookSpecificOutput: { additionalContext: "ctx" } },
    );
  });

  test("Copilot CLI: top-level permissionDecision and modifiedArgs, decision block at agentStop, nothing it does not read", () => {
    assert.deepEqual(
      hostOutput("copilot", "preToolUse", "_PreToolUse", {
        permission: { decision: "deny", reason: DENY },
        notes: [],
      }).json,
      { permissionDecision: "deny", permissionDecisionReason: DENY },
    );
    assert.deepEqual(
      hostOutput("copilot", "preToolUse", "_PreToolUse", {
        permission: { decision: "allow", updatedInput: { command: "ls" } },
        notes: [],
      }).json,
      { permissionDecision: "allow", modifiedArgs: { command: "ls" } },
    );
    assert.deepEqual(hostOutput("copilot", "agentStop", "_Stop", { block: BLOCK, notes: [] }).json, {
      decision: "block",
      reason: BLOCK,
    });
    const start = hostOutput("copilot", "sessionStart", "_SessionStart", { context: "ctx", notes: [] });
    assert.equal(start.json, undefined);
    assert.match(start.stderr.join("\n"), /not delivered/);
  });

  test("--print-config: every mapped event runs the bridge with --host (Copilot CLI also --event)", () => {
    const claude = hookSettings("claude");
    assert.deepEqual(Object.keys(claude.hooks).sort(), [
      "PostToolUse",
      "PreCompact",
      "PreToolUse",
      "SessionEnd",
      "SessionStart",
      "Stop",
      "SubagentStart",
      "SubagentStop",
      "UserPromptSubmit",
    ]);
    const handler = (claude.hooks.Stop![0] as { hooks: Array<{ command: string }> }).hooks[0]!;
    assert.equal(handler.command, "sprout-agent hook-bridge --host claude");
    const copilot = hookSettings("copilot", "bun /opt/sprout/cli.ts");
    assert.equal(copilot.version, 1);
    assert.equal(
      (copilot.hooks.agentStop![0] as { bash: string }).bash,
      "bun /opt/sprout/cli.ts hook-bridge --host copilot --event agentStop",
    );
    assert.ok("AfterAgent" in hookSettings("gemini").hooks);
  });
});

describe("hook-bridge: one event end to end, in-process, against the todo-enforcer's app", () => {
  const app = createApp();
  const fetch = appFetch(app) as unknown as typeof globalThis.fetch;
  const servers = (): McpServerConfig[] => [{
    name: "todo",
    transport: { type: "http", url: "http://localhost:8787/mcp", headers: {} },
  }];
  let state: string;
  before(async () => {
    state = mkdtempSync(join(tmpdir(), "sprout-bridge-state-"));
    const client = await httpClient("http://localhost:8787/mcp", { fetch: appFetch(app) });
    for (const session of ["inproc-1", "gem-1", "cop-1", "b5f6c1c2-1111-2222-3333-444455556666"]) {
      await client.callTool({
        name: "todo",
        arguments: { todos: [{ id: 1, title: "Ship the bridge", done: false }] },
        _meta: { "sprout-agent/session": session },
      });
    }
    await client.close();
  });
  after(() => rmSync(state, { recursive: true, force: true }));
  const bridge = (host: HostName | undefined, payload: Record<string, unknown>, env: Record<string, string> = {}) =>
    runBridge({
      ...(host === undefined ? {} : { host }),
      input: JSON.stringify(payload),
      servers,
      env: { MCP_HOOK_SERVERS: "todo", ...env },
      readFile: (p) => readFileSync(p, "utf8"),
      cwd: "/tmp",
      stateDir: state,
      fetch,
    });

  test("each host's stop is blocked in its own words while a todo is open, and the budget ends it", async () => {
    const claude = await bridge("claude", {
      ...fixture("claude-stop"),
      session_id: "inproc-1",
      stop_hook_active: false,
    });
    assert.equal(claude.json?.decision, "block");
    assert.match(String(claude.json?.reason), /You have open todo items\. Keep working\./);
    const gemini = await bridge(undefined, fixture("gemini-after-agent"));
    assert.equal(gemini.host, "gemini");
    assert.equal(gemini.json?.decision, "deny");
    const copilot = await bridge("copilot", fixture("copilot-agent-stop"));
    assert.equal(copilot.json?.decision, "block");
    const codex = await bridge("codex", fixture("codex-stop"));
    assert.deepEqual(schemaProblems(codexSchema("stop"), codex.json), []);
    assert.equal(codex.json?.decision, "block");
    // inproc-1 has used one of its 2; the second blocks, the third is accepted.
    const env = { SPROUT_AGENT_STOP_MAX_REJECTIONS: "2" };
    const stop = { ...fixture("claude-stop"), session_id: "inproc-1" };
    assert.equal((await bridge("claude", stop, env)).json?.decision, "block");
    const third = await bridge("claude", stop, env);
    assert.equal(third.json, undefined);
    assert.match(third.stderr.join("\n"), /Stop-hook budget exhausted \(2 of 2/);
    // SessionEnd forgets the session's budget.
    await bridge("claude", { ...fixture("claude-session-end"), session_id: "inproc-1" }, env);
    assert.equal(stopBudget(state, "claude", "inproc-1").used(), 0);
  });

  test("C39 a host's SubagentStop calls _SubagentStop, never the session's _Stop, under a budget of its own", async () => {
    // The todo-enforcer has a _Stop and no _SubagentStop: the child's stop is let through
    // although the session's todo list is open (its _Stop would block).
    const child = await bridge("claude", { ...fixture("claude-subagent-stop"), session_id: "sub-1" });
    assert.equal(child.hook, "_SubagentStop");
    assert.equal(child.json, undefined);
    // The two budgets are two files; SessionEnd forgets both.
    const own = stopBudget(state, "claude", "sub-1");
    const subagents = stopBudget(state, "claude", "sub-1", "subagent");
    assert.notEqual(own.file, subagents.file);
    subagents.spend();
    assert.deepEqual([own.used(), subagents.used()], [0, 1]);
    await bridge("claude", { ...fixture("claude-session-end"), session_id: "sub-1" });
    assert.equal(subagents.used(), 0);
  });

  test("MCP_HOOK_SERVERS off: nothing is connected and nothing is said", async () => {
    const out = await runBridge({
      host: "claude",
      input: JSON.stringify({ ...fixture("claude-stop"), session_id: "inproc-1" }),
      servers,
      env: {},
      readFile: () => "",
      cwd: "/tmp",
      stateDir: state,
      fetch: () => Promise.reject(new Error("must not connect")),
    });
    assert.deepEqual([out.json, out.stderr], [undefined, []]);
  });
});

describe("hook-bridge: a host's subagents, against an SDK hook server over stdio", () => {
  let dir: string;
  let log: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "sprout-bridge-subagents-"));
    log = join(dir, "hooks.log");
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  const bridge = (host: HostName, payload: Record<string, unknown>) => {
    const [command, ...args] = tsCommand(
      join(repoRoot, "tests/fixtures/subagent-hook-server.ts"),
      runtime() === "node" ? "bun" : runtime(),
    );
    return runBridge({
      host,
      input: JSON.stringify(payload),
      servers:
        () => [{ name: "sub", transport: { type: "stdio", command: command!, args, env: { SUBAGENT_HOOK_LOG: log } } }],
      // One objection per subagent: a stdio server starts afresh at each event (it cannot
      // remember that it objected), so the bridge's budget is what ends the child's loop.
      env: { MCP_HOOK_SERVERS: "sub", SPROUT_AGENT_STOP_MAX_REJECTIONS: "1", PATH: process.env["PATH"] ?? "" },
      readFile: (p) => readFileSync(p, "utf8"),
      cwd: dir,
      stateDir: join(dir, "state"),
    });
  };
  /** The hook calls the server recorded, in order. */
  const records = () =>
    readFileSync(log, "utf8").trim().split("\n").map((l) =>
      JSON.parse(l) as { hook: string; agent: string; id?: string; meta: Record<string, unknown> }
    );

  test("SubagentStart injects _SubagentStart's text into the child; the child's calls name it in _meta; its stops spend its own budget", async () => {
    const start = await bridge("claude", fixture("claude-subagent-start"));
    assert.equal(start.hook, "_SubagentStart");
    const specific = start.json?.hookSpecificOutput as Record<string, unknown>;
    assert.equal(specific.hookEventName, "SubagentStart");
    assert.deepEqual(JSON.parse(String(specific.additionalContext)), {
      hook: "_SubagentStart",
      server: "sub",
      text: "Context for Explore: ",
    });
    // A tool call inside the subagent (Claude Code adds agent_id and agent_type) names the child.
    await bridge("claude", { ...fixture("claude-pre-tool-use"), agent_id: "agent-abc123", agent_type: "Explore" });
    await bridge("claude", fixture("claude-pre-tool-use")); // the session's own: no agent
    const first = await bridge("claude", { ...fixture("claude-subagent-stop"), agent_id: "agent-abc123" });
    assert.equal(first.json?.decision, "block");
    assert.match(String(first.json?.reason), /Check your work once more/);
    const second = await bridge("claude", {
      ...fixture("claude-subagent-stop"),
      agent_id: "agent-abc123",
      stop_hook_active: true,
    });
    assert.equal(second.json, undefined);
    assert.match(second.stderr.join("\n"), /budget exhausted \(1 of 1/);
    const seen = records().map((r) => [r.hook, r.agent, r.id ?? ""]);
    assert.deepEqual(seen, [
      ["_SubagentStart", "Explore", "abc123/agent-abc123"],
      ["_PreToolUse", "Explore", "abc123/agent-abc123"],
      ["_PreToolUse", "main", ""],
      ["_SubagentStop", "Explore", "abc123/agent-abc123"],
    ]);
    // The host sends no task: `subagent.task` is "" (docs/BRIDGE.md).
    assert.deepEqual(records()[0]!.meta["subagent"], { name: "Explore", task: "" });
  });

  test("Codex's SubagentStart answer matches its published output schema", async () => {
    const out = await bridge("codex", fixture("codex-subagent-start"));
    assert.deepEqual(schemaProblems(codexSchema("subagent-start"), out.json), []);
    assert.match(String((out.json?.hookSpecificOutput as Record<string, unknown>).additionalContext), /reviewer/);
  });
});

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("hook-bridge: cli.ts hook-bridge as a child process", () => {
  let dir: string;
  let todo: StartedServer;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "sprout-bridge-e2e-"));
    todo = await startServer(join(repoRoot, "servers/todo-enforcer/main.ts"), ["--port", "0"], runtime());
  });
  after(async () => {
    await todo.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const env = (extra: Record<string, string> = {}) => ({ XDG_STATE_HOME: join(dir, "state"), ...extra });
  const parse = (stdout: string) => (stdout.trim() === "" ? undefined : JSON.parse(stdout) as Record<string, unknown>);

  test("a todo-enforcer objection over HTTP blocks Claude Code's stop with its JSON, per host session", async () => {
    const client = await httpClient(todo.url);
    await client.callTool({
      name: "todo",
      arguments: { todos: [{ id: 1, title: "Write the docs", done: false }] },
      _meta: { "sprout-agent/session": "e2e-claude-1" },
    });
    await client.close();
    const config = join(dir, "todo.json");
    writeFileSync(config, JSON.stringify({ mcpServers: { todo: { type: "http", url: todo.url } } }));
    const stop = { ...fixture("claude-stop"), session_id: "e2e-claude-1", stop_hook_active: false };
    const run = await runCli(
      ["hook-bridge", "--host", "claude", "--mcp-config", config],
      env({ MCP_HOOK_SERVERS: "todo" }),
      {
        stdin: JSON.stringify(stop),
      },
    );
    assert.equal(run.code, 0, run.stderr);
    const json = parse(run.stdout)!;
    assert.equal(json.decision, "block");
    const reason = JSON.parse(String(json.reason)) as { hook: string; server: string; text: string };
    assert.deepEqual([reason.hook, reason.server], ["_Stop", "todo"]);
    assert.match(reason.text, /^You have open todo items\. Keep working\.\n\n\[ \] 1\. Write the docs/);
    // Another host session has no list: its stop goes through.
    const other = await runCli(
      ["hook-bridge", "--host", "claude", "--mcp-config", config],
      env({ MCP_HOOK_SERVERS: "todo" }),
      {
        stdin: JSON.stringify({ ...stop, session_id: "e2e-claude-2" }),
      },
    );
    assert.equal(other.code, 0, other.stderr);
    assert.equal(parse(other.stdout), undefined);
  });

  test("a _PreToolUse deny over stdio denies the tool; the hook sees the host's session and the call", async () => {
    const log = join(dir, "pre.log");
    const config = fixtureConfig(dir, {
      guard: { FIXTURE_PRE_TOOL: '{"decision":"deny","reason":"no rm -rf"}', FIXTURE_LOG: log, FIXTURE_NO_TOOLS: "1" },
    });
    const run = await runCli(["hook-bridge", "--mcp-config", config], env({ MCP_HOOK_SERVERS: "guard" }), {
      stdin: JSON.stringify(fixture("claude-pre-tool-use")),
    });
    assert.equal(run.code, 0, run.stderr);
    const specific = parse(run.stdout)!.hookSpecificOutput as Record<string, unknown>;
    assert.equal(specific.hookEventName, "PreToolUse");
    assert.equal(specific.permissionDecision, "deny");
    assert.deepEqual(JSON.parse(String(specific.permissionDecisionReason)), {
      hook: "_PreToolUse",
      server: "guard",
      text: "no rm -rf",
    });
    const calls = fixtureCalls(log) as unknown as Array<
      { tool: string; meta: Record<string, Record<string, unknown>> }
    >;
    assert.equal(calls.length, 1);
    assert.equal(calls[0]!.meta["sprout-agent/session"] as unknown, "abc123");
    const call = calls[0]!.meta["sprout-agent/hook"]!.toolCall as Record<string, unknown>;
    assert.deepEqual([call.name, call.id], ["claude__Bash", "toolu_01ABC123..."]);
  });

  test("the _Stop budget ends blocking after N stops of one host session, kept in a 0600 file", async () => {
    const config = fixtureConfig(dir, { nag: { FIXTURE_STOP: "Not yet.", FIXTURE_NO_TOOLS: "1" } });
    const stopEnv = env({ MCP_HOOK_SERVERS: "nag", SPROUT_AGENT_STOP_MAX_REJECTIONS: "2" });
    const stop = (session: string) =>
      runCli(["hook-bridge", "--host", "codex", "--mcp-config", config], stopEnv, {
        stdin: JSON.stringify({ ...fixture("codex-stop"), session_id: session }),
      });
    const first = await stop("budget-1");
    const second = await stop("budget-1");
    const third = await stop("budget-1");
    for (const r of [first, second, third]) assert.equal(r.code, 0, r.stderr);
    assert.equal(parse(first.stdout)?.decision, "block");
    assert.deepEqual(schemaProblems(codexSchema("stop"), parse(second.stdout)), []);
    assert.equal(parse(second.stdout)?.decision, "block");
    assert.equal(parse(third.stdout), undefined);
    assert.match(third.stderr, /Stop-hook budget exhausted \(2 of 2 objections used in this Codex session\)/);
    // Another session has its own budget.
    assert.equal(parse((await stop("budget-2")).stdout)?.decision, "block");
    const files = readdirSync(join(dir, "state", "sprout-agent", "bridge"));
    assert.equal(files.length >= 2, true);
    for (const f of files) assert.equal(statSync(join(dir, "state", "sprout-agent", "bridge", f)).mode & 0o777, 0o600);
  });

  test("an unreachable server, a bad payload, a bad flag: exit 0, nothing blocked, a message", async () => {
    const port = await closedPort();
    const url = `http://127.0.0.1:${port}/mcp`;
    const config = join(dir, "down.json");
    writeFileSync(
      config,
      JSON.stringify({ mcpServers: { down: { type: "http", url }, guard: { type: "http", url, required: true } } }),
    );
    const hookEnv = env({ MCP_HOOK_SERVERS: "down" });
    const stop = await runCli(["hook-bridge", "--host", "claude", "--mcp-config", config], hookEnv, {
      stdin: JSON.stringify(fixture("claude-stop")),
    });
    assert.equal(stop.code, 0, stop.stderr);
    const json = parse(stop.stdout);
    assert.equal(json?.decision, undefined);
    assert.match(String(json?.systemMessage), /down/);
    const bad = await runCli(["hook-bridge", "--host", "claude"], hookEnv, { stdin: "not json" });
    assert.equal(bad.code, 0);
    assert.match(String(parse(bad.stdout)?.systemMessage), /Cannot read the hook event on stdin/);
    const flag = await runCli(["hook-bridge", "--hots", "claude"], hookEnv, { stdin: "{}" });
    assert.equal(flag.code, 0);
    assert.match(flag.stderr, /Unknown flag "--hots"/);
    // A required guard that cannot be reached fails closed at a tool point: the call is denied.
    const guarded = await runCli(
      ["hook-bridge", "--host", "claude", "--mcp-config", config],
      env({ MCP_HOOK_SERVERS: "guard" }),
      { stdin: JSON.stringify(fixture("claude-pre-tool-use")) },
    );
    assert.equal(guarded.code, 0, guarded.stderr);
    const specific = parse(guarded.stdout)!.hookSpecificOutput as Record<string, unknown>;
    assert.equal(specific.permissionDecision, "deny");
    assert.match(String(specific.permissionDecisionReason), /the required guard did not answer/);
  });

  test("--print-config prints the settings as JSON", async () => {
    const [command, ...pre] = tsCommand(join(repoRoot, "cli.ts"));
    const child = spawn(command!, [...pre, "hook-bridge", "--print-config", "gemini"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const code = await new Promise((resolve) => child.on("close", resolve));
    const run = { code, stdout, stderr };
    assert.equal(run.code, 0, run.stderr);
    const settings = JSON.parse(run.stdout) as { hooks: Record<string, Array<{ hooks: Array<{ command: string }> }>> };
    assert.equal(settings.hooks.BeforeTool![0]!.hooks[0]!.command, "sprout-agent hook-bridge --host gemini");
    assert.match(run.stderr, /\.gemini\/settings\.json/);
  });
});
