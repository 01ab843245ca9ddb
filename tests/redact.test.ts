/** lib/util/redact.ts: what is removed from error and warning text (issue 6, guarantee 6). */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  configSecrets,
  envSecrets,
  headerSecrets,
  redact,
  REDACTED,
  redactEvent,
  redactValue,
  referencedSecrets,
} from "../lib/util/redact.ts";

describe("redact", () => {
  test("every occurrence of a known secret is replaced, the longest first", () => {
    assert.equal(
      redact("key sk-abc123 and sk-abc123456", ["sk-abc123", "sk-abc123456"]),
      `key ${REDACTED} and ${REDACTED}`,
    );
  });

  test("a secret is also found in its JSON-escaped form", () => {
    const secret = 'p"ss\\word';
    assert.equal(redact(JSON.stringify({ token: secret }), [secret]).includes("ss"), false);
  });

  test("secrets shorter than 4 characters and undefined entries are ignored", () => {
    assert.equal(redact("a 1 b", ["1", undefined, ""]), "a 1 b");
  });

  test("values after credential names are removed even when the secret is unknown", () => {
    for (
      const [input, expected] of [
        ["Authorization: Bearer abcdefghijkl", `Authorization: Bearer ${REDACTED}`],
        ['{"authorization":"Basic dXNlcjpwYXNz"}', `{"authorization":"Basic ${REDACTED}"}`],
        ["x-api-key: sk-ant-xyz-123", `x-api-key: ${REDACTED}`],
        ["got api_key=abc123&x=1", `got api_key=${REDACTED}&x=1`],
        ["token bearer eyJhbGciOiJIUzI1NiJ9.e30.sig", `token bearer ${REDACTED}`],
        ["https://user:hunter22@example.com/mcp", `https://user:${REDACTED}@example.com/mcp`],
      ] as Array<[string, string]>
    ) assert.equal(redact(input), expected, input);
  });

  test("ordinary messages are left alone", () => {
    for (
      const text of [
        "Missing ANTHROPIC_API_KEY: required when SPROUT_AGENT_PROVIDER=anthropic",
        'Request "tools/list" to server "api" failed: HTTP 401 (check the server\'s headers, for example Authorization)',
        "Invalid OPENAI_COMPAT_API_KEY: it contains a line break",
        "Anthropic request failed with status 529 after 4 attempts: overloaded_error: Overloaded",
      ]
    ) assert.equal(redact(text), text);
  });

  test("a known secret next to a credential name is redacted once, not mangled", () => {
    assert.equal(redact("Authorization: Bearer tok-123456", ["tok-123456"]), `Authorization: Bearer ${REDACTED}`);
    assert.equal(redact("Authorization: Bearer tok-123456", ["Bearer tok-123456"]), `Authorization: ${REDACTED}`);
  });

  test("patterns: false removes only the known secrets", () => {
    assert.equal(redact("api_key=example key1234", ["key1234"], { patterns: false }), `api_key=example ${REDACTED}`);
  });
});

describe("redactValue and redactEvent", () => {
  test("every string in an object is redacted; keys, numbers and shape are kept", () => {
    const value = { type: "warning", message: "bad sk-000111", nested: [{ a: "sk-000111" }, 3], n: 1 };
    assert.deepEqual(redactValue(value, ["sk-000111"]), {
      type: "warning",
      message: `bad ${REDACTED}`,
      nested: [{ a: REDACTED }, 3],
      n: 1,
    });
  });

  test("events of the model's own text lose known secrets only; warnings lose credential values too", () => {
    assert.deepEqual(redactEvent({ type: "text-delta", text: "set api_key=YOUR_KEY" }, []), {
      type: "text-delta",
      text: "set api_key=YOUR_KEY",
    });
    assert.deepEqual(redactEvent({ type: "text-delta", text: "it is sk-99999999" }, ["sk-99999999"]), {
      type: "text-delta",
      text: `it is ${REDACTED}`,
    });
    assert.deepEqual(redactEvent({ type: "warning", message: "x-api-key: abcdefgh" }, []), {
      type: "warning",
      message: `x-api-key: ${REDACTED}`,
    });
  });
});

describe("where secrets come from", () => {
  test("headers: credential headers only, or every value; a scheme's token alone too", () => {
    const headers = { Authorization: "Bearer tok-1", "X-Team": "blue-team", "x-api-key": "k-1234" };
    assert.deepEqual(headerSecrets(headers, false), ["Bearer tok-1", "tok-1", "k-1234"]);
    assert.deepEqual(headerSecrets(headers, true), ["Bearer tok-1", "tok-1", "blue-team", "k-1234"]);
  });

  test("a server's env gives the values of credential-named variables", () => {
    assert.deepEqual(envSecrets({ GITHUB_TOKEN: "ghp_x", DEBUG: "1", DB_PASSWORD: "pw", API_KEY: "k" }), [
      "ghp_x",
      "pw",
      "k",
    ]);
  });

  test("configSecrets gathers API keys, server headers and credential env values", () => {
    const secrets = configSecrets(
      { anthropic: { apiKey: "sk-ant" }, openai: { apiKey: undefined } },
      [
        { transport: { type: "http", headers: { Authorization: "Bearer t0k" } } },
        { transport: { type: "stdio", env: { SLACK_TOKEN: "xoxb" } } },
      ],
    );
    assert.deepEqual(secrets, ["sk-ant", "Bearer t0k", "t0k", "xoxb"]);
  });
});

describe("referencedSecrets", () => {
  test("credential-named variables a configuration references are secrets, under any name they are passed on", () => {
    const env = { GITHUB_TOKEN: "ghp_one", API_KEY: "k-two", HOME: "/root", EMPTY_TOKEN: "" };
    const text =
      '{"env": {"GH": "${GITHUB_TOKEN}", "H": "${HOME}"}, "args": ["--k=${API_KEY:-none}", "${EMPTY_TOKEN}", "${UNSET_SECRET}"]}';
    assert.deepEqual(referencedSecrets(text, env), ["ghp_one", "k-two"]);
    assert.deepEqual(referencedSecrets('{"args": ["$GITHUB_TOKEN"]}', env), []);
  });
});
