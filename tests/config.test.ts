import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { loadConfig, parseHookServers, requireProvider, serverStderrShown } from "../lib/config/config.ts";
import { AgentError } from "../lib/util/errors.ts";

const noFile = (p: string): string => {
  throw new Error(`no such file ${p}`);
};

describe("config", () => {
  test("defaults follow SPEC section 9", () => {
    const c = loadConfig({}, noFile);
    assert.equal(c.maxRounds, 0);
    assert.equal(c.maxOutputTokens, 32768);
    assert.equal(c.maxContextTokens, 128000);
    assert.equal(c.llmTimeoutMs, 120_000);
    assert.equal(c.toolTimeoutMs, 660_000);
    assert.equal(c.mcpInitTimeoutMs, 30_000);
    assert.equal(c.maxParallelTools, 8);
    assert.equal(c.maxToolResultBytes, 51200);
    assert.equal(c.maxHandoffs, 5);
    assert.equal(c.hookTimeoutMs, 2500);
    assert.equal(c.stopMaxRejections, 3);
    assert.deepEqual(c.hookServers, { kind: "none" });
    assert.equal(c.maxLineBytes, 4194304);
    assert.equal(c.anthropic.baseUrl, "https://api.anthropic.com");
    assert.equal(c.openai.baseUrl, "https://api.openai.com/v1");
  });

  for (
    const [name, value] of [
      ["SPROUT_AGENT_MAX_ROUNDS", ""],
      ["SPROUT_AGENT_MAX_ROUNDS", "-1"],
      ["SPROUT_AGENT_HOOK_TIMEOUT_MS", "2.5"],
      ["SPROUT_AGENT_MAX_PARALLEL_TOOLS", "0"],
      ["SPROUT_AGENT_MAX_OUTPUT_TOKENS", "abc"],
      ["SPROUT_AGENT_PROVIDER", "gemini"],
    ] as const
  ) {
    test(`invalid ${name}=${JSON.stringify(value)} is an error naming the variable`, () => {
      assert.throws(() => loadConfig({ [name]: value }, noFile), (e: unknown) => {
        assert.ok(e instanceof AgentError);
        assert.equal(e.code, "config");
        assert.match(e.message, new RegExp(name));
        return true;
      });
    });
  }

  test("context must exceed output tokens", () => {
    assert.throws(
      () => loadConfig({ SPROUT_AGENT_MAX_CONTEXT_TOKENS: "1000", SPROUT_AGENT_MAX_OUTPUT_TOKENS: "1000" }, noFile),
      /SPROUT_AGENT_MAX_CONTEXT_TOKENS/,
    );
  });

  test("system prompt text and file together are an error", () => {
    assert.throws(
      () => loadConfig({ SPROUT_AGENT_SYSTEM_PROMPT: "a", SPROUT_AGENT_SYSTEM_PROMPT_FILE: "b" }, () => "x"),
      /SPROUT_AGENT_SYSTEM_PROMPT_FILE/,
    );
  });

  test("an unreadable system prompt file names the variable", () => {
    assert.throws(
      () => loadConfig({ SPROUT_AGENT_SYSTEM_PROMPT_FILE: "/nope" }, noFile),
      /SPROUT_AGENT_SYSTEM_PROMPT_FILE/,
    );
  });

  test("a provider's missing settings are named; the OpenAI-compatible key is optional", () => {
    assert.throws(
      () => requireProvider(loadConfig({ SPROUT_AGENT_PROVIDER: "anthropic", ANTHROPIC_MODEL: "m" }, noFile)),
      /ANTHROPIC_API_KEY/,
    );
    assert.throws(
      () => requireProvider(loadConfig({ SPROUT_AGENT_PROVIDER: "openai" }, noFile)),
      /OPENAI_COMPAT_MODEL/,
    );
    assert.throws(
      () => requireProvider(loadConfig({ SPROUT_AGENT_PROVIDER: "scripted" }, noFile)),
      /SPROUT_AGENT_SCRIPT/,
    );
    assert.throws(() => requireProvider(loadConfig({}, noFile)), /SPROUT_AGENT_PROVIDER/);
    assert.equal(
      requireProvider(loadConfig({ SPROUT_AGENT_PROVIDER: "openai", OPENAI_COMPAT_MODEL: "m" }, noFile)),
      "openai",
    );
  });

  test("empty string variables count as unset", () => {
    const c = loadConfig({ ANTHROPIC_BASE_URL: "", SPROUT_AGENT_SCRIPT: "" }, noFile);
    assert.equal(c.anthropic.baseUrl, "https://api.anthropic.com");
    assert.equal(c.scriptPath, undefined);
  });
});

describe("MCP_HOOK_SERVERS (SPEC section 3)", () => {
  test("unset, empty or whitespace: no hooks", () => {
    assert.deepEqual(parseHookServers(undefined), { kind: "none" });
    assert.deepEqual(parseHookServers(""), { kind: "none" });
    assert.deepEqual(parseHookServers("  \t "), { kind: "none" });
    assert.deepEqual(parseHookServers(" , ,"), { kind: "none" });
  });
  test("exactly * after trimming: all servers", () => {
    assert.deepEqual(parseHookServers(" * "), { kind: "all" });
  });
  test("a list is trimmed, empty entries dropped, * inside it is literal", () => {
    assert.deepEqual(parseHookServers(" a , ,b"), { kind: "only", names: ["a", "b"] });
    assert.deepEqual(parseHookServers("*,foo"), { kind: "only", names: ["*", "foo"] });
  });
});

describe("base URLs", () => {
  test("a base URL that is not an absolute http or https URL is refused naming the variable; one with spaces around is kept trimmed", () => {
    for (const raw of ["ftp://example.com", "localhost:11434", "not a url"]) {
      assert.throws(
        () => loadConfig({ OPENAI_COMPAT_BASE_URL: raw }, () => ""),
        (e: unknown) =>
          e instanceof AgentError && /^Invalid OPENAI_COMPAT_BASE_URL: .* is not an http or https URL$/.test(e.message),
      );
    }
    assert.equal(
      loadConfig({ ANTHROPIC_BASE_URL: " http://127.0.0.1:9/ " }, () => "").anthropic.baseUrl,
      "http://127.0.0.1:9/",
    );
  });
});

describe("SPROUT_AGENT_SERVER_STDERR (SPEC section 9)", () => {
  test("show or hide in any case and spacing; unset takes the caller's default", () => {
    assert.equal(serverStderrShown({}, true), true);
    assert.equal(serverStderrShown({}, false), false);
    assert.equal(serverStderrShown({ SPROUT_AGENT_SERVER_STDERR: " Show " }, false), true);
    assert.equal(serverStderrShown({ SPROUT_AGENT_SERVER_STDERR: "HIDE" }, true), false);
  });

  test("anything else, empty included, is a configuration error naming the variable", () => {
    for (const raw of ["", "yes", "1"]) {
      assert.throws(
        () => serverStderrShown({ SPROUT_AGENT_SERVER_STDERR: raw }, true),
        (e: unknown) =>
          e instanceof AgentError && e.code === "config" &&
          e.message === `Invalid SPROUT_AGENT_SERVER_STDERR: ${JSON.stringify(raw)} must be show or hide`,
      );
    }
  });
});
