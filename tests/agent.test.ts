/**
 * `createAgent(options)` and `agentOptionsFromEnv(env, {readFile})` (lib/agent/agent.ts): one call
 * from plain options builds a session with its model and MCP servers; the environment helper
 * reads the documented variables into those options with loadConfig's validation.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createApp } from "../servers/todo-enforcer/app.ts";
import { createAgent } from "../lib/agent/agent.ts";
import { agentOptionsFromEnv } from "../lib/agent/from-env.ts";
import { AgentError, isAbortError } from "../lib/util/errors.ts";
import type { AgentEvent } from "../lib/conversation/events.ts";
import { appFetch } from "./helpers/hook-servers.ts";
import { processesMatching, runToExit } from "./helpers/processes.ts";
import { repoRoot } from "./helpers/runtime.ts";

async function drain(run: AsyncIterable<AgentEvent> & { result: Promise<unknown> }): Promise<AgentEvent[]> {
  const events: AgentEvent[] = [];
  for await (const event of run) events.push(event);
  return events;
}

describe("createAgent", () => {
  test("runs a prompt from plain options: the same events and result as a session", async () => {
    const agent = await createAgent({
      model: { provider: "scripted", turns: [{ text: "hello there" }] },
      sessionId: "s-1",
      // A fixed id would meet its own transcript on a second run: this test keeps none.
      sessionStore: false,
    });
    try {
      assert.equal(agent.sessionId, "s-1");
      assert.deepEqual(agent.failures, []);
      const run = agent.prompt("say hello");
      const events = await drain(run);
      const result = await run.result;
      assert.equal(events[0]?.type, "round-start");
      assert.equal(
        events.filter((e) => e.type === "text-delta").map((e) => (e as { text: string }).text).join(""),
        "hello there",
      );
      assert.equal(result.stopReason, "end_turn");
      assert.equal(result.rounds, 1);
      assert.deepEqual(agent.history.map((h) => h.role), ["user", "assistant"]);
    } finally {
      await agent.close();
    }
  });

  test("close is idempotent and a prompt after it throws", async () => {
    const agent = await createAgent({ model: { provider: "scripted", turns: [] } });
    await agent.close();
    await agent.close();
    assert.throws(
      () => agent.prompt("x"),
      (e: unknown) => e instanceof AgentError && /agent is closed/.test(e.message),
    );
  });

  test("limits are applied: maxRounds stops the prompt with max_turn_requests", async () => {
    const turns = [{ toolCalls: [{ name: "nope__tool" }] }, { text: "never reached" }];
    const agent = await createAgent({ model: { provider: "scripted", turns }, maxRounds: 1 });
    try {
      const run = agent.prompt("go");
      await drain(run);
      assert.equal((await run.result).stopReason, "max_turn_requests");
    } finally {
      await agent.close();
    }
  });

  test("MCP servers in the .mcp.json shape and the hook allowlist: the todo-enforcer's _Stop objects once", async () => {
    const app = createApp();
    const turns = [
      { toolCalls: [{ name: "todo__todo", arguments: { todos: [{ id: 1, title: "write the test" }] } }] },
      { text: "done" },
      { text: "done, really" },
    ];
    const agent = await createAgent({
      model: { provider: "scripted", turns },
      mcpServers: { mcpServers: { todo: { type: "http", url: "http://127.0.0.1/mcp" } } },
      fetch: appFetch(app) as typeof fetch,
      hookServers: ["todo"],
      stopMaxRejections: 1,
    });
    try {
      assert.deepEqual(agent.failures, []);
      const run = agent.prompt("work");
      const events = await drain(run);
      const result = await run.result;
      assert.equal(result.objections, 1);
      assert.equal(result.stopReason, "end_turn");
      const hook = events.find((e) => e.type === "hook");
      assert.equal(hook?.type === "hook" && hook.outcome, "objection");
      assert.match(hook?.type === "hook" ? hook.text ?? "" : "", /write the test/);
    } finally {
      await agent.close();
    }
  });

  test("a server that cannot start is in failures, named, and the agent still runs", async () => {
    const agent = await createAgent({
      model: { provider: "scripted", turns: [{ text: "ok" }] },
      mcpServers: [{
        name: "ghost",
        transport: { type: "stdio", command: "/nonexistent/sprout-ghost", args: [], env: {} },
      }],
    });
    try {
      assert.equal(agent.failures.length, 1);
      assert.equal(agent.failures[0]?.server, "ghost");
      assert.match(agent.failures[0]?.message ?? "", /^Cannot start server "ghost"/);
      const run = agent.prompt("go");
      await drain(run);
      assert.equal((await run.result).stopReason, "end_turn");
    } finally {
      await agent.close();
    }
  });

  test("the signal aborts creation while a server is still starting", async () => {
    const controller = new AbortController();
    const hanging = () => new Promise<Response>(() => {});
    const creating = createAgent({
      model: { provider: "scripted", turns: [] },
      mcpServers: { mcpServers: { slow: { url: "http://127.0.0.1:9/mcp" } } },
      fetch: hanging,
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 50);
    const started = Date.now();
    await assert.rejects(creating, (e: unknown) => isAbortError(e));
    assert.ok(Date.now() - started < 5000, "did not wait for the 30 s start-up bound");
  });

  test("an aborted creation kills the stdio server still starting and holds nothing open: the process exits at once", async () => {
    // A duration no other test process uses: the three runners run this test at the same time.
    const marker = `61.${100 + Math.floor(Math.random() * 900)}`;
    const run = await runToExit(`${repoRoot}tests/fixtures/abort-create.ts`, [marker]);
    assert.equal(run.code, 0);
    assert.equal(run.stdout.trim(), "AbortError");
    // The start-up bound is 30 s; before the abort reached the connection the process stayed
    // that long. 15 s leaves room for a slow start on a loaded machine.
    assert.ok(run.ms < 15_000, `exited after ${run.ms} ms`);
    assert.deepEqual(processesMatching(`sleep ${marker}`), [], "the server was killed");
  });

  for (
    const [name, options, pattern] of [
      ["a limit below its minimum", { maxRounds: -1 }, /^Invalid maxRounds: -1 must be at least 0$/],
      ["a fraction", { maxParallelTools: 1.5 }, /^Invalid maxParallelTools: 1.5 is not a whole number$/],
      [
        "a timeout past the timer range",
        { toolTimeoutMs: 2 ** 31 },
        /^Invalid toolTimeoutMs: .* must be at most 2147483647$/,
      ],
      [
        "a context window not above the output limit",
        { maxOutputTokens: 4096, maxContextTokens: 4096 },
        /^Invalid maxContextTokens: 4096 must be greater than maxOutputTokens \(4096\)$/,
      ],
    ] as Array<[string, Record<string, number>, RegExp]>
  ) {
    test(`refuses ${name}, naming the option`, async () => {
      await assert.rejects(
        createAgent({ model: { provider: "scripted", turns: [] }, ...options }),
        (e: unknown) => e instanceof AgentError && e.code === "config" && pattern.test(e.message),
      );
    });
  }

  test("refuses a model without its key or id, and a bad base URL, naming the option", async () => {
    await assert.rejects(
      createAgent({ model: { provider: "anthropic", model: "m", apiKey: "" } }),
      /^AgentError: Missing model\.apiKey: required for provider "anthropic"$/,
    );
    await assert.rejects(createAgent({ model: { provider: "openai", model: "" } }), /Missing model\.model/);
    await assert.rejects(
      createAgent({ model: { provider: "openai", model: "m", baseUrl: "ftp://x" } }),
      /Invalid model\.baseUrl: "ftp:\/\/x" is not an http or https URL/,
    );
    await assert.rejects(
      createAgent({ model: { provider: "anthropic", model: "m", apiKey: "k", thinkingBudgetTokens: 100 } }),
      /Invalid model\.thinkingBudgetTokens: 100 must be 0 \(off\) or at least 1024/,
    );
  });

  test("refuses an invalid server in the .mcp.json shape, naming the field", async () => {
    await assert.rejects(
      createAgent({
        model: { provider: "scripted", turns: [] },
        mcpServers: { mcpServers: { bad: { command: "x", args: "no" } } },
      }),
      /Invalid MCP configuration "options\.mcpServers": mcpServers\.bad\.args must be an array of strings/,
    );
  });

  test("accepts a ready Model", async () => {
    const agent = await createAgent({
      model: {
        name: "mine",
        complete: () => Promise.resolve({ text: "mine says hi", toolCalls: [], stop: "end_turn" }),
      },
    });
    try {
      const run = agent.prompt("hi");
      const events = await drain(run);
      assert.equal((await run.result).stopReason, "end_turn");
      assert.ok(events.some((e) => e.type === "round-start"));
    } finally {
      await agent.close();
    }
  });
});

describe("agentOptionsFromEnv", () => {
  const noFile = (path: string): string => {
    throw new Error(`no such file ${path}`);
  };

  test("reads the provider, the model and every limit with its SPEC default", () => {
    const options = agentOptionsFromEnv({
      SPROUT_AGENT_PROVIDER: "anthropic",
      ANTHROPIC_API_KEY: " sk-1 ",
      ANTHROPIC_MODEL: "claude",
    }, { readFile: noFile });
    assert.deepEqual(options.model, {
      provider: "anthropic",
      apiKey: "sk-1",
      model: "claude",
      baseUrl: "https://api.anthropic.com",
      apiVersion: "2023-06-01",
      thinkingBudgetTokens: 0,
    });
    assert.equal(options.hookServers, undefined);
    assert.deepEqual(
      [
        options.maxRounds,
        options.maxOutputTokens,
        options.maxContextTokens,
        options.llmTimeoutMs,
        options.toolTimeoutMs,
        options.mcpInitTimeoutMs,
      ],
      [0, 32768, 128000, 120000, 660000, 30000],
    );
    assert.deepEqual(
      [
        options.maxParallelTools,
        options.maxToolResultBytes,
        options.maxHandoffs,
        options.hookTimeoutMs,
        options.stopMaxRejections,
        options.maxLineBytes,
      ],
      [8, 51200, 5, 2500, 3, 4194304],
    );
  });

  test("reads the hook allowlist, a set limit and the scripted model's file", () => {
    const files: Record<string, string> = { "/s.json": '[{"text": "${WHO}"}]' };
    const options = agentOptionsFromEnv(
      {
        SPROUT_AGENT_PROVIDER: "scripted",
        SPROUT_AGENT_SCRIPT: "/s.json",
        WHO: "me",
        MCP_HOOK_SERVERS: "*",
        SPROUT_AGENT_TOOL_TIMEOUT_SECS: "5",
      },
      { readFile: (p) => files[p] ?? noFile(p) },
    );
    assert.deepEqual(options.model, { provider: "scripted", turns: [{ text: "me" }], path: "/s.json" });
    assert.equal(options.hookServers, "*");
    assert.equal(options.toolTimeoutMs, 5000);
    assert.deepEqual(
      agentOptionsFromEnv({ SPROUT_AGENT_PROVIDER: "openai", OPENAI_COMPAT_MODEL: "m", MCP_HOOK_SERVERS: "a, b" }, {
        readFile: noFile,
      }).hookServers,
      ["a", "b"],
    );
  });

  test("a bad or missing value is a config error naming the variable", () => {
    const named = (pattern: RegExp) => (e: unknown) =>
      e instanceof AgentError && e.code === "config" && pattern.test(e.message);
    assert.throws(() => agentOptionsFromEnv({}, { readFile: noFile }), named(/^Missing SPROUT_AGENT_PROVIDER/));
    assert.throws(
      () => agentOptionsFromEnv({ SPROUT_AGENT_PROVIDER: "openai" }, { readFile: noFile }),
      named(/^Missing OPENAI_COMPAT_MODEL/),
    );
    assert.throws(
      () =>
        agentOptionsFromEnv({
          SPROUT_AGENT_PROVIDER: "openai",
          OPENAI_COMPAT_MODEL: "m",
          SPROUT_AGENT_MAX_ROUNDS: "many",
        }, { readFile: noFile }),
      named(/^Invalid SPROUT_AGENT_MAX_ROUNDS/),
    );
    assert.throws(
      () =>
        agentOptionsFromEnv({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: "/x.json" }, {
          readFile: noFile,
        }),
      named(/^Invalid SPROUT_AGENT_SCRIPT "\/x\.json"/),
    );
  });

  test("its options build an agent as they are", async () => {
    const options = agentOptionsFromEnv({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: "/s.json" }, {
      readFile: () => '[{"text": "from env"}]',
    });
    const agent = await createAgent(options);
    try {
      const run = agent.prompt("hi");
      const events = await drain(run);
      assert.equal(
        events.filter((e) => e.type === "text-delta").map((e) => (e as { text: string }).text).join(""),
        "from env",
      );
    } finally {
      await agent.close();
    }
  });
});
