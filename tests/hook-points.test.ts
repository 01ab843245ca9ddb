/**
 * The hook points of issue 12 end to end (SPEC sections 7.5 and 11): `_SessionStart`,
 * `_UserPromptSubmit` and `_SessionEnd` with real hook servers (the fixture and the
 * todo-enforcer over stdio, spawned under the runtime running the test) and the real wire
 * clients against the recording fake LLM; the CLI's `--json` stream and exit paths; ACP's
 * `session/close` and shutdown; the todo-enforcer's restore through `createAgent`.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAgent } from "../lib/agent/agent.ts";
import type { AgentEvent } from "../lib/conversation/events.ts";
import type { HistoryItem, Model } from "../lib/conversation/types.ts";
import { startFakeLlm } from "../lib/testing/fake-llm.ts";
import { createApp } from "../servers/todo-enforcer/app.ts";
import { fixtureCalls, fixtureConfig, runCli } from "./helpers/cli.ts";
import { appFetch } from "./helpers/hook-servers.ts";
import { repoRoot, tsCommand } from "./helpers/runtime.ts";
import { fixtureCommand, injectedHooks, messagesOf, runPrompt, withSession } from "./helpers/session.ts";
import { spawnAgent } from "./helpers/acp.ts";

const dir = mkdtempSync(join(tmpdir(), "sprout-points-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const hookEnv = {
  FIXTURE_START_HOOK: "restored <list>",
  FIXTURE_PROMPT_HOOK: "context for prompt {prompt}",
  FIXTURE_END_HOOK: "bye from fx",
};

describe("_SessionStart and _UserPromptSubmit through the wire clients (SPEC 7.5)", () => {
  for (const wire of ["anthropic", "openai"] as const) {
    test(`injected after the user's prompt, JSON-encoded; every request valid, strict template included (${wire})`, async () => {
      await withSession(
        {
          wire,
          env: { MCP_HOOK_SERVERS: "fx" },
          servers: [{ name: "fx", env: hookEnv }],
          responses: [{ text: "first" }, { toolCalls: [{ name: "fx__echo", arguments: { text: "x" } }] }, {
            text: "second",
          }],
          ...(wire === "openai" ? { fake: { strictTemplate: true } } : {}),
        },
        async (t) => {
          const one = await runPrompt(t.session, "one");
          const two = await runPrompt(t.session, "two");
          assert.equal(one.result.stopReason, "end_turn");
          assert.equal(two.result.stopReason, "end_turn");
          assert.deepEqual(
            one.events.flatMap((e) => e.type === "hook" ? [[e.hook, e.outcome]] : []),
            [["_SessionStart", "objection"], ["_UserPromptSubmit", "objection"]],
          );
          const first = t.llm.requests[0]!.body;
          assert.deepEqual(injectedHooks(first), [
            { hook: "_SessionStart", server: "fx", text: "restored <list>" },
            { hook: "_UserPromptSubmit", server: "fx", text: "context for prompt 1" },
          ]);
          // The user's prompt comes first: no request starts with an assistant message.
          assert.equal(messagesOf(first).find((m) => m["role"] !== "system")!["role"], "user");
          const last = t.llm.requests.at(-1)!.body;
          assert.deepEqual(injectedHooks(last).map((h) => h.text), [
            "restored <list>",
            "context for prompt 1",
            "context for prompt 2",
          ]);
          const calls = t.calls().filter((c) => c.tool.startsWith("_"));
          assert.deepEqual(calls.map((c) => c.tool), ["_SessionStart", "_UserPromptSubmit", "_UserPromptSubmit"]);
          for (const c of calls) assert.deepEqual(c.args, {});
        },
      );
    });
  }
});

/** The fake LLM's Anthropic environment for the CLI. */
function anthropicEnv(baseUrl: string): Record<string, string> {
  return {
    SPROUT_AGENT_PROVIDER: "anthropic",
    ANTHROPIC_API_KEY: "k",
    ANTHROPIC_MODEL: "m",
    ANTHROPIC_BASE_URL: baseUrl,
  };
}

describe("the CLI: the new points in --json, _SessionEnd before the last line (SPEC 11)", () => {
  test("a run with the fixture and the todo-enforcer over stdio: start, prompt, stop and end hooks in order", async () => {
    const [command, ...args] = tsCommand(join(repoRoot, "servers/todo-enforcer/stdio.ts"));
    const log = join(dir, "cli-fx.log");
    const config = fixtureConfig(dir, { fx: { ...hookEnv, FIXTURE_LOG: log } }, { todo: { command, args } });
    const llm = await startFakeLlm({
      responses: [
        { toolCalls: [{ name: "todo__todo", arguments: { todos: [{ id: 1, title: "Write the docs" }] } }] },
        { text: "Leaving it open." },
      ],
    });
    try {
      const run = await runCli(["run", "--json", "--mcp-config", config, "Plan the work"], {
        ...anthropicEnv(llm.anthropicBaseUrl),
        MCP_HOOK_SERVERS: "*",
        SPROUT_AGENT_STOP_MAX_REJECTIONS: "0",
      }, { cwd: dir, timeoutMs: 90_000 });
      assert.equal(run.code, 0, run.stderr);
      const hooks = run.events.filter((e) => e["type"] === "hook").map((e) => [e["hook"], e["server"], e["outcome"]]);
      assert.deepEqual(hooks, [
        ["_SessionStart", "fx", "objection"],
        ["_SessionStart", "todo", "none"],
        ["_UserPromptSubmit", "fx", "objection"],
        ["_SessionEnd", "fx", "objection"],
        ["_SessionEnd", "todo", "objection"],
      ]);
      const end = run.events.filter((e) => e["hook"] === "_SessionEnd").map((e) => e["text"]);
      assert.deepEqual(end, ["bye from fx", "1 todo item left open: 1. Write the docs"]);
      assert.equal(run.events.at(-1)!["type"], "result", "the result is still the last line");
      assert.deepEqual(injectedHooks(llm.requests[0]!.body).map((h) => h.hook), ["_SessionStart", "_UserPromptSubmit"]);
      assert.deepEqual(llm.requests.filter((r) => r.rejected).map((r) => r.rejected), []);
      assert.equal(fixtureCalls(log).filter((c) => c.tool === "_SessionEnd").length, 1);
    } finally {
      await llm.close();
    }
  });

  test("without --json, _SessionStart context, _UserPromptSubmit context and _SessionEnd's text are lines on stderr", async () => {
    const config = fixtureConfig(dir, { fx: hookEnv });
    const script = join(dir, "script-human.json");
    writeFileSync(script, JSON.stringify([{ text: "Hello." }]));
    const run = await runCli(["run", "--mcp-config", config, "Say hello"], {
      SPROUT_AGENT_PROVIDER: "scripted",
      SPROUT_AGENT_SCRIPT: script,
      MCP_HOOK_SERVERS: "fx",
    }, { cwd: dir, timeoutMs: 60_000 });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /⟲ _SessionStart context from fx: restored <list>\n/);
    assert.match(run.stderr, /⟲ _UserPromptSubmit context from fx: context for prompt 1\n/);
    assert.match(run.stderr, /_SessionEnd from fx: bye from fx\n/);
    assert.equal(run.stdout, "Hello.\n", "stdout holds the answer only");
  });

  test("SIGINT: the prompt is cancelled, _SessionEnd still runs before the last line, exit 130", async () => {
    const log = join(dir, "cli-sigint.log");
    const config = fixtureConfig(dir, { fx: { FIXTURE_END_HOOK: "interrupted", FIXTURE_LOG: log } });
    const script = join(dir, "script-sigint.json");
    writeFileSync(script, JSON.stringify([{ toolCalls: [{ name: "fx__slow", arguments: { ms: 30_000 } }] }]));
    const run = await runCli(["run", "--json", "--mcp-config", config, "Wait"], {
      SPROUT_AGENT_PROVIDER: "scripted",
      SPROUT_AGENT_SCRIPT: script,
      MCP_HOOK_SERVERS: "fx",
    }, {
      cwd: dir,
      timeoutMs: 60_000,
      onLine: (line, signal) => {
        if (line.includes('"tool-start"')) signal("SIGINT");
      },
    });
    assert.equal(run.code, 130, run.stderr);
    const end = run.events.find((e) => e["hook"] === "_SessionEnd");
    assert.equal(end?.["text"], "interrupted");
    assert.equal(run.events.at(-1)!["type"], "result");
    assert.equal(run.events.at(-1)!["stopReason"], "cancelled");
  });
});

/** The fixture hook server "fx" as an ACP `session/new` stdio server entry, logging its calls to `log`. */
function acpFixtureServer(log: string) {
  const { command, args } = fixtureCommand();
  const env = Object.entries({ ...hookEnv, FIXTURE_LOG: log }).map(([name, value]) => ({ name, value }));
  return { name: "fx", command, args, env };
}

describe("ACP: session/close and shutdown fire _SessionEnd (SPEC 7.5)", () => {
  test("session/close answers {} after _SessionEnd ran; stdin's end closes the other sessions the same way", async () => {
    const script = join(dir, "script-acp.json");
    writeFileSync(script, JSON.stringify([{ text: "ok" }]));
    const log = join(dir, "acp-fx.log");
    const server = acpFixtureServer(log);
    const agent = spawnAgent({
      SPROUT_AGENT_PROVIDER: "scripted",
      SPROUT_AGENT_SCRIPT: script,
      MCP_HOOK_SERVERS: "fx",
    });
    try {
      const init = await agent.request("initialize", { protocolVersion: 1 });
      assert.deepEqual(init.result.agentCapabilities.sessionCapabilities, { close: {}, list: {}, resume: {} });
      const a = await agent.request("session/new", { cwd: dir, mcpServers: [server] });
      const b = await agent.request("session/new", { cwd: dir, mcpServers: [server] });
      const idA = a.result.sessionId as string;
      const idB = b.result.sessionId as string;
      // _SessionStart's context is announced once the client knows the session.
      await agent.waitFor((m) =>
        m.method === "session/update" && m.params.sessionId === idA &&
        /_SessionStart hook "fx" added context: restored <list>/.test(m.params.update.content?.text ?? "")
      );
      const prompted = await agent.request("session/prompt", {
        sessionId: idA,
        prompt: [{ type: "text", text: "hi" }],
      });
      assert.equal(prompted.result.stopReason, "end_turn");
      const closed = await agent.request("session/close", { sessionId: idA });
      assert.deepEqual(closed.result, {});
      assert.equal(fixtureCalls(log).filter((c) => c.tool === "_SessionEnd").length, 1);
      assert.match(agent.stderr(), new RegExp(`\\[${idA}\\] _SessionEnd hook "fx" said: bye from fx`));
      const again = await agent.request("session/prompt", { sessionId: idA, prompt: [{ type: "text", text: "x" }] });
      assert.match(again.error.message, /unknown session/);
      assert.equal(await agent.close(), 0);
      assert.equal(fixtureCalls(log).filter((c) => c.tool === "_SessionEnd").length, 2);
      assert.match(agent.stderr(), new RegExp(`\\[${idB}\\] _SessionEnd hook "fx" said: bye from fx`));
    } finally {
      if (agent.child.exitCode === null) agent.child.kill("SIGKILL");
    }
  });
});

describe("ACP: session/close while a prompt runs", () => {
  test("the prompt answers cancelled, then _SessionEnd runs once and close answers {}", async () => {
    const llm = await startFakeLlm({ responses: [{ text: "a long answer that is still streaming", pauseMs: 60_000 }] });
    const log = join(dir, "acp-close-running.log");
    const server = acpFixtureServer(log);
    const agent = spawnAgent({
      SPROUT_AGENT_PROVIDER: "anthropic",
      ANTHROPIC_API_KEY: "k",
      ANTHROPIC_MODEL: "fake",
      ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
      MCP_HOOK_SERVERS: "fx",
    });
    try {
      await agent.request("initialize", { protocolVersion: 1 });
      const created = await agent.request("session/new", { cwd: dir, mcpServers: [server] });
      const sessionId = created.result.sessionId as string;
      const prompted = agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hi" }] });
      // The answer has started streaming: the prompt is mid-round.
      await agent.waitFor((m) =>
        m.method === "session/update" && m.params.sessionId === sessionId &&
        m.params.update.sessionUpdate === "agent_message_chunk"
      );
      const closed = agent.request("session/close", { sessionId });
      assert.equal((await prompted).result.stopReason, "cancelled");
      assert.deepEqual((await closed).result, {});
      assert.equal(fixtureCalls(log).filter((c) => c.tool === "_SessionEnd").length, 1);
      assert.equal(await agent.close(), 0);
      assert.equal(fixtureCalls(log).filter((c) => c.tool === "_SessionEnd").length, 1, "not again at shutdown");
    } finally {
      if (agent.child.exitCode === null) agent.child.kill("SIGKILL");
      await llm.close();
    }
  });
});

describe("todo-enforcer's _SessionStart restores a session's list (servers/todo-enforcer)", () => {
  test("a second agent with the same session id gets the open list back in its first request", async () => {
    const app = createApp();
    const fetch = appFetch(app) as typeof globalThis.fetch;
    const seen: HistoryItem[][] = [];
    const model = (
      turns: Array<
        Partial<{ text: string; toolCalls: Array<{ id: string; name: string; arguments: Record<string, unknown> }> }>
      >,
    ): Model => {
      let i = 0;
      return {
        name: "recording",
        complete(request) {
          seen.push(structuredClone([...request.history]));
          const turn = turns[i++] ?? { text: "extra" };
          return Promise.resolve({ text: turn.text ?? "", toolCalls: turn.toolCalls ?? [], stop: "end_turn" });
        },
      };
    };
    const common = {
      mcpServers: [{ name: "todo", transport: { type: "http" as const, url: "http://127.0.0.1/mcp", headers: {} } }],
      hookServers: "*" as const,
      sessionId: "resume-me",
      stopMaxRejections: 0,
      fetch,
      // The hook server's own store is what is tested here: a second process with the same id and
      // no transcript of its own (a resume from the transcript is C38's, tests/sessions-cli.test.ts).
      sessionStore: false as const,
    };
    const events: AgentEvent[] = [];
    const first = await createAgent({
      ...common,
      model: model([
        { toolCalls: [{ id: "c1", name: "todo__todo", arguments: { todos: [{ id: 1, title: "Ship it" }] } }] },
        { text: "Later." },
      ]),
      onEvent: (e) => events.push(e),
    });
    await runAgentPrompt(first, "plan");
    await first.close();
    assert.deepEqual(events.map((e) => e.type === "hook" && [e.hook, e.outcome]), [
      ["_SessionStart", "none"],
      ["_SessionEnd", "objection"],
    ]);
    seen.length = 0;
    const second = await createAgent({ ...common, model: model([{ text: "Resuming." }]) });
    try {
      await runAgentPrompt(second, "go on");
      const texts = seen[0]!.flatMap((item) => item.role === "tool" ? [JSON.stringify(item.content)] : []);
      assert.equal(texts.length, 1);
      assert.match(texts[0]!, /_SessionStart.*restored from an earlier run.*\[ \] 1\. Ship it/);
    } finally {
      await second.close();
    }
  });
});

async function runAgentPrompt(agent: Awaited<ReturnType<typeof createAgent>>, text: string): Promise<void> {
  const run = agent.prompt(text);
  for await (const _ of run) { /* drain */ }
  await run.result;
}
