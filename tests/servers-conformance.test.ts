/**
 * Both example hook servers over a real port: CASES C19 (the usual multi-request handshake and
 * concurrent calls on a stateless HTTP server), and the MCP conformance suite's server
 * scenarios against a baseline of scenarios a hook server legitimately cannot pass.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { createApp as createGateApp } from "../servers/test-gate/app.ts";
import { TestGate } from "../servers/test-gate/gate.ts";
import { createApp as createTodoApp } from "../servers/todo-enforcer/app.ts";
import {
  appFetch,
  childEnv,
  postJsonRpc,
  serverRuntimes,
  type StartedServer,
  startServer,
} from "./helpers/hook-servers.ts";
import { repoRoot, runsOnce } from "./helpers/runtime.ts";

const temps: string[] = [];
after(() => {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "hook-conformance-"));
  temps.push(dir);
  return dir;
}

/** Each server with the arguments that make it self-contained (test-gate gets a trivial suite). */
const SERVERS: { name: string; file: string; args: () => string[] }[] = [
  { name: "todo-enforcer", file: `${repoRoot}servers/todo-enforcer/main.ts`, args: () => [] },
  {
    name: "test-gate",
    file: `${repoRoot}servers/test-gate/main.ts`,
    args: () => ["--cmd", "true", "--cwd", tempDir()],
  },
];

interface RpcResponse {
  jsonrpc?: unknown;
  id?: unknown;
  result?: unknown;
  error?: unknown;
}

function assertRpcResult(response: { status: number; body: unknown }, id: number, what: string): void {
  assert.equal(response.status, 200, `${what}: HTTP 200`);
  const body = response.body as RpcResponse;
  assert.equal(body.jsonrpc, "2.0", `${what}: a JSON-RPC response`);
  assert.equal(body.id, id, `${what}: the id of its request`);
  assert.ok(body.result !== undefined && body.error === undefined, `${what}: a result, got ${JSON.stringify(body)}`);
}

describe("C19: hook servers answer the whole handshake and concurrent calls, never 500", () => {
  for (const server of SERVERS) {
    for (const which of serverRuntimes) {
      test(`C19: ${server.name} under ${which}: initialize, initialized, tools/list, 3 × _Stop, 5 concurrent calls`, async () => {
        const started = await startServer(server.file, server.args(), which);
        try {
          const url = started.url;
          const init = await postJsonRpc(url, {
            jsonrpc: "2.0",
            id: 1,
            method: "initialize",
            params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "c19", version: "1.0.0" } },
          });
          assertRpcResult(init, 1, "initialize");
          const version = (init.body as { result: { protocolVersion: string } }).result.protocolVersion;
          const headers = { "mcp-protocol-version": version };
          const initialized = await postJsonRpc(url, { jsonrpc: "2.0", method: "notifications/initialized" }, {
            headers,
          });
          assert.equal(initialized.status, 202, "the notification is accepted with 202");
          assertRpcResult(
            await postJsonRpc(url, { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }, { headers }),
            2,
            "tools/list",
          );
          for (const id of [3, 4, 5]) {
            const call = { jsonrpc: "2.0", id, method: "tools/call", params: { name: "_Stop", arguments: {} } };
            assertRpcResult(await postJsonRpc(url, call, { headers }), id, `_Stop #${id - 2}`);
          }
          const ids = [10, 11, 12, 13, 14];
          const concurrent = await Promise.all(
            ids.map((id) =>
              postJsonRpc(url, {
                jsonrpc: "2.0",
                id,
                method: "tools/call",
                params: { name: id % 2 === 0 ? "_Stop" : "_PostCompact", arguments: {} },
              }, { headers })
            ),
          );
          for (const [index, response] of concurrent.entries()) {
            assertRpcResult(response, ids[index] ?? -1, `concurrent call ${index + 1}`);
          }
        } finally {
          await started.stop();
        }
      });
    }
  }
});

function runConformance(url: string, outputDir: string): Promise<{ code: number; output: string }> {
  const bun = `${repoRoot}node_modules/.bin/bun`;
  const cli = `${repoRoot}node_modules/@modelcontextprotocol/conformance/dist/index.js`;
  const baseline = `${repoRoot}tests/conformance/server-baseline.yml`;
  return new Promise((resolve) => {
    execFile(
      bun,
      [cli, "server", "--url", url, "--suite", "all", "--expected-failures", baseline, "-o", outputDir],
      { env: childEnv(), timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
        resolve({ code, output: `${stdout}\n${stderr}` });
      },
    );
  });
}

/** The scenario names of the server baseline (its `- name` lines). */
function baselineEntries(): string[] {
  return [
    ...readFileSync(`${repoRoot}tests/conformance/server-baseline.yml`, "utf8").matchAll(/^\s+- ([\w/.-]+)\s*$/gm),
  ].map((m) => m[1] ?? "");
}

describe("MCP conformance suite, server scenarios (issue 6, guarantee 8)", { skip: !runsOnce }, () => {
  for (const server of SERVERS) {
    test(`${server.name} passes every scenario outside the baseline, and none inside it`, async () => {
      let started: StartedServer | undefined;
      try {
        started = await startServer(server.file, server.args(), "bun");
        const { code, output } = await runConformance(started.url, tempDir());
        const summary = output.slice(output.indexOf("=== SUMMARY ==="));
        // A scenario passes when it has at least one SUCCESS and no FAILURE; WARNINGs (shown only
        // in the baseline report) count as failures, and the exit code covers them.
        const passed = [...summary.matchAll(/^✓ ([\w-]+): [1-9]\d* passed, 0 failed$/gm)].map((m) => m[1] ?? "");
        const ran = [...summary.matchAll(/^[✓✗] ([\w-]+): \d+ passed/gm)].map((m) => m[1] ?? "");
        console.log(
          `${server.name}: ${passed.length} of ${ran.length} conformance scenarios passed: ${passed.join(", ")}`,
        );
        assert.equal(code, 0, `conformance reported a regression or a stale baseline entry:\n${output.slice(-4000)}`);
        const entries = baselineEntries();
        assert.deepEqual(
          entries.filter((e) => !ran.includes(e)),
          [],
          "every baseline entry names a scenario the suite ran",
        );
        assert.deepEqual(passed, ran.filter((s) => !entries.includes(s)), "every scenario outside the baseline passes");
        for (const scenario of ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"]) {
          assert.ok(passed.includes(scenario), `${scenario} passes`);
        }
      } finally {
        await started?.stop();
      }
    });
  }
});

describe("hook servers declare only what they do (issue 6, guarantee 8)", () => {
  const apps = [
    { name: "todo-enforcer", app: () => createTodoApp() },
    { name: "test-gate", app: () => createGateApp({ gate: new TestGate({ command: "true", cwd: tempDir() }) }) },
  ];
  for (const { name, app } of apps) {
    test(`${name} declares only tools, with listChanged false, in both eras`, async () => {
      const fetch = appFetch(app());
      const init = await postJsonRpc("http://127.0.0.1/mcp", {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "caps", version: "1.0.0" } },
      }, { fetch });
      assert.deepEqual((init.body as { result: { capabilities: unknown } }).result.capabilities, {
        tools: { listChanged: false },
      });
      const version = "2026-07-28";
      const discover = await postJsonRpc("http://127.0.0.1/mcp", {
        jsonrpc: "2.0",
        id: 2,
        method: "server/discover",
        params: {
          _meta: {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientInfo": { name: "caps", version: "1.0.0" },
            "io.modelcontextprotocol/clientCapabilities": {},
          },
        },
      }, { fetch, headers: { "mcp-protocol-version": version, "mcp-method": "server/discover" } });
      assert.deepEqual((discover.body as { result: { capabilities: unknown } }).result.capabilities, {
        tools: { listChanged: false },
      });
    });
  }
});
