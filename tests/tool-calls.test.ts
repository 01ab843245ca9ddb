import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { INVALID_TOOL_NAME, prepareToolCalls } from "../lib/agent/tool-calls.ts";
import type { HistoryItem, ToolCall } from "../lib/conversation/types.ts";

const call = (id: string, name = "fx__echo"): ToolCall => ({ id, name, arguments: {} });
const counter = () => {
  let n = 0;
  return () => ++n;
};

describe("prepareToolCalls", () => {
  test("legal, new ids are kept as they are (the same objects)", () => {
    const calls = [call("toolu_1"), call("call_2")];
    const out = prepareToolCalls({ toolCalls: calls }, [], counter());
    assert.equal(out.calls[0], calls[0]);
    assert.equal(out.calls[1], calls[1]);
    assert.deepEqual(out.refused, {});
  });

  test("ids used earlier in history, repeated in the response, too long or with other characters get fresh 9-character ids", () => {
    const history: HistoryItem[] = [{ role: "user", text: "x" }, {
      role: "assistant",
      text: "",
      toolCalls: [call("call_0")],
    }, {
      role: "tool",
      toolCallId: "call_0",
      content: [{ type: "text", text: "ok" }],
      isError: false,
    }];
    const out = prepareToolCalls(
      { toolCalls: [call("call_0"), call("a"), call("a"), call("x".repeat(41)), call("has.dot")] },
      history,
      counter(),
    );
    const ids = out.calls.map((c) => c.id);
    assert.deepEqual(ids, ["call00001", "a", "call00002", "call00003", "call00004"]);
    for (const id of [ids[0], ...ids.slice(2)]) {
      assert.match(id!, /^[a-zA-Z0-9]{9}$/, "the form Mistral-family templates accept");
    }
  });

  test("a fresh id skips any already in history", () => {
    const history: HistoryItem[] = [{ role: "user", text: "x" }, {
      role: "assistant",
      text: "",
      toolCalls: [call("call00001"), call("call00002")],
    }];
    for (const id of ["call00001", "call00002"]) {
      history.push({ role: "tool", toolCallId: id, content: [{ type: "text", text: "ok" }], isError: false });
    }
    const out = prepareToolCalls({ toolCalls: [call("call00001")] }, history, counter());
    assert.equal(out.calls[0]!.id, "call00003");
  });

  test("a name no API accepts is kept as a placeholder and refused; bad arguments are refused by the new id", () => {
    const out = prepareToolCalls(
      { toolCalls: [call("k1", "fs.read"), call("k1", "fx__echo")], argumentErrors: { k1: "invalid JSON arguments" } },
      [],
      counter(),
    );
    assert.equal(out.calls[0]!.name, INVALID_TOOL_NAME);
    assert.match(out.refused["k1"]!, /unknown tool: "fs\.read"/);
    // The second call kept the bad-arguments error of its original id under its fresh id.
    assert.equal(out.calls[1]!.id, "call00001");
    assert.match(out.refused["call00001"]!, /Invalid tool arguments: invalid JSON arguments/);
  });
});
