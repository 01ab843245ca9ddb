/**
 * The tool points end to end (SPEC 7.6, 7.7): the real wire clients against the recording fake
 * LLM, and the fixture MCP server (the official SDK) spawned as a process, on both wires. The
 * in-process tests (tests/tool-hooks.test.ts) hold the rules; these prove the bytes.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "./helpers/cli.ts";
import { closeChecked, messagesOf, runPrompt, startSession } from "./helpers/session.ts";

const echo = { toolCalls: [{ id: "call_1", name: "fx__echo", arguments: { text: "hello" } }] };

for (const wire of ["anthropic", "openai"] as const) {
  describe(`tool points over ${wire}`, () => {
    test("_PreToolUse denies in plain text: the tool never runs, the next request carries the denial", async () => {
      const t = await startSession({
        wire,
        env: { MCP_HOOK_SERVERS: "fx" },
        servers: [{ name: "fx", env: { FIXTURE_PRE_TOOL: "echo is not allowed here" } }],
        responses: [echo, { text: "understood" }],
      });
      try {
        const { result } = await runPrompt(t.session, "say hello");
        assert.equal(result.stopReason, "end_turn");
        assert.deepEqual(t.calls().map((c) => c.tool), ["_PreToolUse"], "the tool itself was never called");
        const meta = t.calls()[0]!.meta["sprout-agent/hook"] as { toolCall: Record<string, unknown> };
        assert.deepEqual(meta.toolCall, {
          id: "call_1",
          name: "fx__echo",
          server: "fx",
          tool: "echo",
          arguments: { text: "hello" },
        });
        const sent = JSON.stringify(messagesOf(t.llm.requests[1]!.body));
        assert.ok(
          sent.includes(
            JSON.stringify(JSON.stringify({ hook: "_PreToolUse", server: "fx", text: "echo is not allowed here" }))
              .slice(1, -1),
          ),
          sent,
        );
      } finally {
        await closeChecked(t);
      }
    });

    test("a typed rewrite runs the tool with the new arguments; _PostToolUse's context follows the result", async () => {
      const t = await startSession({
        wire,
        env: { MCP_HOOK_SERVERS: "fx" },
        servers: [{
          name: "fx",
          env: {
            FIXTURE_PRE_TOOL: JSON.stringify({ decision: "allow", updatedInput: { text: "HELLO" } }),
            FIXTURE_POST_TOOL: "checked by the reviewer",
            FIXTURE_TOOL_HOOK_TOOLS: "fx__ech?",
          },
        }],
        responses: [echo, { text: "done" }],
      });
      try {
        await runPrompt(t.session, "say hello");
        const echoed = t.calls().find((c) => c.tool === "echo");
        assert.deepEqual(echoed?.args, { text: "HELLO" });
        const post = t.calls().find((c) => c.tool === "_PostToolUse")!;
        assert.deepEqual((post.meta["sprout-agent/hook"] as { toolResult: unknown }).toolResult, {
          text: "HELLO",
          isError: false,
        });
        const result = t.session.history.find((i) => i.role === "tool");
        assert.ok(result?.role === "tool");
        const texts = result.content.map((b) => (b.type === "text" ? b.text : ""));
        assert.deepEqual(texts, [
          "HELLO",
          JSON.stringify({ hook: "_PostToolUse", server: "fx", text: "checked by the reviewer" }),
          JSON.stringify({
            hook: "_PreToolUse",
            server: "fx",
            text: 'the arguments were rewritten to {"text":"HELLO"}',
          }),
        ]);
      } finally {
        await closeChecked(t);
      }
    });

    test("a hook that declares other tools is not called; continue: false halts before the next request", async () => {
      const t = await startSession({
        wire,
        env: { MCP_HOOK_SERVERS: "fx,gate" },
        servers: [
          { name: "fx", env: { FIXTURE_PRE_TOOL: "never", FIXTURE_TOOL_HOOK_TOOLS: "shell__*" } },
          {
            name: "gate",
            env: {
              FIXTURE_NO_TOOLS: "1",
              FIXTURE_POST_TOOL: JSON.stringify({ continue: false, stopReason: "one tool call is enough" }),
            },
          },
        ],
        responses: [echo, { text: "never requested" }],
      });
      try {
        const { result } = await runPrompt(t.session, "say hello");
        assert.deepEqual(result.halt, { hook: "_PostToolUse", server: "gate", reason: "one tool call is enough" });
        assert.equal(t.llm.requests.length, 1, "no request after the halt");
        assert.ok(!t.calls().some((c) => c.server === "fx" && c.tool === "_PreToolUse"));
        assert.ok(t.calls().some((c) => c.server === "fx" && c.tool === "echo"));
      } finally {
        await closeChecked(t);
      }
    });
  });
}

describe("a required server in the CLI (SPEC 3.1, 11)", () => {
  test("run exits 3 when a required server cannot start, naming it; without required it only warns", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sprout-required-"));
    try {
      const script = join(dir, "script.json");
      writeFileSync(script, JSON.stringify([{ text: "hello" }]));
      const env = { SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script, MCP_HOOK_SERVERS: "guard" };
      for (const required of [true, false]) {
        const cfg = join(dir, `mcp-${required}.json`);
        const guard = { command: join(dir, "no-such-guard"), ...(required ? { required: true } : {}) };
        writeFileSync(cfg, JSON.stringify({ mcpServers: { guard } }));
        const run = await runCli(["run", "--mcp-config", cfg, "go"], env, { cwd: dir });
        if (required) {
          assert.equal(run.code, 3, run.stderr);
          assert.match(run.stderr, /^sprout-agent: Required server "guard" could not start: /m);
          assert.equal(run.stdout, "");
        } else {
          assert.equal(run.code, 0, run.stderr);
          assert.match(run.stderr, /^warning: Cannot start server "guard"/m);
          assert.equal(run.stdout, "hello\n");
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
