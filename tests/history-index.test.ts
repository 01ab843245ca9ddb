/**
 * The incremental history index (lib/conversation/history-index.ts, issue 11): its size is exactly the
 * SPEC 8.1 measure, the UTF-8 length of `JSON.stringify(history)`, and its ids exactly the
 * history's, through every way the loop, a compaction or an embedder changes the array; and a
 * session's rounds never serialise the old history again.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { usedCallIds } from "../lib/conversation/call-ids.ts";
import { historyBytes, truncateHistory } from "../lib/context/compaction.ts";
import { loadConfig } from "../lib/config/config.ts";
import { historyIndex } from "../lib/conversation/history-index.ts";
import { AgentSession } from "../lib/agent/loop.ts";
import { createRegistry } from "../lib/mcp/registry.ts";
import type { HistoryItem, LlmResponse, Model } from "../lib/conversation/types.ts";
import { fakeConnect, FakeServer, stdioConfig } from "./helpers/fake-connection.ts";
import { prng, randomHistory } from "./helpers/history.ts";

const utf8 = (s: string) => new TextEncoder().encode(s).length;

/** The index agrees with a full measure of `history`: bytes and every id, present or not. */
function assertMatches(history: readonly HistoryItem[], where: string, full = false): void {
  const index = historyIndex(history, { full });
  assert.equal(index.bytes, utf8(JSON.stringify(history)), `${where}: bytes`);
  assert.equal(historyBytes(history), utf8(JSON.stringify(history)), `${where}: historyBytes`);
  const ids = usedCallIds(history);
  for (const id of ids) assert.ok(index.has(id), `${where}: id ${id} is in the history`);
  for (let n = 0; n < 400; n++) {
    if (!ids.has(`call_${n}`)) assert.ok(!index.has(`call_${n}`), `${where}: call_${n} is not in the history`);
  }
}

describe("historyIndex", () => {
  test("its bytes equal the UTF-8 length of JSON.stringify(history) for random unicode histories, lone surrogates included", () => {
    for (let seed = 1; seed <= 20; seed++) {
      const history = randomHistory(prng(seed), 1 + (seed % 7));
      history.push({ role: "user", text: 'lone \ud800 surrogate, pair 😀, \u2028 separator, "quotes" \\ and \u0001' });
      assertMatches(history, `seed ${seed}`);
      assert.equal(historyBytes([]), 2);
    }
  });

  test("stays exact through appends, a compaction's splices, a refusal's cut and replaced items", () => {
    const random = prng(42);
    const int = (n: number) => Math.floor(random() * n);
    const history: HistoryItem[] = [];
    let next = 0;
    const fresh = (): HistoryItem[] => randomHistory(random, 1).map((item) => relabel(item, () => next++));
    for (let step = 0; step < 300; step++) {
      const op = int(8);
      let full = false;
      if (op <= 2 || history.length < 4) history.push(...fresh());
      else if (op === 3) {
        // Truncation: the kept suffix, the same item objects, spliced in place.
        const { history: kept } = truncateHistory(history, Math.floor(historyBytes(history) / 2));
        history.splice(0, history.length, ...kept);
      } else if (op === 4) {
        // A summary: a fresh context replaces everything.
        history.splice(0, history.length, { role: "user", text: `[Context Handoff]\nsummary ${step} ✓` }, ...fresh());
      } else if (op === 5) {
        // A refusal: the prompt and everything after it go.
        history.length = int(history.length);
      } else if (op === 6) {
        // The first, middle or last item replaced: seen without a full check.
        const at = [0, (history.length - 1) >> 1, history.length - 1][int(3)]!;
        history[at] = { role: "user", text: `replaced ${step} ü` };
      } else {
        // Any item replaced, as an embedder might between prompts: seen by the full check.
        history[int(history.length)] = { role: "assistant", text: `edited ${step} 日本`, toolCalls: [] };
        full = true;
      }
      assertMatches(history, `step ${step} (op ${op})`, full);
    }
  });

  test("each item object is serialised once, whichever array holds it", () => {
    const history = randomHistory(prng(7), 5);
    const index = historyIndex(history);
    assert.equal(index.serialised, history.length);
    const copy = [...history];
    assert.equal(historyIndex(copy).serialised, 0, "a copy holds the same items: nothing to serialise");
    history.push({ role: "user", text: "one more" });
    assert.equal(historyIndex(history).serialised, index.serialised);
    assert.equal(index.serialised, history.length);
  });
});

describe("a session's rounds", () => {
  test("do not serialise the old history again: an item placed before the prompt is turned to JSON once in 300 rounds", async () => {
    const server = new FakeServer("fx", ["read"]);
    const { registry } = await createRegistry([stdioConfig("fx")], {
      sessionId: "s",
      env: {},
      connect: fakeConnect([server]),
    });
    let calls = 0;
    // Asks for one tool call per round; never serialises the request itself.
    const model: Model = {
      name: "counting",
      complete(): Promise<LlmResponse> {
        calls++;
        if (calls >= 300) return Promise.resolve({ text: "done", toolCalls: [], stop: "end_turn" });
        return Promise.resolve({
          text: `step ${calls}`,
          toolCalls: [{ id: `call_${calls}`, name: "fx__read", arguments: { n: calls } }],
          stop: "tool_use",
          usage: { inputTokens: 1000 + calls, outputTokens: 5 },
        });
      },
    };
    const config = loadConfig({ SPROUT_AGENT_PROVIDER: "scripted" }, () => "");
    const session = new AgentSession({ config, model, registry });
    let serialised = 0;
    const earlier = { role: "user", text: "an earlier prompt" };
    // An item that counts how often it is turned to JSON (JSON.stringify calls toJSON).
    session.history.push({ ...earlier, toJSON: () => (serialised++, earlier) } as HistoryItem);
    session.history.push({ role: "assistant", text: "noted", toolCalls: [] });
    try {
      const run = session.prompt("go");
      for await (const _ of run) { /* drain */ }
      const result = await run.result;
      assert.equal(result.rounds, 300);
      assert.equal(serialised, 1, "measured once, not once or twice a round");
      assert.equal(historyIndex(session.history).bytes, utf8(JSON.stringify(session.history)));
    } finally {
      await registry.close();
    }
  });
});

/** `item` with its tool-call ids renumbered from `next`, so random histories never share ids. */
function relabel(item: HistoryItem, next: () => number): HistoryItem {
  if (item.role !== "assistant" || item.toolCalls.length === 0) return item;
  return { ...item, toolCalls: item.toolCalls.map((c) => ({ ...c, id: `call_${next()}` })) };
}
