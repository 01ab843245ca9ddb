/**
 * Issue 6, guarantee 6: secrets stay put. API keys from the agent's environment never reach a
 * stdio server, and no API key, `Authorization`/`x-api-key` value or `.mcp.json` header value
 * appears in `--json` events, human output, stderr logs, error messages or ACP responses, even
 * when an LLM or an MCP server echoes it back. Through `cli.ts run` and `cli.ts acp` under the
 * current runtime, against the recording fake LLM, the fixture stdio server and a real HTTP
 * server that echoes the credentials it receives.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeLlm, type FakeTurn, startFakeLlm } from "../lib/testing/fake-llm.ts";
import { fixtureConfig, runCli } from "./helpers/cli.ts";
import { spawnAgent } from "./helpers/acp.ts";
import { fixtureCommand } from "./helpers/session.ts";
import { runsOnce } from "./helpers/runtime.ts";

const ONCE = { skip: !runsOnce && "runs once, under bun" };

const ANTHROPIC_KEY = "sk-ant-SECRET-anthropic-0123456789";
const OPENAI_KEY = "sk-oai-SECRET-openai-0123456789";
const MCP_TOKEN = "mcp-SECRET-token-777";
const TENANT = "tenant-SECRET-42";
const SERVICE_TOKEN = "svc-SECRET-token-555";
const ALL = [ANTHROPIC_KEY, OPENAI_KEY, MCP_TOKEN, TENANT, SERVICE_TOKEN];

let dir: string;
/** LLM requests checked by the fake (all must be valid: guarantee 4). */
let checked = 0;
/** Faults injected: LLM error answers and refusals from the echoing MCP server. */
let faults = 0;
after(() => console.log(`reliability-secrets: ${faults} faults injected`));
after(() => console.log(`reliability-secrets: ${checked} LLM requests, 0 rejected`));
let echo: Server;
let echoUrl: string;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), "sprout-rel-secrets-"));
  // An MCP endpoint that refuses every request and echoes the credentials it got: 401 with the
  // headers as text for /mcp, a JSON-RPC error naming them for /rpc.
  echo = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      faults++;
      const seen = `Authorization: ${req.headers["authorization"] ?? "-"}; X-Tenant: ${req.headers["x-tenant"] ?? "-"}`;
      if (req.url === "/rpc") {
        let id: unknown = null;
        try {
          id = (JSON.parse(body) as { id?: unknown }).id ?? null;
        } catch { /* keep null */ }
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32001, message: `refused credentials (${seen})` } }),
        );
        return;
      }
      res.writeHead(401, { "content-type": "text/plain" });
      res.end(`Unauthorized. You sent ${seen}`);
    });
  });
  await new Promise<void>((r) => echo.listen(0, "127.0.0.1", () => r()));
  const address = echo.address();
  echoUrl = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`;
});
after(async () => {
  await new Promise<void>((r) => echo.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

function llmEnv(wire: "anthropic" | "openai", llm: FakeLlm): Record<string, string> {
  // Both keys are always set: the unused one must not leak either.
  return {
    SPROUT_AGENT_PROVIDER: wire,
    ANTHROPIC_API_KEY: ANTHROPIC_KEY,
    ANTHROPIC_MODEL: "claude-test",
    ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
    OPENAI_COMPAT_API_KEY: OPENAI_KEY,
    OPENAI_COMPAT_MODEL: "gpt-test",
    OPENAI_COMPAT_BASE_URL: llm.openaiBaseUrl,
    MCP_TOKEN,
  };
}

function assertNoSecret(text: string, where: string): void {
  for (const secret of ALL) {
    assert.equal(text.includes(secret), false, `${where} holds ${secret}:\n${text.slice(0, 3000)}`);
  }
}

async function withLlm<T>(turns: FakeTurn[], body: (llm: FakeLlm) => Promise<T>): Promise<T> {
  const llm = await startFakeLlm({ responses: turns });
  try {
    const out = await body(llm);
    assert.deepEqual(
      llm.requests.filter((r) => r.rejected).map((r) => r.rejected),
      [],
      "guarantee 4: no request rejected",
    );
    checked += llm.requests.length;
    return out;
  } finally {
    await llm.close();
  }
}

/** An .mcp.json with the echoing HTTP server (path /mcp or /rpc), a stdio server that prints its token and dies, and the fixture. */
function leakyConfig(path: "/mcp" | "/rpc"): string {
  faults++; // the stdio server that prints its token and dies
  return fixtureConfig(dir, { fx: {} }, {
    api: {
      type: "http",
      url: `${echoUrl}${path}`,
      headers: { Authorization: "Bearer ${MCP_TOKEN}", "X-Tenant": TENANT },
    },
    leaky: {
      command: "sh",
      args: ["-c", 'echo "starting with token=$SERVICE_TOKEN key=$ANTHROPIC_API_KEY" >&2; exit 3'],
      env: { SERVICE_TOKEN },
    },
  });
}

const echoKeyBody = (wire: "anthropic" | "openai", status: number) => {
  faults++;
  const message = `invalid key ${wire === "anthropic" ? ANTHROPIC_KEY : OPENAI_KEY} (header ${
    wire === "anthropic" ? "x-api-key" : "Authorization: Bearer"
  } ${wire === "anthropic" ? ANTHROPIC_KEY : OPENAI_KEY})`;
  return {
    status,
    body: wire === "anthropic"
      ? { type: "error", error: { type: "authentication_error", message } }
      : { error: { message, type: "invalid_request_error", param: null, code: "invalid_api_key" } },
  };
};

describe("guarantee 6: secrets never reach a stdio server's environment", () => {
  test("API keys and other agent variables are not in the server's environment, its own env is (run and acp)", async () => {
    const extra = { GITHUB_TOKEN: "ghp-SECRET-agent-only", AWS_SECRET_ACCESS_KEY: "aws-SECRET-agent-only" };
    await withLlm([{ toolCalls: [{ name: "fx__env", arguments: {} }] }, { text: "ok" }], async (llm) => {
      const cfg = fixtureConfig(dir, { fx: { OWN_VAR: "mine" } });
      const run = await runCli(["run", "--json", "--mcp-config", cfg, "list env"], {
        ...llmEnv("anthropic", llm),
        ...extra,
      }, { cwd: dir });
      assert.equal(run.code, 0, run.stderr);
      const names = String(run.events.find((e) => e["type"] === "tool-end")?.["output"]).split("\n");
      assert.ok(names.includes("OWN_VAR") && names.includes("PATH"), names.join(","));
      for (
        const name of [
          "ANTHROPIC_API_KEY",
          "OPENAI_COMPAT_API_KEY",
          "ANTHROPIC_BASE_URL",
          "MCP_TOKEN",
          "GITHUB_TOKEN",
          "AWS_SECRET_ACCESS_KEY",
        ]
      ) {
        assert.equal(names.includes(name), false, name);
      }
    });
    await withLlm([{ toolCalls: [{ name: "fx__env", arguments: {} }] }, { text: "ok" }], async (llm) => {
      const agent = spawnAgent({ ...llmEnv("anthropic", llm), ...extra });
      try {
        const { command, args } = fixtureCommand();
        const created = await agent.request("session/new", {
          cwd: dir,
          mcpServers: [{ name: "fx", command, args, env: [] }],
        });
        const from = agent.messages.length;
        const reply = await agent.request("session/prompt", {
          sessionId: created.result.sessionId,
          prompt: [{ type: "text", text: "env" }],
        });
        assert.equal(reply.result.stopReason, "end_turn");
        const done = agent.messages.slice(from).find((m) => m.params?.update?.status === "completed");
        const names = String(done?.params.update.content[0].content.text).split("\n");
        assert.ok(names.includes("PATH"));
        for (const name of ["ANTHROPIC_API_KEY", "OPENAI_COMPAT_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY"]) {
          assert.equal(names.includes(name), false, name);
        }
      } finally {
        await agent.close();
      }
    });
  });
});

// Each test has its own fake LLM, files and processes: they run at the same time. Redaction is
// lib code (lib/util/redact.ts, tested in-process in redact.test.ts) on text every runtime writes the
// same way: one case per kind of leak runs under every runtime, its variants once (under Bun).
describe("guarantee 6: secrets never appear in output (cli.ts run)", { concurrency: true }, () => {
  for (const wire of ["anthropic", "openai"] as const) {
    test(
      `(${wire}) an LLM error body echoing the key: --json error and retry warnings show the status and text, not the key`,
      wire === "anthropic" ? {} : ONCE,
      async () => {
        const retried = { ...echoKeyBody(wire, 500) };
        await withLlm([retried, echoKeyBody(wire, 401)], async (llm) => {
          const run = await runCli(["run", "--json", "go"], llmEnv(wire, llm), { cwd: dir });
          assert.equal(run.code, 1, run.stderr);
          assertNoSecret(run.stdout + run.stderr, "output");
          const warning = run.events.find((e) => e["type"] === "warning");
          assert.match(String(warning?.["message"]), /status 500: .*invalid key \[redacted\]/);
          const last = run.events.at(-1)!;
          assert.equal(last["type"], "error");
          assert.match(String(last["message"]), /status 401.*invalid key \[redacted\]/);
        });
      },
    );
  }

  test("people's output (stderr) has no key either", ONCE, async () => {
    await withLlm([echoKeyBody("anthropic", 403)], async (llm) => {
      const run = await runCli(["run", "go"], llmEnv("anthropic", llm), { cwd: dir });
      assert.equal(run.code, 1);
      assertNoSecret(run.stdout + run.stderr, "output");
      assert.match(
        run.stderr,
        /^error: Anthropic request failed with status 403: authentication_error: invalid key \[redacted\]/m,
      );
    });
  });

  for (const path of ["/mcp", "/rpc"] as const) {
    test(
      `an MCP HTTP server echoing its Authorization header (${
        path === "/mcp" ? "401 text" : "JSON-RPC error"
      }) and a stdio server printing its token: warnings name them, never the values`,
      path === "/mcp" ? {} : ONCE,
      async () => {
        await withLlm(
          [{ toolCalls: [{ name: "fx__echo", arguments: { text: "still works" } }] }, { text: "done" }],
          async (llm) => {
            const run = await runCli(
              ["run", "--json", "--mcp-config", leakyConfig(path), "go"],
              llmEnv("anthropic", llm),
              { cwd: dir },
            );
            assert.equal(run.code, 0, run.stderr);
            assertNoSecret(run.stdout + run.stderr, "output");
            const warnings = run.events.filter((e) => e["type"] === "warning").map((e) => String(e["message"]));
            const api = warnings.find((w) => w.includes('"api"'));
            assert.ok(api !== undefined, warnings.join("\n"));
            assert.match(api, path === "/mcp" ? /401/ : /refused credentials/);
            assert.match(api, /\[redacted\]/);
            const leaky = warnings.find((w) => w.includes('"leaky"'));
            // A server dying at once is reported with its exit code and stderr tail (not "write EPIPE").
            assert.match(
              String(leaky),
              /^Cannot start server "leaky": server exited \(code 3\); stderr:\nstarting with token=\[redacted\] key=$/,
            );
            assert.equal(
              run.events.find((e) => e["type"] === "tool-end")?.["ok"],
              true,
              "the other server still works",
            );
          },
        );
      },
    );
  }

  test("a credential variable .mcp.json passes on under another name (env, args) is redacted from the server's stderr lines", async () => {
    const GITHUB_TOKEN = "ghp-SECRET-github-31337";
    faults++; // the stdio server that prints the token and dies
    const config = fixtureConfig(dir, {}, {
      relay: {
        command: "sh",
        args: ["-c", 'echo "env GH=$GH arg=$0" >&2; sleep 1; exit 3', "${GITHUB_TOKEN}"],
        env: { GH: "${GITHUB_TOKEN}" },
      },
    });
    await withLlm([{ text: "done" }], async (llm) => {
      const run = await runCli(["run", "--mcp-config", config, "go"], { ...llmEnv("anthropic", llm), GITHUB_TOKEN }, {
        cwd: dir,
      });
      assert.equal(run.code, 0, run.stderr);
      assert.equal((run.stdout + run.stderr).includes(GITHUB_TOKEN), false, run.stderr);
      assert.match(run.stderr, /env GH=\[redacted\] arg=\[redacted\]/);
    });
  });

  test(
    "a .mcp.json header value that cannot be sent is a configuration error naming the field, not the value",
    ONCE,
    async () => {
      const file = join(dir, "bad-header.mcp.json");
      writeFileSync(
        file,
        JSON.stringify({
          mcpServers: {
            api: {
              type: "http",
              url: `${echoUrl}/mcp`,
              headers: { Authorization: `Bearer ${MCP_TOKEN}\r\nX-Evil: 1` },
            },
          },
        }),
      );
      // A valid script: it is read with the rest of the environment, before the MCP configuration.
      writeFileSync(join(dir, "empty-script.json"), "[]");
      const run = await runCli(["run", "--json", "--mcp-config", file, "go"], {
        SPROUT_AGENT_PROVIDER: "scripted",
        SPROUT_AGENT_SCRIPT: join(dir, "empty-script.json"),
      }, { cwd: dir });
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, /bad-header\.mcp\.json.*mcpServers\.api\.headers\.Authorization/);
      assertNoSecret(run.stdout + run.stderr, "output");
    },
  );

  test(
    "a connection error to a URL with credentials in it shows neither the password nor the headers",
    ONCE,
    async () => {
      faults++;
      const file = join(dir, "refused.mcp.json");
      writeFileSync(
        file,
        JSON.stringify({
          mcpServers: {
            gone: {
              type: "http",
              url: `http://user:${SERVICE_TOKEN}@127.0.0.1:9/mcp`,
              headers: { Authorization: `Bearer ${MCP_TOKEN}` },
            },
          },
        }),
      );
      await withLlm([{ text: "fine" }], async (llm) => {
        const run = await runCli(["run", "--json", "--mcp-config", file, "go"], llmEnv("anthropic", llm), { cwd: dir });
        assert.equal(run.code, 0, run.stderr);
        assertNoSecret(run.stdout + run.stderr, "output");
        assert.match(String(run.events.find((e) => e["type"] === "warning")?.["message"]), /"gone"/);
      });
    },
  );
});

describe("guarantee 6: secrets never appear in ACP responses, updates or logs", () => {
  test("session/new naming a server that echoed its headers, an LLM error echoing the key, and the stderr log hold no secret", async () => {
    await withLlm([echoKeyBody("openai", 401), { text: "after" }], async (llm) => {
      const agent = spawnAgent(llmEnv("openai", llm));
      try {
        const headers = [{ name: "Authorization", value: `Bearer ${MCP_TOKEN}` }, { name: "X-Tenant", value: TENANT }];
        const failed = await agent.request("session/new", {
          cwd: dir,
          mcpServers: [{ type: "http", name: "Echo API", url: `${echoUrl}/mcp`, headers }],
        });
        assert.equal(failed.error.code, -32000);
        assert.match(failed.error.message, /"Echo API".*401/);
        const rpc = await agent.request("session/new", {
          cwd: dir,
          mcpServers: [{ type: "http", name: "rpc", url: `${echoUrl}/rpc`, headers }],
        });
        assert.match(rpc.error.message, /refused credentials/);
        faults++;
        const leaky = await agent.request("session/new", {
          cwd: dir,
          mcpServers: [{
            name: "leaky",
            command: "sh",
            args: ["-c", 'echo "token=$SERVICE_TOKEN" >&2; exit 3'],
            env: [{ name: "SERVICE_TOKEN", value: SERVICE_TOKEN }],
          }],
        });
        assert.match(
          leaky.error.message,
          /^Cannot start server "leaky": server exited \(code 3\); stderr:\ntoken=\[redacted\]$/,
        );
        const created = await agent.request("session/new", { cwd: dir, mcpServers: [] });
        const prompt = (text: string) =>
          agent.request("session/prompt", { sessionId: created.result.sessionId, prompt: [{ type: "text", text }] });
        const llmFailed = await prompt("go");
        assert.equal(llmFailed.error.code, -32000);
        assert.match(llmFailed.error.message, /^llm: .*status 401.*\[redacted\]/);
        assert.equal((await prompt("again")).result.stopReason, "end_turn");
      } finally {
        await agent.close();
      }
      assertNoSecret(JSON.stringify(agent.messages), "ACP stdout");
      assertNoSecret(agent.stderr(), "ACP stderr");
    });
  });
});
