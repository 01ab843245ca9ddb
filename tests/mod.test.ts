/**
 * The public surface is pinned: the names `mod.ts` and `testing.ts` export, values (read from
 * the loaded module) and types (read from their `export type` lines). A change to either list
 * is a change to the API and must show up here. The module example runs as written.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as mod from "../mod.ts";
import * as testing from "../testing.ts";
import { repoRoot } from "./helpers/runtime.ts";

/** The names of `export type { … }` lines of an entry point. */
function typeNames(file: string): string[] {
  const source = readFileSync(join(repoRoot, file), "utf8");
  const names: string[] = [];
  for (const m of source.matchAll(/^export type \{([^}]*)\}/gm)) {
    names.push(...m[1]!.split(",").map((n) => n.trim()).filter((n) => n !== ""));
  }
  return names.sort();
}

/** Every export line of an entry point is `export { … } from` or `export type { … } from`: no `export *`. */
function exportLines(file: string): string[] {
  // One entry per export statement, on one line (deno fmt spreads long lists over several).
  const source = readFileSync(join(repoRoot, file), "utf8");
  return [...source.matchAll(/^export\b[^;]*;/gm)].map((m) =>
    m[0].replace(/\s+/g, " ").replace(/,\s*\}/, " }").replace(/\{ /, "{ ")
  );
}

describe("mod.ts", () => {
  test("exports exactly these values", () => {
    assert.deepEqual(Object.keys(mod).sort(), [
      "AgentError",
      "SESSION_ID_PATTERN",
      "VERSION",
      "agentOptionsFromEnv",
      "createAgent",
      "createAnthropicModel",
      "createOpenAiModel",
      "createScriptedModel",
      "defaultSessionDir",
      "describeSession",
      "fileSessionStore",
      "loadSubagentFiles",
      "memorySessionStore",
      "parseRecords",
      "recordLine",
      "restoreSession",
      "serveAcp",
      "subagentFromFile",
    ]);
  });

  test("exports exactly these types", () => {
    assert.deepEqual(typeNames("mod.ts"), [
      "AcpOptions",
      "Agent",
      "AgentErrorCode",
      "AgentEvent",
      "AgentLimits",
      "AgentObserver",
      "AgentOptions",
      "AnthropicOptions",
      "ElicitationRequest",
      "ElicitationResult",
      "EventStream",
      "FileSessionStoreOptions",
      "HistoryItem",
      "HookAgent",
      "HookCall",
      "HookContext",
      "HookDecision",
      "HookHalt",
      "HookHandler",
      "HookMeta",
      "HookName",
      "HookOutcome",
      "HookToolCall",
      "HttpServerConfig",
      "InProcessHooks",
      "InputContext",
      "InputHandler",
      "LlmRequest",
      "LlmResponse",
      "LoadSubagentFilesOptions",
      "McpEra",
      "McpServerConfig",
      "Model",
      "ModelOptions",
      "OpenAiOptions",
      "PermissionAsk",
      "PermissionDefault",
      "PermissionOutcome",
      "PermissionRequest",
      "PromptLimit",
      "PromptOptions",
      "PromptResult",
      "PromptRun",
      "ProviderStop",
      "RegistryFailure",
      "RestoredSession",
      "ResultBlock",
      "RetryOptions",
      "SamplingResult",
      "ScriptTurn",
      "ScriptedOptions",
      "SessionCounters",
      "SessionInfo",
      "SessionRead",
      "SessionRecord",
      "SessionStore",
      "SessionWriter",
      "SpanIds",
      "StdioServerConfig",
      "StopReason",
      "SubagentDefinition",
      "TextSink",
      "ToolCall",
      "ToolDef",
      "TraceEvent",
      "TraceParent",
      "Usage",
    ]);
    assert.deepEqual(
      exportLines("mod.ts").filter((l) => !/^export (type )?\{[^}]*\} from "\.\/lib\/[^"]+\.ts";$/.test(l)),
      [],
    );
  });

  test("the module example runs as written", async () => {
    const agent = await mod.createAgent({
      model: { provider: "scripted", turns: [{ text: "Hello!" }] },
      mcpServers: { mcpServers: {} },
      maxRounds: 10,
    });
    try {
      const run = agent.prompt("Say hello");
      let text = "";
      for await (const event of run) if (event.type === "text-delta") text += event.text;
      assert.equal(text, "Hello!");
      assert.equal((await run.result).stopReason, "end_turn");
    } finally {
      await agent.close();
    }
  });
});

describe("testing.ts", () => {
  test("exports exactly these values", () => {
    assert.deepEqual(Object.keys(testing).sort(), [
      "createScriptedModel",
      "linkedTransports",
      "startFakeLlm",
      "strictTemplateProblems",
      "validateAnthropicRequest",
      "validateOpenAiRequest",
    ]);
  });

  test("exports exactly these types", () => {
    assert.deepEqual(typeNames("testing.ts"), [
      "FakeHttpError",
      "FakeLlm",
      "FakeLlmOptions",
      "FakeReply",
      "FakeStreamError",
      "FakeTurn",
      "HistoryItem",
      "InProcessServer",
      "InProcessTransport",
      "LlmRequest",
      "LlmResponse",
      "Model",
      "OpenAiValidateOptions",
      "ProviderStop",
      "RecordedRequest",
      "ResultBlock",
      "ScriptTurn",
      "ScriptedOptions",
      "StreamShape",
      "ToolCall",
      "ToolDef",
      "Usage",
    ]);
    assert.deepEqual(
      exportLines("testing.ts").filter((l) => !/^export (type )?\{[^}]*\} from "\.\/lib\/[^"]+\.ts";$/.test(l)),
      [],
    );
  });

  test("the module example runs as written: an agent against the fake LLM", async () => {
    const llm = await testing.startFakeLlm({ responses: [{ text: "hello" }] });
    try {
      const agent = await mod.createAgent({
        model: { provider: "anthropic", model: "m", apiKey: "k", baseUrl: llm.anthropicBaseUrl },
      });
      try {
        const run = agent.prompt("hi");
        for await (const _ of run);
        assert.equal((await run.result).stopReason, "end_turn");
        assert.equal(llm.requests.length, 1);
        assert.equal(llm.requests[0]?.rejected, undefined);
      } finally {
        await agent.close();
      }
    } finally {
      await llm.close();
    }
  });
});
