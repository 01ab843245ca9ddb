// deno-lint-ignore-file no-explicit-any
/**
 * lib/mcp/client.ts, stdio.ts, jsonrpc.ts against real child processes: the hand-written
 * raw fixture (misbehaving on purpose) and the SDK fixtures. CASES C06, C08, C10, C11.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { AgentError, isAbortError } from "../lib/util/errors.ts";
import { connectMcp } from "../lib/mcp/client.ts";
import { NUDGE_REQUEST_ID } from "../lib/mcp/era.ts";
import { childEnv, findCommand } from "../lib/mcp/stdio.ts";
import type { McpConnection, McpConnectOptions, McpServerConfig } from "../lib/mcp/types.ts";
import { alive, rawServer, textOf, tsServer, waitFor } from "./fixtures/mcp/helpers.ts";
import { repoRoot, runsOnce, runtime, tsCommand } from "./helpers/runtime.ts";
import type { Runtime } from "./helpers/runtime.ts";

function options(extra: Partial<McpConnectOptions> = {}): McpConnectOptions {
  return { sessionId: "sess-1", env: process.env, ...extra };
}

async function withServer<T>(
  config: McpServerConfig,
  extra: Partial<McpConnectOptions>,
  body: (c: McpConnection) => Promise<T>,
): Promise<T> {
  const connection = await connectMcp(config, options(extra));
  try {
    return await body(connection);
  } finally {
    await connection.close();
  }
}

/**
 * What the raw fixture received, without the era probe's nudges (sent when the probe is
 * unanswered for a second, which a start slowed by a loaded machine can take).
 */
async function received(c: McpConnection): Promise<Array<{ id?: unknown; method?: string; params?: any }>> {
  const all: Array<{ id?: unknown; method?: string; params?: any }> = JSON.parse(
    textOf(await c.callTool("received", {})),
  );
  return all.filter((m) => !(m.method === "notifications/cancelled" && m.params?.requestId === NUDGE_REQUEST_ID));
}

describe("stdio environment and command lookup", () => {
  test("childEnv keeps the pass-through list and LC_* and drops everything else", () => {
    const env = childEnv(
      { PATH: "/bin", HOME: "/h", LC_ALL: "C", ANTHROPIC_API_KEY: "k", OPENAI_COMPAT_API_KEY: "o", DENO_DIR: "/d" },
      { OWN: "1" },
    );
    assert.deepEqual(env, { PATH: "/bin", HOME: "/h", LC_ALL: "C", DENO_DIR: "/d", OWN: "1" });
  });

  test("findCommand looks a bare name up on PATH and returns undefined when missing", () => {
    assert.equal(
      findCommand("sh", "/nonexistent:/bin:/usr/bin", "/"),
      findCommand("sh", "/bin", "/") ?? findCommand("sh", "/usr/bin", "/"),
    );
    assert.equal(findCommand("surely-not-a-command-xyz", process.env.PATH, "/"), undefined);
  });

  test('a missing command fails with "not found on PATH"', async () => {
    const config: McpServerConfig = {
      name: "ghost",
      transport: { type: "stdio", command: "surely-not-a-command-xyz", args: [], env: {} },
    };
    await assert.rejects(connectMcp(config, options()), (error: unknown) => {
      assert.ok(error instanceof AgentError);
      assert.equal(error.code, "mcp-connect");
      assert.equal(error.message, 'Cannot start server "ghost": command "surely-not-a-command-xyz" not found on PATH');
      return true;
    });
  });

  test("the server sees a cleared environment: no API key, but PATH and its own env", async () => {
    const config = rawServer("env");
    (config.transport as { env: Record<string, string> }).env = { OWN_TOKEN: "t1" };
    await withServer(config, { env: { ...process.env, ANTHROPIC_API_KEY: "sk-ant-fake" } }, async (c) => {
      const env = JSON.parse(textOf(await c.callTool("env", {})));
      assert.equal(env.ANTHROPIC_API_KEY, undefined);
      assert.equal(env.OWN_TOKEN, "t1");
      assert.equal(env.PATH, process.env.PATH);
    });
  });
});

describe("requests and server messages", () => {
  test("every request carries sprout-agent/session and the per-request meta", async () => {
    await withServer(rawServer("meta"), {}, async (c) => {
      const meta = JSON.parse(
        textOf(await c.callTool("meta", {}, { meta: { "sprout-agent/hook": { event: "Stop" } } })),
      );
      assert.equal(meta["sprout-agent/session"], "sess-1");
      assert.deepEqual(meta["sprout-agent/hook"], { event: "Stop" });
      const log = await received(c);
      for (const m of log.filter((m) => m.id !== undefined && m.method !== undefined)) {
        assert.equal(m.params?._meta?.["sprout-agent/session"], "sess-1", `${m.method} carries the session`);
      }
    });
  });

  test("legacy handshake: server/discover refused, then initialize and notifications/initialized", async () => {
    await withServer(rawServer("hs"), {}, async (c) => {
      assert.equal(c.era, "legacy");
      assert.equal(c.protocolVersion, "2025-06-18");
      assert.deepEqual(c.serverInfo, { name: "raw-fixture", version: "0.0.1" });
      const methods = (await received(c)).map((m) => m.method);
      assert.deepEqual(methods.slice(0, 3), ["server/discover", "initialize", "notifications/initialized"]);
      const ids = (await received(c)).filter((m) => m.id !== undefined).map((m) => m.id);
      assert.equal(new Set(ids).size, ids.length, "ids are unique");
    });
  });

  test("a character split across chunks arrives whole", async () => {
    await withServer(rawServer("utf8"), {}, async (c) => {
      assert.equal(textOf(await c.callTool("utf8", {})), "héllo 世界 🎉");
    });
  });

  test("an oversize line is skipped with a warning and the next message is read", async () => {
    const warnings: string[] = [];
    await withServer(rawServer("big"), { maxLineBytes: 100_000, onWarning: (m) => warnings.push(m) }, async (c) => {
      assert.equal(textOf(await c.callTool("big", { bytes: 300_000 })), "after big");
      assert.ok(warnings.some((w) => w.includes("longer than 100000 bytes")), warnings.join("\n"));
      assert.equal(textOf(await c.callTool("echo", { text: "still fine" })), "echo: still fine");
    });
  });

  test("notifications/tools/list_changed calls onToolsChanged", async () => {
    let changed = 0;
    await withServer(rawServer("lc"), { onToolsChanged: () => changed++ }, async (c) => {
      await c.callTool("notify", {});
      assert.ok(await waitFor(() => changed === 1, 2000));
    });
  });

  test("a ping from the server is answered with {}", async () => {
    await withServer(rawServer("ping"), {}, async (c) => {
      const answer = JSON.parse(textOf(await c.callTool("ping", {})));
      assert.deepEqual(answer, { jsonrpc: "2.0", id: "srv-1", result: {} });
    });
  });

  test("any other server request is answered with -32601", async () => {
    await withServer(rawServer("ask"), {}, async (c) => {
      const answer = JSON.parse(textOf(await c.callTool("ask", {})));
      assert.equal(answer.id, "srv-1");
      assert.equal(answer.error.code, -32601);
    });
  });

  test("a JSON-RPC error answer rejects with code mcp", async () => {
    await withServer(rawServer("err"), {}, async (c) => {
      await assert.rejects(
        c.callTool("nope", {}),
        (e: unknown) => e instanceof AgentError && e.code === "mcp" && /Unknown tool: nope/.test(e.message),
      );
    });
  });
});

describe("abandoned requests", () => {
  test("a timeout sends notifications/cancelled with the request id and the late reply is discarded", async () => {
    await withServer(rawServer("slow"), {}, async (c) => {
      await assert.rejects(c.callTool("slow", { ms: 600, text: "LATE" }, { timeoutMs: 150 }), (e: unknown) => {
        assert.ok(e instanceof AgentError);
        assert.equal(e.code, "timeout");
        assert.match(e.message, /timed out after 0\.2 s/);
        return true;
      });
      await new Promise((r) => setTimeout(r, 700));
      assert.equal(textOf(await c.callTool("echo", { text: "next" })), "echo: next");
      const log = await received(c);
      const slow = log.find((m) => m.method === "tools/call" && m.params?.name === "slow");
      const cancelled = log.find((m) => m.method === "notifications/cancelled");
      assert.ok(slow && cancelled);
      assert.deepEqual(cancelled.params, { requestId: slow.id, reason: "timeout" });
    });
  });

  test("an abort rejects with an AbortError and sends notifications/cancelled", async () => {
    await withServer(rawServer("abort"), {}, async (c) => {
      const controller = new AbortController();
      // The server would answer after 60 s: the abort at 100 ms cannot lose that race, however
      // late a loaded machine fires it (close() ends the server, nobody waits for the answer).
      const call = c.callTool("slow", { ms: 60_000 }, { signal: controller.signal });
      setTimeout(() => controller.abort(), 100);
      await assert.rejects(call, (e: unknown) => isAbortError(e));
      const log = await received(c);
      const slow = log.find((m) => m.method === "tools/call" && m.params?.name === "slow");
      const cancelled = log.find((m) => m.method === "notifications/cancelled");
      assert.deepEqual(cancelled?.params, { requestId: slow?.id, reason: "cancelled" });
    });
  });
});

describe("server death (C08)", () => {
  test("C08: a server that exits mid-call fails every pending call at once with its exit code", async () => {
    const closes: unknown[] = [];
    const c = await connectMcp(rawServer("die"), options({ onClose: (info) => closes.push(info) }));
    try {
      const started = Date.now();
      const slow = c.callTool("slow", { ms: 20_000 });
      const die = c.callTool("die", {});
      const results = await Promise.allSettled([slow, die]);
      assert.ok(Date.now() - started < 1000, `failed after ${Date.now() - started} ms`);
      for (const r of results) {
        assert.equal(r.status, "rejected");
        const e = (r as PromiseRejectedResult).reason;
        assert.ok(e instanceof AgentError && e.code === "mcp");
        assert.match(e.message, /server exited \(code 1\)/);
        assert.match(e.message, /dying now/);
      }
      assert.equal(c.closed, true);
      assert.ok(await waitFor(() => closes.length === 1, 1000));
      const second = Date.now();
      await assert.rejects(c.callTool("echo", { text: "x" }), /server not connected/);
      assert.ok(Date.now() - second < 100);
    } finally {
      await c.close();
    }
  });
});

describe("era detection against legacy servers that answer the probe badly", () => {
  test("-32602 to server/discover: legacy on the same process", async () => {
    await withServer(rawServer("p602", ["--probe=invalid-params"]), {}, async (c) => {
      assert.equal(c.era, "legacy");
      const methods = (await received(c)).map((m) => m.method);
      assert.deepEqual(methods.slice(0, 2), ["server/discover", "initialize"]);
    });
  });

  test("exits on the probe: restarted and spoken to in legacy", async () => {
    const eraCache = new Map();
    await withServer(rawServer("pexit", ["--probe=exit"]), { eraCache }, async (c) => {
      assert.equal(c.era, "legacy");
      assert.equal((await received(c))[0]?.method, "initialize");
      assert.deepEqual([...eraCache.values()], ["legacy"]);
    });
  });

  test("a JSON-RPC error with a null id to server/discover: legacy at once, on the same process", async () => {
    const started = Date.now();
    await withServer(rawServer("pnull", ["--probe=null-id"]), {}, async (c) => {
      assert.equal(c.era, "legacy");
      const methods = (await received(c)).map((m) => m.method);
      assert.deepEqual(methods.slice(0, 2), ["server/discover", "initialize"], "no restart: the same process saw both");
      // No wait for the probe: that would be the 30 s init timeout; the bound leaves room for a
      // slow start of the process on a loaded machine.
      assert.ok(Date.now() - started < 15_000, `no probe timeout (took ${Date.now() - started} ms)`);
    });
  });

  test("silent on the probe: the init timeout, with advice to pin legacy; pinned legacy works", async () => {
    const config = rawServer("psilent", ["--probe=silent"]);
    await assert.rejects(connectMcp(config, options({ initTimeoutMs: 1000 })), (error: unknown) => {
      assert.ok(error instanceof AgentError && error.code === "mcp-connect");
      assert.match(
        error.message,
        /^Cannot start server "psilent": initialize timed out after 1 s without an answer to server\/discover \(a server that answers initialize but ignores unknown requests needs "protocol": "legacy" in its configuration\)$/,
      );
      return true;
    });
    await withServer({ ...config, protocol: "legacy" }, {}, async (c) => {
      assert.equal(c.era, "legacy");
      assert.equal((await received(c))[0]?.method, "initialize");
    });
  });

  test("a stdio server slow to answer its first request by 3 s is started once, its era decided by its answer (SDK 1.x legacy, SDK 2.x modern)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sprout-slow-"));
    try {
      // Each start of the real SDK server (delaying its stdin by 3 s) appends a line.
      const slow = (name: string, file: string): McpServerConfig => {
        const inner = tsServer(name, file, "bun", ["--delay-ms", "3000"]).transport as {
          command: string;
          args: string[];
        };
        const argv = [inner.command, ...inner.args].map((a) => `'${a}'`).join(" ");
        return {
          name,
          transport: {
            type: "stdio",
            command: "sh",
            args: ["-c", `echo start >> '${dir}/${name}'; exec ${argv}`],
            env: {},
          },
        };
      };
      const started = Date.now();
      const [legacy, modern] = await Promise.all([
        connectMcp(slow("slow1", "sdk1-stdio.ts"), options()),
        connectMcp(slow("slow2", "sdk2-stdio.ts"), options()),
      ]);
      const ms = Date.now() - started;
      try {
        assert.equal(legacy.era, "legacy");
        assert.equal(modern.era, "modern");
        assert.equal(textOf(await modern.callTool("add", { a: 2, b: 40 })), "42");
        assert.equal(textOf(await legacy.callTool("add", { a: 1, b: 1 })), "2");
      } finally {
        await Promise.all([legacy.close(), modern.close()]);
      }
      assert.equal(readFileSync(join(dir, "slow1"), "utf8"), "start\n", "SDK 1.x server started once");
      assert.equal(readFileSync(join(dir, "slow2"), "utf8"), "start\n", "SDK 2.x server started once");
      assert.ok(ms >= 2900 && ms < 10_000, `connected in ${ms} ms`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a remembered era skips detection", async () => {
    const config = rawServer("cached");
    const eraCache = new Map();
    await withServer(config, { eraCache }, async () => {});
    await withServer(config, { eraCache }, async (c) => {
      assert.equal((await received(c))[0]?.method, "initialize");
    });
  });

  test('C10: a server that never answers fails with "initialize timed out after N s" and its stderr tail', async () => {
    const started = Date.now();
    await assert.rejects(
      connectMcp(rawServer("mute", ["--mute", "--stderr=booting-slowly"]), options({ initTimeoutMs: 1000 })),
      (e: unknown) => {
        assert.ok(e instanceof AgentError && e.code === "mcp-connect");
        assert.match(e.message, /^Cannot start server "mute": initialize timed out after 1 s/);
        assert.match(e.message, /booting-slowly/);
        return true;
      },
    );
    assert.ok(Date.now() - started < 5000);
  });
});

describe("tools/list paging (C11)", () => {
  test("C11: 120 tools in pages of 50 take exactly 3 tools/list requests", async () => {
    await withServer(rawServer("pages", ["--pages"]), {}, async (c) => {
      const tools = await c.listTools();
      assert.equal(tools.length, 120);
      assert.equal(new Set(tools.map((t) => t.name)).size, 120);
    });
    // count requests on a second connection (the first one's tool list is gone with it)
    const c = await connectMcp(rawServer("pages2", ["--pages"]), options());
    try {
      await c.listTools();
      const log = JSON.parse(textOf(await c.callTool("received", {}))) as Array<{ method?: string; params?: any }>;
      const lists = log.filter((m) => m.method === "tools/list");
      assert.deepEqual(lists.map((m) => m.params?.cursor), [undefined, "p2", "p3"]);
    } finally {
      await c.close();
    }
  });

  test("C11: a server repeating the same cursor stops with a warning and de-duplicated tools", async () => {
    const warnings: string[] = [];
    await withServer(rawServer("repeat", ["--repeat-cursor"]), { onWarning: (m) => warnings.push(m) }, async (c) => {
      const tools = await c.listTools();
      assert.equal(tools.length, 11);
      assert.ok(warnings.some((w) => w.includes('repeated cursor "again"')), warnings.join("\n"));
    });
  });
});

describe("tools/list paging guard", () => {
  test("a server handing out a new cursor forever is read for at most 100 pages, with a warning", async () => {
    const warnings: string[] = [];
    await withServer(rawServer("endless", ["--endless-cursors"]), { onWarning: (m) => warnings.push(m) }, async (c) => {
      const tools = await c.listTools();
      assert.equal(tools.length, 100);
      assert.ok(warnings.some((w) => /100 pages/.test(w)), warnings.join("\n"));
    });
  });
});

describe("process groups (C06)", () => {
  function wrapperConfig(dir: string): McpServerConfig {
    const script =
      `exec 3<&0; node ${repoRoot}tests/fixtures/mcp/raw-server.mjs --pidfile=${dir}/inner.pid <&3 3<&- & wait`;
    return { name: "wrapped", transport: { type: "stdio", command: "sh", args: ["-c", script], env: {} } };
  }

  test("C06: close() ends the wrapper shell and the server it started", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mcp-c06-"));
    try {
      const c = await connectMcp(wrapperConfig(dir), options());
      assert.ok((await c.listTools()).length > 0);
      const outer = c.pid!;
      const inner = Number(readFileSync(`${dir}/inner.pid`, "utf8"));
      assert.ok(alive(outer) && alive(inner));
      await c.close();
      assert.ok(await waitFor(() => !alive(outer) && !alive(inner), 2000), "both pids gone within 2 s");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("C06: SIGTERM to the agent process kills the wrapper and the server", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mcp-c06t-"));
    try {
      const agent = `${dir}/agent.mts`;
      writeFileSync(
        agent,
        `import process from "node:process";
import { connectMcp } from "${repoRoot}lib/mcp/client.ts";
import { killAllServers } from "${repoRoot}lib/mcp/stdio.ts";
process.on("SIGTERM", () => { killAllServers(); process.exit(143); });
const config = ${JSON.stringify(wrapperConfig(dir))};
const c = await connectMcp(config, { sessionId: "s", env: process.env });
await c.listTools();
process.stdout.write("ready " + c.pid + "\\n");
setInterval(() => {}, 1000);
`,
      );
      const [command, ...args] = tsCommand(agent, runtime());
      const child = spawn(command!, args, { env: process.env, stdio: ["ignore", "pipe", "inherit"] });
      const outer = await new Promise<number>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (d: Buffer) => {
          out += d.toString();
          const m = /ready (\d+)/.exec(out);
          if (m) resolve(Number(m[1]));
        });
        child.once("exit", (code) => reject(new Error(`agent exited early with ${code}: ${out}`)));
      });
      const inner = Number(readFileSync(`${dir}/inner.pid`, "utf8"));
      assert.ok(alive(outer) && alive(inner));
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
      assert.ok(await waitFor(() => !alive(outer) && !alive(inner), 2000), "both pids gone within 2 s");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("kill and close", () => {
  test("kill() ends the process group at once and fails pending calls", async () => {
    const c = await connectMcp(rawServer("killme", ["--stubborn"]), options());
    const pid = c.pid!;
    const pending = c.callTool("slow", { ms: 10_000 });
    c.kill();
    await assert.rejects(pending, /was killed/);
    assert.equal(c.closed, true);
    assert.ok(await waitFor(() => !alive(pid), 1000), "gone within 1 s");
    await c.close();
  });

  test("close() escalates to SIGKILL for a server that ignores the end of stdin and SIGTERM", async () => {
    const c = await connectMcp(rawServer("stubborn", ["--stubborn"]), options());
    const pid = c.pid!;
    const started = Date.now();
    await c.close();
    assert.ok(!alive(pid));
    assert.ok(Date.now() - started < 3000);
  });
});

describe("C10: a server that connects its transport 300 ms late", () => {
  const runtimes: Runtime[] = runsOnce ? ["node", "bun", "deno"] : [runtime()];
  for (const which of runtimes) {
    test(`C10: the SDK 1.x server under ${which} finishes initialize and lists its tools`, async () => {
      const started = Date.now();
      await withServer(tsServer("late", "sdk1-stdio.ts", which, ["--delay-ms", "300"]), {}, async (c) => {
        assert.deepEqual((await c.listTools()).map((t) => t.name), ["echo", "add"]);
        assert.ok(Date.now() - started < 20_000);
      });
    });
  }
});
