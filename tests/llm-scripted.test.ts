import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { loadConfig } from "../lib/config/config.ts";
import { AgentError } from "../lib/util/errors.ts";
import { createModel } from "../lib/llm/model.ts";
import { createScriptedModel, expandEnv, loadScript, type ScriptTurn } from "../lib/llm/scripted.ts";
import { startFakeLlm } from "../lib/testing/fake-llm.ts";
import type { LlmRequest } from "../lib/conversation/types.ts";

const req = (extra: Partial<LlmRequest> = {}): LlmRequest => ({
  system: "",
  history: [{ role: "user", text: "do the task" }],
  tools: [],
  maxOutputTokens: 100,
  ...extra,
});

const noFile = (p: string): string => {
  throw new Error(`ENOENT: no such file ${p}`);
};

describe("scripted model", () => {
  test("replays turns in order; stop defaults to tool_use with calls, else end_turn; ids call_<n> across the session", async () => {
    const turns: ScriptTurn[] = [
      { text: "reading", toolCalls: [{ name: "fs__read", arguments: { path: "a" } }, { name: "fs__read" }] },
      { toolCalls: [{ name: "fs__list", arguments: {} }], stop: "max_tokens" },
      { text: "done", usage: { inputTokens: 5, outputTokens: 2 } },
    ];
    const model = createScriptedModel(turns, { path: "s.json" });
    const a = await model.complete(req());
    assert.equal(a.stop, "tool_use");
    assert.deepEqual(a.toolCalls, [
      { id: "call_1", name: "fs__read", arguments: { path: "a" } },
      { id: "call_2", name: "fs__read", arguments: {} },
    ]);
    assert.equal(a.usage, undefined);
    const b = await model.complete(req());
    assert.equal(b.stop, "max_tokens");
    assert.equal(b.toolCalls[0]!.id, "call_3");
    const c = await model.complete(req());
    assert.deepEqual(c, { text: "done", toolCalls: [], stop: "end_turn", usage: { inputTokens: 5, outputTokens: 2 } });
  });

  test("text is streamed through onTextDelta in a few chunks", async () => {
    const model = createScriptedModel([{ text: "a streamed answer" }]);
    const deltas: string[] = [];
    await model.complete(req({ onTextDelta: (t) => deltas.push(t) }));
    assert.ok(deltas.length > 1);
    assert.equal(deltas.join(""), "a streamed answer");
  });

  test("running out of turns is an llm error naming the file and the count", async () => {
    const model = createScriptedModel([{ text: "one" }], { path: "/tmp/script.json" });
    await model.complete(req());
    const error = await model.complete(req()).catch((e: unknown) => e);
    assert.ok(error instanceof AgentError);
    assert.equal(error.code, "llm");
    assert.equal(error.message, 'Scripted model ran out of turns: "/tmp/script.json" has 1 turns');
  });

  test("summary requests do not consume turns and echo the prompt text", async () => {
    const model = createScriptedModel([{ text: "the turn" }]);
    const summary = await model.complete(
      req({ purpose: "summary", history: [{ role: "user", text: "Original task: fix bug 42" }] }),
    );
    assert.match(summary.text, /fix bug 42/);
    assert.equal(summary.stop, "end_turn");
    assert.equal((await model.complete(req())).text, "the turn");
  });

  test("an aborted signal rejects with an AbortError", async () => {
    const model = createScriptedModel([{ text: "x" }]);
    await assert.rejects(model.complete(req({ signal: AbortSignal.abort() })), (e: Error) => e.name === "AbortError");
  });

  test("${VAR} and ${VAR:-default} are expanded in string values", () => {
    const env = { ROOT: "/srv", EMPTY: "" };
    assert.deepEqual(
      expandEnv(
        { text: "in ${ROOT}", args: ["${MISSING:-dflt}", "${EMPTY:-e}", "${MISSING}", 3], "${ROOT}": true },
        env,
      ),
      { text: "in /srv", args: ["dflt", "e", "", 3], "${ROOT}": true },
    );
    const turns = loadScript("s.json", {
      readFile: () => JSON.stringify([{ toolCalls: [{ name: "fs__read", arguments: { path: "${ROOT}/a" } }] }]),
      env,
    });
    assert.deepEqual(turns[0]!.toolCalls![0]!.arguments, { path: "/srv/a" });
  });

  test("an invalid script is a config error naming the file and the field", () => {
    const cases: [string, RegExp][] = [
      ["{}", /"bad\.json": the file must hold a JSON array of turns/],
      ["[1]", /turn 1 must be an object/],
      ['[{"text": 5}]', /turn 1: "text" must be a string/],
      ['[{}, {"toolCalls": [{"arguments": {}}]}]', /turn 2: "toolCalls\[0\]\.name" must be a non-empty string/],
      ['[{"stop": "halt"}]', /turn 1: "stop" must be one of/],
      ['[{"usage": {"inputTokens": "x"}}]', /turn 1: "usage" must be/],
      ["[oops", /"bad\.json": not JSON/],
    ];
    for (const [text, pattern] of cases) {
      assert.throws(() => loadScript("bad.json", { readFile: () => text, env: {} }), (e: unknown) => {
        assert.ok(e instanceof AgentError);
        assert.equal(e.code, "config");
        assert.match(e.message, pattern);
        return true;
      });
    }
    assert.throws(
      () => loadScript("gone.json", { readFile: noFile }),
      /Invalid SPROUT_AGENT_SCRIPT "gone\.json": cannot read it/,
    );
  });
});

describe("createModel", () => {
  test("scripted: each call returns a new model that reads the script from the start", async () => {
    let reads = 0;
    const config = loadConfig({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: "/x/s.json" }, noFile);
    const readFile = () => {
      reads++;
      return JSON.stringify([{ text: "first" }, { text: "second" }]);
    };
    const a = createModel(config, { readFile });
    assert.equal((await a.complete(req())).text, "first");
    assert.equal((await a.complete(req())).text, "second");
    const b = createModel(config, { readFile });
    assert.equal((await b.complete(req())).text, "first");
    assert.equal(reads, 2);
  });

  test("a missing provider or script is a config error", () => {
    assert.throws(
      () => createModel(loadConfig({}, noFile)),
      (e: unknown) => e instanceof AgentError && e.code === "config",
    );
    const config = loadConfig({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: "/nope.json" }, noFile);
    assert.throws(() => createModel(config, { readFile: noFile }), /Invalid SPROUT_AGENT_SCRIPT "\/nope\.json"/);
  });

  test("anthropic and openai providers talk to their configured base URLs", async () => {
    const llm = await startFakeLlm({ responses: [{ text: "from anthropic" }, { text: "from openai" }] });
    try {
      const anthropic = createModel(loadConfig({
        SPROUT_AGENT_PROVIDER: "anthropic",
        ANTHROPIC_API_KEY: "k",
        ANTHROPIC_MODEL: "claude-x",
        ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
      }, noFile));
      assert.equal(anthropic.name, "anthropic:claude-x");
      assert.equal((await anthropic.complete(req())).text, "from anthropic");
      const openai = createModel(loadConfig({
        SPROUT_AGENT_PROVIDER: "openai",
        OPENAI_COMPAT_API_KEY: "k",
        OPENAI_COMPAT_MODEL: "gpt-x",
        OPENAI_COMPAT_BASE_URL: llm.openaiBaseUrl,
      }, noFile));
      assert.equal(openai.name, "openai:gpt-x");
      assert.equal((await openai.complete(req())).text, "from openai");
      assert.deepEqual(llm.requests.map((r) => r.wire), ["anthropic", "openai"]);
    } finally {
      await llm.close();
    }
  });
});
