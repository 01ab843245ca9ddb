import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { AgentError } from "../lib/util/errors.ts";
import { expandVars, objectKeysInOrder, parseMcpConfig, sanitizeServerNames } from "../lib/mcp/config.ts";
import { unsetVars } from "../lib/util/env.ts";

const opts = { env: { TOKEN: "t0k", HOME: "/home/u" }, resolvePath: (base: string, rel: string) => `${base}/${rel}` };
const parse = (value: unknown) => parseMcpConfig(JSON.stringify(value), "/cfg/.mcp.json", opts);

function configError(fn: () => unknown, pattern: RegExp) {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof AgentError, String(e));
    assert.equal(e.code, "config");
    assert.match(e.message, /"\/cfg\/\.mcp\.json"/);
    assert.match(e.message, pattern);
    return true;
  });
}

describe(".mcp.json (SPEC sections 10 and 11)", () => {
  test("servers keep the order of the file, integer-like names included", () => {
    const text =
      `{"mcpServers": {"zeta": {"command": "a"}, "10": {"command": "b"}, "alpha": {"url": "http://x/mcp"}, "2": {"command": "c"}}}`;
    const names = parseMcpConfig(text, "/cfg/.mcp.json", opts).map((s) => s.name);
    assert.deepEqual(names, ["zeta", "10", "alpha", "2"]);
  });

  test("stdio and http shapes, ${VAR} expansion, relative cwd against the file's folder", () => {
    const [a, b] = parse({
      mcpServers: {
        a: {
          command: "${HOME}/bin/srv",
          args: ["--token", "${TOKEN}", "${MISSING:-fallback}"],
          env: { K: "${TOKEN}" },
          cwd: "sub",
        },
        b: {
          type: "streamable-http",
          url: "http://127.0.0.1:1/mcp",
          headers: { Authorization: "Bearer ${TOKEN}" },
          protocol: "legacy",
        },
      },
    });
    assert.deepEqual(a, {
      name: "a",
      transport: {
        type: "stdio",
        command: "/home/u/bin/srv",
        args: ["--token", "t0k", "fallback"],
        env: { K: "t0k" },
        cwd: "/cfg/sub",
      },
    });
    assert.deepEqual(b, {
      name: "b",
      transport: { type: "http", url: "http://127.0.0.1:1/mcp", headers: { Authorization: "Bearer t0k" } },
      protocol: "legacy",
    });
  });

  test("the deprecated sse transport is refused with a reason", () => {
    configError(() => parse({ mcpServers: { s: { type: "sse", url: "http://x" } } }), /sse.*deprecated/);
  });

  test("invalid server names are errors naming the server", () => {
    configError(() => parse({ mcpServers: { "a.b": { command: "x" } } }), /"a\.b"/);
    configError(() => parse({ mcpServers: { "a__b": { command: "x" } } }), /"a__b"/);
    configError(() => parse({ mcpServers: { ["x".repeat(65)]: { command: "x" } } }), /must match/);
  });

  test("bad fields name the field", () => {
    configError(() => parse({ mcpServers: { s: { command: "" } } }), /mcpServers\.s\.command/);
    configError(() => parse({ mcpServers: { s: { command: "x", args: [1] } } }), /mcpServers\.s\.args/);
    configError(() => parse({ mcpServers: { s: { command: "x", env: { A: 1 } } } }), /mcpServers\.s\.env\.A/);
    configError(() => parse({ mcpServers: { s: { url: "not a url" } } }), /mcpServers\.s\.url/);
    configError(() => parse({ mcpServers: { s: { url: "ftp://host/mcp" } } }), /mcpServers\.s\.url .*http/);
    configError(
      () => parse({ mcpServers: { s: { command: "${EMPTY_DEFAULT:-}" } } }),
      /mcpServers\.s\.command .*empty/,
    );
    configError(() => parse({ mcpServers: { s: { command: "x", protocol: "2024" } } }), /mcpServers\.s\.protocol/);
    configError(() => parse({ mcpServers: [] }), /mcpServers must be an object/);
    configError(() => parseMcpConfig("{nope", "/cfg/.mcp.json", opts), /not valid JSON/);
  });

  test("more than 16 servers is an error", () => {
    const servers = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`s${i}`, { command: "x" }]));
    configError(() => parse({ mcpServers: servers }), /17 servers/);
  });

  test("unknown fields are ignored beside mcpServers; an empty file (or only $schema) means no servers", () => {
    assert.equal(parse({ mcpServers: { s: { command: "x", extra: true } }, other: 1, servers: {} }).length, 1);
    assert.deepEqual(parse({}), []);
    assert.deepEqual(parse({ $schema: "https://example.com/mcp.schema.json" }), []);
  });

  test("VS Code's shape (servers, no mcpServers) is refused with a hint to rename the key", () => {
    const vscode = { servers: { fs: { type: "stdio", command: "npx", args: ["-y", "x"] } }, inputs: [] };
    configError(
      () => parse(vscode),
      /: it has "servers" but no "mcpServers": that is VS Code's shape \(\.vscode\/mcp\.json\); rename the key to "mcpServers"$/,
    );
  });

  test("other top-level keys without mcpServers are refused, naming them, instead of meaning no servers", () => {
    configError(
      () => parse({ mcp_servers: { s: { command: "x" } }, other: 1 }),
      /: it has no "mcpServers", only "mcp_servers", "other": put the servers under "mcpServers"$/,
    );
  });

  test("an unset ${VAR} in url, command or cwd is an error naming the variable, the server and the field", () => {
    configError(
      () => parse({ mcpServers: { x: { type: "http", url: "${API_URL}" } } }),
      /: mcpServers\.x\.url uses \$\{API_URL\}, which is not set \(give it a value or a default: \$\{API_URL:-…\}\)$/,
    );
    // A URL that would still parse without it: the port would silently become 80.
    configError(
      () => parse({ mcpServers: { x: { url: "http://127.0.0.1:${PORT}/mcp" } } }),
      /mcpServers\.x\.url uses \$\{PORT\}, which is not set/,
    );
    configError(
      () => parse({ mcpServers: { s: { command: "${NOT_SET_ANYWHERE}" } } }),
      /mcpServers\.s\.command uses \$\{NOT_SET_ANYWHERE\}, which is not set/,
    );
    configError(
      () => parse({ mcpServers: { s: { command: "x", cwd: "${PROJECT}/tools" } } }),
      /mcpServers\.s\.cwd uses \$\{PROJECT\}, which is not set/,
    );
    configError(
      () =>
        parseMcpConfig(JSON.stringify({ mcpServers: { x: { url: "http://${H}:${P}/mcp" } } }), "/cfg/.mcp.json", {
          ...opts,
          env: { H: "" },
        }),
      /mcpServers\.x\.url uses \$\{H\} and \$\{P\}, which are not set or empty \(give them values or a default: \$\{H:-…\}\)$/,
    );
  });

  test("${VAR:-default} keeps working in url, command and cwd; elsewhere an unset ${VAR} is empty (SPEC section 11)", () => {
    const [a, b] = parse({
      mcpServers: {
        a: { url: "${API_URL:-http://127.0.0.1:1/mcp}", headers: { Authorization: "Bearer ${NO_TOKEN}" } },
        b: { command: "${BIN:-srv}", args: ["${NO_ARG}"], env: { K: "${NO_KEY}" }, cwd: "${DIR:-sub}" },
      },
    });
    assert.deepEqual(a?.transport, {
      type: "http",
      url: "http://127.0.0.1:1/mcp",
      headers: { Authorization: "Bearer " },
    });
    assert.deepEqual(b?.transport, { type: "stdio", command: "srv", args: [""], env: { K: "" }, cwd: "/cfg/sub" });
  });

  test("key order scanner handles nesting, escapes and arrays", () => {
    const text =
      `{"a": [1, {"mcpServers": {}}], "mcpServers": {"q\\"x": {"args": ["}", "{"]}, "1": {}, "b": {"n": {"m": 1}}}}`;
    assert.deepEqual(objectKeysInOrder(text, ["mcpServers"]), ['q"x', "1", "b"]);
  });

  test("expandVars", () => {
    assert.equal(expandVars("${A}-${B:-d}-${C}", { A: "1", C: "" }), "1-d-");
  });

  test("unsetVars lists the variables expandVars would leave empty, once each, never those with a default", () => {
    assert.deepEqual(unsetVars("${A}-${B:-d}-${C}-${D:-}-${C}-$E", { A: "1", C: "" }), ["C"]);
    assert.deepEqual(unsetVars("http://${HOST}:${PORT:-80}/${HOST}/${X}", {}), ["HOST", "X"]);
    assert.deepEqual(unsetVars("no variables", {}), []);
  });
});

describe("ACP server names (SPEC section 5.2)", () => {
  test("other characters become _, names stay unique", () => {
    assert.deepEqual(sanitizeServerNames(["GitHub MCP", "GitHub_MCP", "a__b", "", "ok-1"]), [
      "GitHub_MCP",
      "GitHub_MCP_2",
      "a_b",
      "server",
      "ok-1",
    ]);
    for (const name of sanitizeServerNames(["x".repeat(200), "é/ü"])) assert.match(name, /^[A-Za-z0-9_-]{1,64}$/);
  });
});
