/**
 * Two gaps of issue 25 in the loop, with the real wire clients against the recording fake LLM:
 * a run of `pause_turn` answers past the continuations ends with `max_pause_turns` (not
 * `end_turn`, and no `_Stop`), which ACP receives as `max_turn_requests` with a message for the
 * person (SPEC 6.5); token usage the provider never reported is counted as unreported, not as
 * `0` tokens (SPEC 11). CASES C43 and C44.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { runPrompt, withSession as withProcesses } from "./helpers/session.ts";
import { MAX_PAUSE_CONTINUATIONS } from "../lib/agent/loop.ts";
import { acpStopReason, resultUpdates } from "../lib/acp/updates.ts";
import { PAUSE_TURNS_TEXT } from "../lib/conversation/events.ts";
import { addUsage } from "../lib/conversation/events.ts";
import type { Usage } from "../lib/conversation/types.ts";

const withSession: typeof withProcesses = (options, body) => withProcesses({ inProcess: true, ...options }, body);

describe("pause_turn past the continuations (SPEC 6.5)", () => {
  test("C43 the 6th pause in a row ends the prompt with max_pause_turns, without the _Stop gate", async () => {
    const pauses = Array.from({ length: MAX_PAUSE_CONTINUATIONS + 1 }, (_, i) => ({
      text: `part ${i + 1} `,
      stop: "pause_turn",
    }));
    await withSession(
      {
        wire: "anthropic",
        env: { MCP_HOOK_SERVERS: "*" },
        servers: [{ name: "fx", env: { FIXTURE_STOP: "keep going" } }],
        responses: [...pauses, { text: "never asked" }],
      },
      async (t) => {
        const { result } = await runPrompt(t.session, "a long one");
        assert.equal(result.stopReason, "max_pause_turns");
        assert.equal(result.rounds, MAX_PAUSE_CONTINUATIONS + 1);
        assert.equal(t.llm.requests.length, MAX_PAUSE_CONTINUATIONS + 1);
        assert.deepEqual(t.calls().filter((c) => c.tool === "_Stop"), [], "no _Stop: the model did not end its turn");
        assert.equal(acpStopReason(result.stopReason), "max_turn_requests");
        assert.deepEqual(resultUpdates(result), [{
          sessionUpdate: "agent_message_chunk",
          content: { type: "text", text: `\n\n${PAUSE_TURNS_TEXT}\n` },
        }]);
      },
    );
  });

  test("five pauses and an answer: the turn ends as usual (end_turn)", async () => {
    const pauses = Array.from({ length: MAX_PAUSE_CONTINUATIONS }, () => ({ text: "more ", stop: "pause_turn" }));
    await withSession({ wire: "anthropic", responses: [...pauses, { text: "done" }] }, async (t) => {
      const { result } = await runPrompt(t.session, "go");
      assert.equal(result.stopReason, "end_turn");
      assert.equal(acpStopReason(result.stopReason), "end_turn");
    });
  });
});

describe("token usage the provider never reported (SPEC 11)", () => {
  test("C44 an endpoint that sends no usage: the counts are 0 with unreported = every request", async () => {
    await withSession(
      {
        wire: "openai",
        servers: [{ name: "fx" }],
        responses: [
          { toolCalls: [{ name: "fx__echo", arguments: { text: "x" } }], usage: null },
          { text: "done", usage: null },
        ],
      },
      async (t) => {
        const { result } = await runPrompt(t.session, "go");
        assert.deepEqual(result.usage, { inputTokens: 0, outputTokens: 0, unreported: 2 });
      },
    );
  });

  test("some reported, some not: the reported sum, and how many did not", async () => {
    await withSession(
      {
        wire: "openai",
        servers: [{ name: "fx" }],
        responses: [
          { toolCalls: [{ name: "fx__echo", arguments: { text: "x" } }], usage: { inputTokens: 7, outputTokens: 3 } },
          { text: "done", usage: null },
        ],
      },
      async (t) => {
        const { result } = await runPrompt(t.session, "go");
        assert.deepEqual(result.usage, { inputTokens: 7, outputTokens: 3, unreported: 1 });
      },
    );
  });

  test("every request reported: no unreported field (the shape of SPEC 11 unchanged)", async () => {
    await withSession({ wire: "openai", responses: [{ text: "hi" }] }, async (t) => {
      const { result } = await runPrompt(t.session, "go");
      assert.deepEqual(result.usage, { inputTokens: 10, outputTokens: 5 });
    });
  });

  test("addUsage counts a missing usage instead of adding nothing", () => {
    const sum: Usage = { inputTokens: 0, outputTokens: 0 };
    addUsage(sum, undefined);
    addUsage(sum, { inputTokens: 4, outputTokens: 1 });
    addUsage(sum, undefined);
    assert.deepEqual(sum, { inputTokens: 4, outputTokens: 1, unreported: 2 });
  });
});
