/**
 * Guarantee 7 of issue 6: the todo-enforcer under load. One real server process (main.ts under
 * Bun, with `--token`), 50 agent sessions driven by sprout-agent's own MCP client
 * (`connectMcp`, one connection and one `sessionId` each, most detecting the modern era, some
 * pinned legacy), for 5 s in `npm test` (`RELIABILITY_LOAD_SECS` sets it: `.ci/run` runs the
 * 30 s soak issue 6 asked for after the suite; the latency bound is the same whatever the
 * length): each session replaces its list, reads it back, and calls
 * `_Stop` and `_PostCompact`. No mixed state, no error, every `_Stop` under 1 s. Then the
 * server's HTTP guards over the real port: bad `Host`, bad `Origin`, missing or wrong token.
 *
 * Runs once (under Bun; see tests/helpers/runtime.ts): the load does not depend on the runner,
 * and three runners loading the same 2 cores at once would measure each other.
 */
import assert from "node:assert/strict";
import { request } from "node:http";
import process from "node:process";
import { after, before, describe, test } from "node:test";
import { connectMcp } from "../lib/mcp/client.ts";
import type { McpConnection } from "../lib/mcp/types.ts";
import {
  postCompactText,
  removalWarning,
  renderTodos,
  stopText,
  type TodoItem,
} from "../servers/todo-enforcer/todo.ts";
import { resultText, type StartedServer, startServer } from "./helpers/hook-servers.ts";
import { repoRoot, runsOnce } from "./helpers/runtime.ts";

const MAIN = `${repoRoot}servers/todo-enforcer/main.ts`;
const TOKEN = "load-test-token";
/** Agent sessions, each with its own connection and list. */
const SESSIONS = 50;
/** Every 5th session is pinned to the legacy (2025-11-25) era; the others detect modern. */
const LEGACY_EVERY = 5;
/** Wall-clock bound of the load phase, in ms (`RELIABILITY_LOAD_SECS`, default 5). */
const DURATION_MS = Number(process.env.RELIABILITY_LOAD_SECS || "5") * 1000;
/** Count bound per session, so the loop ends by itself even on a fast machine. */
const MAX_CYCLES = 1000;
/** SPEC-level bound this test proves for every `_Stop` answer. */
const STOP_BOUND_MS = 1000;

/** The list session `s` writes in cycle `k`: 1–4 items whose titles name both, some done. */
function listFor(s: number, k: number): TodoItem[] {
  const count = 1 + ((s + k) % 4);
  return Array.from({ length: count }, (_, j) => ({
    id: j + 1 + (k % 7),
    title: `session ${s} cycle ${k} item ${j}`,
    done: (s + k + j) % 3 === 0,
  }));
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

/** One raw HTTP request over the real port, with headers `fetch` would not let us forge (Host). */
function rawPost(url: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const target = new URL(url);
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: Number(target.port),
        path: target.pathname,
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
          "content-length": String(Buffer.byteLength(body)),
          ...headers,
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("todo-enforcer under load over HTTP (issue 6, guarantee 7)", { skip: !runsOnce }, () => {
  let server: StartedServer | undefined;
  before(async () => {
    server = await startServer(MAIN, ["--host", "127.0.0.1", "--port", "0", "--token", TOKEN], "bun");
  });
  after(async () => {
    await server?.stop();
  });

  test(`50 agent sessions for ${DURATION_MS / 1000} s: each reads back exactly its last write, no error, every _Stop under 1 s`, async () => {
    assert.ok(server);
    const url = server.url;
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const connections: McpConnection[] = [];
    const stopMs: number[] = [];
    const errors: string[] = [];
    let requests = 0;
    let cycles = 0;
    try {
      for (let s = 0; s < SESSIONS; s++) {
        const legacy = s % LEGACY_EVERY === 0;
        connections.push(
          await connectMcp(
            {
              name: "todo",
              transport: { type: "http", url, headers: { authorization: `Bearer ${TOKEN}` } },
              ...(legacy ? { protocol: "legacy" as const } : {}),
            },
            { sessionId: `load-agent-${s}`, onWarning: (m) => errors.push(`session ${s} warning: ${m}`) },
          ),
        );
      }
      const eras = connections.map((c) => c.era);
      assert.equal(
        eras.filter((e) => e === "legacy").length,
        SESSIONS / LEGACY_EVERY,
        "the pinned sessions speak legacy",
      );
      assert.equal(
        eras.filter((e) => e === "modern").length,
        SESSIONS - SESSIONS / LEGACY_EVERY,
        "the others detected modern",
      );

      const started = performance.now();
      const deadline = started + DURATION_MS;
      const call = async (c: McpConnection, name: string, args: Record<string, unknown>) => {
        requests++;
        const result = await c.callTool(name, args, { timeoutMs: 10_000 });
        assert.notEqual(result.isError, true, `${name} returned an error result: ${resultText(result)}`);
        return resultText(result);
      };
      const agent = async (s: number, c: McpConnection) => {
        let previous: TodoItem[] = [];
        for (let k = 0; k < MAX_CYCLES && performance.now() < deadline; k++) {
          try {
            const list = listFor(s, k);
            const warning = removalWarning(previous, list);
            const echo = warning === "" ? renderTodos(list) : `${warning}\n\n${renderTodos(list)}`;
            assert.equal(
              await call(c, "todo", { todos: list }),
              echo,
              `session ${s} cycle ${k}: the write echoes its list, warning only about its own dropped items`,
            );
            previous = list;
            assert.equal(
              await call(c, "todo", {}),
              renderTodos(list),
              `session ${s} cycle ${k}: the read returns exactly the last write`,
            );
            const t0 = performance.now();
            const stop = await call(c, "_Stop", {});
            stopMs.push(performance.now() - t0);
            assert.equal(stop, stopText(list), `session ${s} cycle ${k}: _Stop sees only this session's list`);
            assert.equal(
              await call(c, "_PostCompact", {}),
              postCompactText(list),
              `session ${s} cycle ${k}: _PostCompact sees only this session's list`,
            );
            cycles++;
          } catch (error) {
            errors.push(`session ${s} cycle ${k}: ${error instanceof Error ? error.message : String(error)}`);
            return;
          }
        }
      };
      await Promise.all(connections.map((c, s) => agent(s, c)));
      const elapsedMs = performance.now() - started;

      const sorted = [...stopMs].sort((a, b) => a - b);
      const max = sorted.at(-1) ?? 0;
      const p99 = percentile(sorted, 99);
      const p50 = percentile(sorted, 50);
      console.log(
        `load: ${SESSIONS} sessions (${SESSIONS / LEGACY_EVERY} legacy), ${cycles} cycles, ${requests} requests in ${
          (elapsedMs / 1000).toFixed(1)
        } s ` +
          `(${Math.round(requests / (elapsedMs / 1000))} req/s); _Stop calls ${stopMs.length}, ` +
          `p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${max.toFixed(1)} ms; errors ${errors.length}`,
      );
      assert.deepEqual(errors, [], "no error, no warning, no mixed state");
      assert.ok(cycles >= SESSIONS, `every session completed at least one cycle (${cycles} in all)`);
      assert.ok(max < STOP_BOUND_MS, `every _Stop answered in under ${STOP_BOUND_MS} ms (max ${max.toFixed(1)} ms)`);

      // Every session's final list is still its own, after all that interleaving.
      const finals = await Promise.all(connections.map((c) => call(c, "_Stop", {})));
      for (const [s, text] of finals.entries()) {
        assert.doesNotMatch(
          text.replace(new RegExp(`session ${s} `, "g"), ""),
          /session \d+ /,
          `session ${s} sees no other session's item`,
        );
      }
    } finally {
      await Promise.all(connections.map((c) => c.close()));
    }
  });

  test("over the real port: a bad Host or Origin gets 403, a missing or wrong bearer token 401", async () => {
    assert.ok(server);
    const url = server.url;
    const port = new URL(url).port;
    const auth = { authorization: `Bearer ${TOKEN}` };

    const good = await rawPost(url, { ...auth, host: `127.0.0.1:${port}` });
    assert.equal(good.status, 200, `the right token and a local Host are served: ${good.body}`);
    assert.equal(
      (await rawPost(url, { ...auth, host: `localhost:${port}`, origin: "http://localhost:3000" })).status,
      200,
    );

    for (const host of [`evil.example:${port}`, `localhost.evil.example:${port}`, `127.0.0.1.nip.io:${port}`]) {
      const refused = await rawPost(url, { ...auth, host });
      assert.equal(refused.status, 403, `Host "${host}" is refused: ${refused.body}`);
    }
    for (const origin of ["http://evil.example", "http://127.0.0.1.evil.example:3000", "null"]) {
      const refused = await rawPost(url, { ...auth, host: `127.0.0.1:${port}`, origin });
      assert.equal(refused.status, 403, `Origin "${origin}" is refused: ${refused.body}`);
    }

    const missing = await rawPost(url, { host: `127.0.0.1:${port}` });
    assert.equal(missing.status, 401);
    assert.equal((JSON.parse(missing.body) as { error: { code: number } }).error.code, -32001);
    for (
      const authorization of [
        "Bearer wrong",
        `Bearer ${TOKEN}x`,
        `bearer ${TOKEN.slice(1)}`,
        TOKEN,
        "Basic Zm9vOmJhcg==",
      ]
    ) {
      assert.equal(
        (await rawPost(url, { host: `127.0.0.1:${port}`, authorization })).status,
        401,
        `Authorization "${authorization}" is refused`,
      );
    }

    // sprout-agent's client treats the 401 as an error, never as a reason to fall back to legacy.
    await assert.rejects(
      connectMcp({ name: "todo", transport: { type: "http", url, headers: {} } }, { sessionId: "no-token" }),
      (error: Error) => /todo/.test(error.message) && /401/.test(error.message),
    );
    await assert.rejects(
      connectMcp({
        name: "todo",
        transport: { type: "http", url, headers: { authorization: "Bearer wrong" } },
        protocol: "legacy",
      }, { sessionId: "bad-token" }),
      (error: Error) => /401/.test(error.message),
    );
  });
});
