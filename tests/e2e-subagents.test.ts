// deno-lint-ignore-file require-await
/**
 * Subagents end to end (SPEC 13, CASES C39, C40): `cli.ts run` and `cli.ts acp` under the
 * runtime running the test, agent files in a project folder, a stdio hook server on the
 * official MCP SDK that logs each hook call with the agent its `_meta` names, and the fake LLM
 * on both wires answering the parent and each child by its system prompt. A parent hands two
 * tasks to two subagents in one response; they run concurrently; the hooks fire on the right
 * agent only; the parent's next request carries both reports whole; a SIGINT or an ACP
 * `session/cancel` reaches the children; ACP shows the children's activity as updates of the
 * parent's tool calls to the official ACP client.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import * as acp from "@agentclientprotocol/sdk";
import { type FakeTurn, type RecordedRequest, startFakeLlm } from "../lib/testing/fake-llm.ts";
import { runCli } from "./helpers/cli.ts";
import { tempDir } from "./helpers/acp.ts";
import { startAcpClient } from "./helpers/acp-client.ts";
import { repoRoot, runtime, tsCommand } from "./helpers/runtime.ts";

const REVIEW = "REVIEW of a.ts: 2 problems.\n1. line 3 divides by zero\n2. line 9 never returns";
const TESTS = "TESTS: all 12 pass.";

/**
 * The answer to one request, by the system prompt it carries and what its messages hold. A
 * prompt that says `slowly` hands on tasks that say so, and a child with such a task first
 * calls `fx__wait`, which answers only when cancelled.
 */
function respond() {
  return (request: RecordedRequest): FakeTurn => {
    const body = JSON.stringify(request.body);
    const waitFirst = body.includes("slowly") && !body.includes("cancelled");
    const system = request.wire === "anthropic"
      ? String(request.body["system"] ?? "")
      : String(((request.body["messages"] as Array<{ role: string; content: unknown }>)[0] ?? {}).content ?? "");
    if (system.startsWith("You review code.")) {
      if (body.includes("Check your work once more")) return { text: "OK." };
      if (body.includes("contents of a.ts")) return { text: REVIEW };
      if (waitFirst) return { toolCalls: [{ name: "fx__wait", arguments: {} }] };
      return { toolCalls: [{ name: "fx__read", arguments: { path: "a.ts" } }] };
    }
    if (system.startsWith("You test code.")) {
      if (body.includes("Check your work once more")) return { text: "Still all pass." };
      if (waitFirst) return { toolCalls: [{ name: "fx__wait", arguments: {} }] };
      return { text: TESTS };
    }
    if (
      !body.includes("slowly") && body.includes("subagent_reviewer") &&
      body.includes(REVIEW.split("\n")[0]!.slice(0, 20))
    ) {
      return { text: "Summary done." };
    }
    const how = body.includes("slowly") ? ", slowly" : "";
    return {
      toolCalls: [
        { name: "subagent_reviewer", arguments: { task: `review a.ts${how}` } },
        { name: "subagent_tester", arguments: { task: `run the tests${how}` } },
      ],
    };
  };
}

/** A project folder with two agent files and a .mcp.json naming the hook server. */
function project() {
  const dir = tempDir();
  const agents = join(dir.path, ".sprout-agent/agents");
  mkdirSync(agents, { recursive: true });
  writeFileSync(
    join(agents, "reviewer.md"),
    "---\nname: reviewer\ndescription: Reviews code\ntools: fx__read, fx__wait\n---\nYou review code.\n",
  );
  writeFileSync(
    join(agents, "tester.md"),
    "---\nname: tester\ndescription: Runs the tests\ntools: fx\n---\nYou test code.\n",
  );
  const log = join(dir.path, "hooks.log");
  const [command, ...args] = tsCommand(
    join(repoRoot, "tests/fixtures/subagent-hook-server.ts"),
    runtime() === "node" ? "bun" : runtime(),
  );
  const server = { command, args, env: { SUBAGENT_HOOK_LOG: log } };
  writeFileSync(join(dir.path, "mcp.json"), JSON.stringify({ mcpServers: { fx: server } }));
  const hooks = () => {
    let text = "";
    try {
      text = readFileSync(log, "utf8");
    } catch {
      // none yet
    }
    const out: Record<string, Record<string, number>> = {};
    for (const line of text.split("\n").filter((l) => l !== "")) {
      const r = JSON.parse(line) as { hook: string; agent: string };
      out[r.hook] ??= {};
      out[r.hook]![r.agent] = (out[r.hook]![r.agent] ?? 0) + 1;
    }
    return out;
  };
  return { dir, server, hooks };
}

function wireEnv(wire: "anthropic" | "openai", url: { anthropicBaseUrl: string; openaiBaseUrl: string }) {
  return wire === "anthropic"
    ? {
      SPROUT_AGENT_PROVIDER: "anthropic",
      ANTHROPIC_API_KEY: "sk-ant-test",
      ANTHROPIC_MODEL: "claude-test",
      ANTHROPIC_BASE_URL: url.anthropicBaseUrl,
    }
    : {
      SPROUT_AGENT_PROVIDER: "openai",
      OPENAI_COMPAT_API_KEY: "sk-test",
      OPENAI_COMPAT_MODEL: "gpt-test",
      OPENAI_COMPAT_BASE_URL: url.openaiBaseUrl,
    };
}

const EXPECTED_HOOKS = {
  _UserPromptSubmit: { main: 1 },
  _SubagentStart: { reviewer: 1, tester: 1 },
  _PreToolUse: { main: 2, reviewer: 1 },
  _SubagentStop: { reviewer: 1, tester: 1 },
  _Stop: { main: 1 },
};

/** `cli.ts acp` under the current runtime, connected to the official ACP client. */
const startAcp = (env: Record<string, string>, setup?: (app: acp.ClientApp) => acp.ClientApp) =>
  startAcpClient(env, { name: "sprout-subagent-test", ...(setup === undefined ? {} : { setup }) });

/** A session's updates until its prompt stops. */
async function collect(session: acp.ActiveSession, onUpdate?: (u: acp.SessionUpdate) => Promise<void>) {
  const updates: acp.SessionUpdate[] = [];
  while (true) {
    const message = await session.nextUpdate();
    if (message.kind === "stop") return updates;
    updates.push(message.update);
    await onUpdate?.(message.update);
  }
}

/** The progress blocks of a subagent call's updates (no status), and the child names their `_meta` gives. */
function progressOf(updates: readonly acp.SessionUpdate[], toolCallId: string) {
  const progress = updates.filter((u) =>
    u.sessionUpdate === "tool_call_update" && u.toolCallId === toolCallId && u.status == null
  ) as Array<{ content?: Array<{ content: { text: string } }>; _meta?: Record<string, { name: string }> }>;
  return {
    texts: progress.flatMap((u) => u.content ?? []).map((c) => c.content.text),
    names: progress.map((u) => u._meta?.["sprout-agent/subagent"]?.name),
  };
}

describe("subagents end to end", { concurrency: 2 }, () => {
  for (const wire of ["anthropic", "openai"] as const) {
    test(`C39 C40 run --json (${wire}): two subagents at once, hooks per agent, both reports whole`, async () => {
      const { dir, hooks } = project();
      const llm = await startFakeLlm({ responses: respond() });
      try {
        const run = await runCli(
          ["run", "--json", "--mcp-config", join(dir.path, "mcp.json"), "review and test"],
          {
            ...wireEnv(wire, llm),
            MCP_HOOK_SERVERS: "fx",
            XDG_STATE_HOME: join(dir.path, "state"),
            XDG_CONFIG_HOME: join(dir.path, "config"),
          },
          { cwd: dir.path },
        );
        assert.equal(run.code, 0, run.stderr);
        assert.deepEqual(llm.requests.filter((r) => r.rejected).map((r) => r.rejected), []);
        const result = run.events.at(-1)!;
        assert.equal(result["type"], "result");
        assert.equal(result["stopReason"], "end_turn");
        assert.deepEqual(hooks(), EXPECTED_HOOKS);
        // Each child's events carry its id and name, and the parent's call id.
        const wrapped = run.events.filter((e) => e["type"] === "subagent") as Array<
          { toolCallId: string; agentId: string; name: string; event: { type: string; name?: string } }
        >;
        const ids = new Map(wrapped.map((e) => [e.name, e.agentId]));
        assert.deepEqual([...ids.keys()].sort(), ["reviewer", "tester"]);
        assert.notEqual(ids.get("reviewer"), ids.get("tester"));
        assert.ok(
          wrapped.some((e) => e.name === "reviewer" && e.event.type === "tool-end" && e.event.name === "fx__read"),
        );
        // The parent's tool calls ran at once: both started before either ended.
        const order = run.events.filter((e) => e["type"] === "tool-start" || e["type"] === "tool-end").map((e) =>
          e["type"]
        );
        assert.deepEqual(order, ["tool-start", "tool-start", "tool-end", "tool-end"]);
        // The parent's last request carries both reports whole, the reviewer's closing "OK." after it.
        const last = JSON.stringify(llm.requests.at(-1)!.body);
        assert.ok(last.includes(JSON.stringify(`${REVIEW}\n\nOK.`).slice(1, -1)), last);
        assert.ok(last.includes(JSON.stringify(`${TESTS}\n\nStill all pass.`).slice(1, -1)), last);
        // The children's requests: the reviewer's tools are those its file names.
        const reviewer = llm.requests.find((r) => JSON.stringify(r.body).includes("You review code."))!;
        const toolNames = JSON.stringify(reviewer.body["tools"]);
        assert.ok(toolNames.includes("fx__read") && !toolNames.includes("subagent_"), toolNames);
        assert.equal(run.stdout.split("\n").filter((l) => l !== "" && !l.startsWith("{")).length, 0);
      } finally {
        await llm.close();
        dir.cleanup();
      }
    });
  }

  test("run without --json: the children's activity as indented lines on stderr, the answer alone on stdout", async () => {
    const { dir } = project();
    const llm = await startFakeLlm({ responses: respond() });
    try {
      const run = await runCli(
        ["run", "--mcp-config", join(dir.path, "mcp.json"), "review and test"],
        { ...wireEnv("anthropic", llm), MCP_HOOK_SERVERS: "fx", XDG_STATE_HOME: join(dir.path, "state") },
        { cwd: dir.path },
      );
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout, "Summary done.\n");
      assert.match(run.stderr, /^ {2}\[reviewer\] ✓ fx__read \{"path":"a\.ts"\} \(\d+ ms\) → contents of a\.ts$/m);
      assert.match(run.stderr, /^ {2}\[reviewer\] ⟲ _SubagentStop from fx objected: Check your work once more$/m);
      assert.match(run.stderr, /^ {2}\[tester\] TESTS: all 12 pass\.$/m);
      assert.match(run.stderr, /^✓ subagent_reviewer \{"task":"review a\.ts"\} .* → REVIEW of a\.ts: 2 problems\.$/m);
    } finally {
      await llm.close();
      dir.cleanup();
    }
  });

  test("SIGINT cancels the children's calls: exit 130, each child's call answered cancelled", async () => {
    const { dir } = project();
    const llm = await startFakeLlm({ responses: respond() });
    try {
      let waiting = 0;
      const run = await runCli(
        ["run", "--json", "--mcp-config", join(dir.path, "mcp.json"), "review and test slowly"],
        { ...wireEnv("openai", llm), MCP_HOOK_SERVERS: "fx", XDG_STATE_HOME: join(dir.path, "state") },
        {
          cwd: dir.path,
          timeoutMs: 25_000,
          onLine: (line, signal) => {
            if (line.includes('"type":"subagent"') && line.includes('"type":"tool-start"') && ++waiting === 2) {
              signal("SIGINT");
            }
          },
        },
      );
      assert.equal(run.code, 130, run.stderr);
      const ends = run.events.filter((e) =>
        e["type"] === "subagent" && (e["event"] as { type: string }).type === "tool-end"
      )
        .map((e) => (e["event"] as { output: string }).output);
      assert.deepEqual(ends, ["cancelled", "cancelled"]);
      assert.equal(run.events.at(-1)?.["stopReason"], "cancelled");
    } finally {
      await llm.close();
      dir.cleanup();
    }
  });

  test("ACP with the official client: children's activity as updates of the parent's calls, a cancel reaching them, replayed on load", async () => {
    const { dir, server, hooks } = project();
    const llm = await startFakeLlm({ responses: respond() });
    const env = {
      ...wireEnv("anthropic", llm),
      MCP_HOOK_SERVERS: "fx",
      SPROUT_AGENT_SESSION_DIR: join(dir.path, "sessions"),
    };
    const mcp = {
      name: "fx",
      command: server.command!,
      args: server.args,
      env: Object.entries(server.env).map(([name, value]) => ({ name, value })),
    } as acp.McpServer;
    const replayed: acp.SessionUpdate[] = [];
    let loading = false;
    const first = startAcp(env);
    let sessionId: string;
    let reviewerId: string;
    try {
      await first.connection.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {},
      });
      const session = await first.connection.agent.buildSession({ cwd: dir.path, mcpServers: [mcp] }).start();
      sessionId = session.sessionId;
      const done = session.prompt("review and test");
      const updates = await collect(session);
      assert.equal((await done).stopReason, "end_turn");
      const calls = updates.filter((u) => u.sessionUpdate === "tool_call").map((u) => u.title);
      assert.deepEqual(calls, ["subagent_reviewer", "subagent_tester"], "the children's calls are not the parent's");
      const reviewerCall = updates.find((u) => u.sessionUpdate === "tool_call" && u.title === "subagent_reviewer");
      reviewerId = (reviewerCall as { toolCallId: string }).toolCallId;
      const shown = progressOf(updates, reviewerId);
      assert.ok(shown.texts.includes("✓ fx__read → contents of a.ts"), JSON.stringify(shown));
      assert.ok(shown.texts.some((t) => t.startsWith('_SubagentStop hook "fx" objected')), JSON.stringify(shown));
      assert.equal(shown.names[0], "reviewer");
      const final = updates.find((u) =>
        u.sessionUpdate === "tool_call_update" && u.toolCallId === reviewerId && u.status === "completed"
      ) as { content: Array<{ content: { text: string } }> };
      assert.equal(final.content[0]!.content.text, `${REVIEW}\n\nOK.`);
      assert.deepEqual(hooks(), EXPECTED_HOOKS);

      // A cancel while both children wait on a tool: the prompt and both calls end cancelled.
      const slow = session.prompt("review and test slowly");
      let waiting = 0;
      let cancelled = false;
      const later = await collect(session, async (u) => {
        if (u.sessionUpdate !== "tool_call_update" || !JSON.stringify(u).includes("… fx__wait")) return;
        if (++waiting === 2 && !cancelled) {
          cancelled = true;
          await first.connection.agent.notify(acp.methods.agent.session.cancel, { sessionId });
        }
      });
      assert.equal((await slow).stopReason, "cancelled");
      const ends = later.filter((u) => u.sessionUpdate === "tool_call_update" && u.status === "failed");
      assert.equal(ends.length, 2);
      assert.ok(ends.every((u) => JSON.stringify(u).includes('"text":"cancelled"')), JSON.stringify(ends));
    } finally {
      assert.equal(await first.stop(), 0, first.stderr());
    }

    // session/load in a new process replays the children's activity as part of their calls.
    const second = startAcp(env, (app) =>
      app.onNotification(acp.methods.client.session.update, async ({ params }) => {
        if (loading) replayed.push(params.update);
      }));
    try {
      await second.connection.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {},
      });
      loading = true;
      await second.connection.agent.request(acp.methods.agent.session.load, {
        sessionId,
        cwd: dir.path,
        mcpServers: [mcp],
      });
      loading = false;
      const shown = progressOf(replayed, reviewerId);
      assert.ok(shown.texts.includes("✓ fx__read → contents of a.ts"), JSON.stringify(replayed));
      assert.ok(shown.texts.includes(REVIEW), JSON.stringify(shown));
      assert.equal(shown.names[0], "reviewer");
    } finally {
      assert.equal(await second.stop(), 0, second.stderr());
      await llm.close();
      dir.cleanup();
    }
  });
});
