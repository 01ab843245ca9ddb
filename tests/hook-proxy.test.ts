/**
 * `cli.ts hook-proxy` (issue 24, the MCP proxy for Claude Code's `mcp_tool` hooks): in-process
 * against the todo-enforcer and tool-guard servers, spoken to by the official MCP SDK client
 * (`_` tools absent from `tools/list`, ordinary calls forwarded unchanged, hook calls answered
 * in Claude Code's hook JSON, the `_Stop` budget kept in memory); the command as a child process
 * spoken to by the SDK's stdio client; and `--print-config … --merge FILE` for both commands.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";
import { hookPayload, HookProxy } from "../lib/bridge/proxy.ts";
import { hookSettings, mergeSettings, proxyMcpConfig, proxySettings } from "../lib/bridge/snippets.ts";
import { loadConfig } from "../lib/config/config.ts";
import type { JsonRpcMessage } from "../lib/mcp/jsonrpc.ts";
import { inProcessMcp, linkedTransports } from "../lib/mcp/in-process.ts";
import type { McpServerConfig } from "../lib/mcp/types.ts";
import { createMcpServer as createTodoServer } from "../servers/todo-enforcer/app.ts";
import { MemoryStore } from "../servers/todo-enforcer/store.ts";
import { createMcpServer as createGuardServer } from "../servers/tool-guard/app.ts";
import { DEFAULT_RULES } from "../servers/tool-guard/rules.ts";
import { createSubagentHookServer, type HookRecord } from "./fixtures/subagent-hooks.ts";
import { cleanEnv } from "./helpers/cli.ts";
import { resultText } from "./helpers/hook-servers.ts";
import { repoRoot, tsCommand } from "./helpers/runtime.ts";

/** A proxy in this process in front of `serve`, and the official SDK client connected to it. */
async function proxied(
  name: string,
  serve: Parameters<typeof inProcessMcp>[0][string],
  env: Record<string, string> = {},
  server: Partial<McpServerConfig> = {},
): Promise<{ client: Client; proxy: HookProxy; warnings: string[]; sent: JsonRpcMessage[] }> {
  const mcp = inProcessMcp({ [name]: serve });
  const [clientEnd, serverEnd] = linkedTransports();
  const warnings: string[] = [];
  const sent: JsonRpcMessage[] = [];
  const proxy = new HookProxy({
    server: { ...mcp.servers[0]!, ...server },
    config: loadConfig(env, () => ""),
    env: {},
    cwd: "/work/project",
    send: (m) => {
      sent.push(m);
      void serverEnd.send(m);
    },
    warn: (line) => warnings.push(line),
    connect: mcp.connect,
  });
  serverEnd.onmessage = (m) => void proxy.receive(m);
  await serverEnd.start();
  proxy.start();
  const client = new Client({ name: "claude-code-like", version: "1.0.0" });
  await client.connect(clientEnd as never);
  return { client, proxy, warnings, sent };
}

const hookJson = (result: unknown) => {
  const text = resultText(result);
  return text === "" ? undefined : JSON.parse(text) as Record<string, unknown>;
};

describe("hook-proxy in-process, through the official MCP SDK client", () => {
  test("the todo-enforcer: _ tools absent, todo forwarded, _Stop blocks in Claude Code's JSON until the budget ends", async () => {
    const store = new MemoryStore();
    const { client, proxy, warnings } = await proxied(
      "todo",
      (t) => serveStdio(() => createTodoServer(store, () => "one"), { transport: t as never }),
      { SPROUT_AGENT_STOP_MAX_REJECTIONS: "2" },
    );
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ["todo"]);
      assert.ok(tools[0]!.inputSchema !== undefined);
      // Nothing open yet: the stop goes through (no JSON).
      const stop = { session_id: "cc-1", hook_event_name: "Stop", stop_hook_active: "false", cwd: "/p" };
      assert.equal(hookJson(await client.callTool({ name: "_Stop", arguments: stop })), undefined);
      const set = await client.callTool({
        name: "todo",
        arguments: { todos: [{ id: 1, title: "Ship the proxy", done: false }] },
      });
      assert.match(resultText(set), /Ship the proxy/);
      // The same server process answers the hook: its in-memory list is the one just set.
      const first = hookJson(await client.callTool({ name: "_Stop", arguments: stop }))!;
      assert.equal(first.decision, "block");
      const reason = JSON.parse(String(first.reason)) as Record<string, string>;
      assert.deepEqual([reason.hook, reason.server], ["_Stop", "todo"]);
      assert.match(reason.text!, /^You have open todo items\. Keep working\./);
      // As Claude Code calls it with no input at all: still a Stop.
      assert.equal(hookJson(await client.callTool({ name: "_Stop", arguments: {} }))?.decision, "block");
      // cc-1 has used 1 of 2: one more, then the stop is let through without calling _Stop.
      const again = { ...stop, stop_hook_active: "true" };
      assert.equal(hookJson(await client.callTool({ name: "_Stop", arguments: again }))?.decision, "block");
      assert.equal(hookJson(await client.callTool({ name: "_Stop", arguments: again })), undefined);
      assert.match(warnings.join("\n"), /Stop-hook budget exhausted \(2 of 2/);
      // A hook the server does not list, an unknown tool: nothing said; an error.
      assert.equal(hookJson(await client.callTool({ name: "_PreCompact", arguments: {} })), undefined);
      await assert.rejects(client.callTool({ name: "_Secret", arguments: {} }), /Unknown tool: _Secret/);
      await assert.rejects(client.callTool({ name: "nope", arguments: {} }), /Unknown tool: nope/);
    } finally {
      await client.close();
      await proxy.close();
    }
  });

  test("a hook that times out at two events in a row gets its server killed: one runner for the connection (SPEC 4.4)", async () => {
    const { client, proxy, warnings } = await proxied(
      "slow",
      (t) => {
        const server = new McpServer({ name: "slow", version: "1.0.0" }, { capabilities: { tools: {} } });
        // Never answers within the hook timeout (its request is dropped when the call gives up).
        server.registerTool(
          "_Stop",
          { description: "slow stop", inputSchema: z.object({}) },
          () =>
            new Promise((resolve) => setTimeout(() => resolve({ content: [{ type: "text", text: "late" }] }), 3000)),
        );
        return serveStdio(() => server, { transport: t as never });
      },
      { SPROUT_AGENT_HOOK_TIMEOUT_MS: "200" },
    );
    try {
      const stop = { session_id: "cc-slow", hook_event_name: "Stop", stop_hook_active: "false", cwd: "/p" };
      // Each event is a separate mcp_tool call: the count carries over from the first to the second.
      const first = hookJson(await client.callTool({ name: "_Stop", arguments: stop }));
      assert.equal(first?.decision, undefined);
      assert.match(warnings.join("\n"), /timed out after 0\.2 s \(1\/2\)/);
      await client.callTool({ name: "_Stop", arguments: stop });
      assert.match(warnings.join("\n"), /timed out after 0\.2 s \(2\/2\); server killed/);
    } finally {
      await client.close();
      await proxy.close();
    }
  });

  test("SubagentStart through the proxy: the child's context in Claude Code's JSON, and its calls name it in _meta", async () => {
    const seen: HookRecord[] = [];
    const { client, proxy } = await proxied(
      "sub",
      (t) => serveStdio(() => createSubagentHookServer((r) => seen.push(r)), { transport: t as never }),
    );
    try {
      // As proxySettings substitutes them: a field the event lacks arrives as "".
      const base = { session_id: "cc-3", cwd: "/p" };
      const start = hookJson(
        await client.callTool({
          name: "_SubagentStart",
          arguments: { ...base, hook_event_name: "SubagentStart", agent_id: "a1", agent_type: "Explore" },
        }),
      )!;
      const specific = start.hookSpecificOutput as Record<string, string>;
      assert.equal(specific.hookEventName, "SubagentStart");
      assert.match(specific.additionalContext!, /"text":"Context for Explore: "/);
      const tool = { hook_event_name: "PreToolUse", tool_name: "Read", tool_input: "{}", tool_use_id: "t1" };
      await client.callTool({
        name: "_PreToolUse",
        arguments: { ...base, ...tool, agent_id: "a1", agent_type: "Explore" },
      });
      await client.callTool({ name: "_PreToolUse", arguments: { ...base, ...tool, agent_id: "", agent_type: "" } });
      assert.deepEqual(seen.map((r) => [r.hook, r.agent, r.id ?? ""]), [
        ["_SubagentStart", "Explore", "cc-3/a1"],
        ["_PreToolUse", "Explore", "cc-3/a1"],
        ["_PreToolUse", "main", ""],
      ]);
    } finally {
      await client.close();
      await proxy.close();
    }
  });

  test("tool-guard: a _PreToolUse deny and ask in Claude Code's hookSpecificOutput, from the substituted payload", async () => {
    const { client, proxy } = await proxied(
      "guard",
      (t) =>
        // Claude Code's own shell tool is Bash: qualified claude__Bash by the bridge (docs/BRIDGE.md).
        serveStdio(
          () => createGuardServer({ ...DEFAULT_RULES, shellTools: [...DEFAULT_RULES.shellTools, "claude__Bash"] }),
          {
            transport: t as never,
          },
        ),
    );
    try {
      assert.deepEqual((await client.listTools()).tools, []);
      const call = (toolName: string, toolInput: Record<string, unknown>) =>
        client.callTool({
          name: "_PreToolUse",
          arguments: {
            hook_event_name: "PreToolUse",
            session_id: "cc-2",
            cwd: "/work/project",
            tool_name: toolName,
            tool_input: JSON.stringify(toolInput), // how Claude Code substitutes ${tool_input}
            tool_use_id: "toolu_9",
          },
        });
      const deny = hookJson(await call("mcp__fs__write_file", { path: "../outside.txt", content: "x" }))!;
      const specific = deny.hookSpecificOutput as Record<string, unknown>;
      assert.equal(specific.hookEventName, "PreToolUse");
      assert.equal(specific.permissionDecision, "deny");
      assert.match(String(specific.permissionDecisionReason), /write-outside-cwd/);
      const ask = hookJson(await call("Bash", { command: "rm -rf build" }))!;
      assert.equal((ask.hookSpecificOutput as Record<string, unknown>).permissionDecision, "ask");
      assert.equal(hookJson(await call("Bash", { command: "ls" })), undefined);
    } finally {
      await client.close();
      await proxy.close();
    }
  });

  test("a server that cannot start: no tools, hooks fail open (a required guard denies)", async () => {
    const failing = () => Promise.reject(new Error("boom"));
    const open = await proxied("down", failing);
    try {
      assert.deepEqual((await open.client.listTools()).tools, []);
      const stop = hookJson(await open.client.callTool({ name: "_Stop", arguments: {} }))!;
      assert.equal(stop.decision, undefined);
      assert.match(String(stop.systemMessage), /failing open/);
    } finally {
      await open.client.close();
      await open.proxy.close();
    }
    const closed = await proxied("guard", failing, {}, { required: true });
    try {
      const pre = hookJson(
        await closed.client.callTool({ name: "_PreToolUse", arguments: { tool_name: "Bash", tool_input: "{}" } }),
      )!;
      assert.equal((pre.hookSpecificOutput as Record<string, unknown>).permissionDecision, "deny");
    } finally {
      await closed.client.close();
      await closed.proxy.close();
    }
  });

  test("hookPayload: Claude Code's substituted strings read as its payload", () => {
    assert.deepEqual(hookPayload("_Stop", { session_id: "s", stop_hook_active: "true", last_assistant_message: "" }), {
      session_id: "s",
      stop_hook_active: true,
      hook_event_name: "Stop",
    });
    assert.deepEqual(hookPayload("_PreToolUse", { tool_input: '{"a":1}', hook_event_name: "PreToolUse" }).tool_input, {
      a: 1,
    });
    assert.equal(hookPayload("_Stop", { hook_event_name: "SubagentStop" }).hook_event_name, "SubagentStop");
  });
});

describe("hook-proxy as a child process, through the SDK's stdio client", () => {
  test("serves the todo-enforcer over stdio: todo listed, _Stop hidden, a hook call translated", async () => {
    const [command, ...pre] = tsCommand(join(repoRoot, "cli.ts"));
    const [serverCommand, ...serverPre] = tsCommand(join(repoRoot, "servers/todo-enforcer/stdio.ts"));
    const transport = new StdioClientTransport({
      command: command!,
      args: [...pre, "hook-proxy", "--name", "todo", "--", serverCommand!, ...serverPre],
      env: cleanEnv(),
      stderr: "pipe",
    });
    const client = new Client({ name: "claude-code-like", version: "1.0.0" });
    await client.connect(transport, { timeout: 60_000 });
    try {
      assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ["todo"]);
      await client.callTool({ name: "todo", arguments: { todos: [{ id: 1, title: "Open", done: false }] } });
      const json = hookJson(await client.callTool({ name: "_Stop", arguments: {} }))!;
      assert.equal(json.decision, "block");
    } finally {
      await client.close();
    }
  });

  test("a bad flag exits 1, never 2", async () => {
    const [command, ...pre] = tsCommand(join(repoRoot, "cli.ts"));
    const child = spawn(command!, [...pre, "hook-proxy", "--srever", "x"], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    const code = await new Promise((resolve) => child.on("close", resolve));
    assert.equal(code, 1);
    assert.match(stderr, /Unknown flag "--srever"/);
  });
});

describe("--print-config and --merge", () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), "sprout-merge-"))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("the proxy's settings: mcp_tool hooks with the payload's fields; SessionStart left out", () => {
    const settings = proxySettings("todo");
    assert.equal(settings.hooks.SessionStart, undefined);
    const stop = (settings.hooks.Stop![0] as { hooks: Array<Record<string, unknown>> }).hooks[0]!;
    assert.deepEqual([stop.type, stop.server, stop.tool], ["mcp_tool", "todo", "_Stop"]);
    assert.equal((stop.input as Record<string, string>).stop_hook_active, "${stop_hook_active}");
    const pre = (settings.hooks.PreToolUse![0] as { hooks: Array<Record<string, unknown>> }).hooks[0]!;
    assert.equal((pre.input as Record<string, string>).tool_input, "${tool_input}");
    assert.deepEqual(proxyMcpConfig("todo", ["--url", "http://h/mcp"], "bun /opt/cli.ts").mcpServers.todo, {
      command: "bun",
      args: ["/opt/cli.ts", "hook-proxy", "--url", "http://h/mcp"],
    });
  });

  test("mergeSettings keeps the user's keys and hooks, and merging twice adds nothing", () => {
    const user = {
      model: "opus",
      hooks: { Stop: [{ hooks: [{ type: "command", command: "mine" }] }], Notification: [{ hooks: [] }] },
    };
    const once = mergeSettings(user, hookSettings("claude"));
    assert.equal(once.merged.model, "opus");
    const hooks = once.merged.hooks as Record<string, unknown[]>;
    assert.equal(hooks.Stop!.length, 2);
    assert.deepEqual(hooks.Notification, [{ hooks: [] }]);
    assert.ok(once.added > 0);
    const twice = mergeSettings(once.merged, hookSettings("claude"));
    assert.equal(twice.added, 0);
    assert.deepEqual(twice.merged, once.merged);
    assert.throws(() => mergeSettings([], hookSettings("claude")), /not a JSON object/);
    assert.throws(() => mergeSettings({ hooks: [] }, hookSettings("claude")), /"hooks" is not an object/);
    const mcp = mergeSettings({ mcpServers: { fs: { command: "x" } } }, proxyMcpConfig("todo", []));
    assert.deepEqual(Object.keys(mcp.merged.mcpServers as object), ["fs", "todo"]);
  });

  const cli = (args: string[]) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const [command, ...pre] = tsCommand(join(repoRoot, "cli.ts"));
      const child = spawn(command!, [...pre, ...args], { stdio: ["ignore", "pipe", "pipe"], env: cleanEnv() });
      let stderr = "";
      child.stderr.on("data", (d) => (stderr += d));
      child.on("close", (code) => resolve({ code, stderr }));
    });

  test("--merge FILE: written through a rename, idempotent; a file that is not JSON is refused and kept", async () => {
    const file = join(dir, "settings.json");
    writeFileSync(file, JSON.stringify({ permissions: { allow: ["Bash(ls)"] } }));
    chmodSync(file, 0o600);
    const first = await cli(["hook-bridge", "--print-config", "claude", "--merge", file]);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stderr, /merged \d+ entries/);
    const merged = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
    assert.deepEqual(merged.permissions, { allow: ["Bash(ls)"] });
    assert.ok("Stop" in (merged.hooks as object));
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const second = await cli(["hook-bridge", "--print-config", "claude", "--merge", file]);
    assert.equal(second.code, 0);
    assert.match(second.stderr, /nothing changed/);
    const proxy = await cli(["hook-proxy", "--print-config", "settings", "--name", "todo", "--merge", file]);
    assert.equal(proxy.code, 0, proxy.stderr);
    const both = JSON.parse(readFileSync(file, "utf8")) as { hooks: Record<string, unknown[]> };
    assert.equal(both.hooks.Stop!.length, 2); // the bridge's command hook and the proxy's mcp_tool hook
    const bad = join(dir, "bad.json");
    writeFileSync(bad, "{ not json");
    const refused = await cli(["hook-bridge", "--print-config", "claude", "--merge", bad]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /is not JSON/);
    assert.equal(readFileSync(bad, "utf8"), "{ not json");
    const fresh = join(dir, "new", ".mcp.json");
    const created = await cli([
      "hook-proxy",
      "--print-config",
      "mcp",
      "--url",
      "http://127.0.0.1:1/mcp",
      "--name",
      "todo",
      "--merge",
      fresh,
    ]);
    assert.equal(created.code, 0, created.stderr);
    assert.deepEqual(
      (JSON.parse(readFileSync(fresh, "utf8")) as { mcpServers: Record<string, unknown> }).mcpServers.todo,
      {
        command: "sprout-agent",
        args: ["hook-proxy", "--url", "http://127.0.0.1:1/mcp", "--name", "todo"],
      },
    );
  });
});
