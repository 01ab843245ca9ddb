/**
 * Guarantee 2 of issue 6, no server can hang the agent: dead, silent and flooding servers
 * (tests/fixtures/faults/server.mjs over stdio and HTTP) fail their calls quickly with a clear
 * error while the other servers keep working, and no process — children and grandchildren —
 * outlives the agent on normal exit, SIGTERM, SIGINT, or stdin EOF in ACP mode. Through
 * `cli.ts run --json` / `cli.ts acp` under the current runtime against the recording fake LLM;
 * every run also checks guarantee 4 (no request rejected by the fake). SPEC sections 6.8, 10.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { FakeTurn } from "../lib/testing/fake-llm.ts";
import {
  alive,
  eventsOf,
  faultEntry,
  llmEnv,
  logOf,
  pidsIn,
  type Run,
  runCli,
  startFaultHttp,
  survivors,
  tempDir,
  waitFor,
  withLlm,
  writeMcpConfig,
} from "./helpers/faults.ts";
import { spawnAgent, within } from "./helpers/acp.ts";

const dir = tempDir();
after(() => dir.cleanup());

const call = (name: string, args: Record<string, unknown> = {}) => ({ name, arguments: args });
const ends = (run: Run) => eventsOf(run, "tool-end");
const endOf = (run: Run, name: string, nth = 0) => ends(run).filter((e) => e["name"] === name)[nth]!;

/**
 * Polls until none of `pids` runs, returning those still running. SPEC/C04 say "gone within
 * 1 s" (the agent sends SIGKILL 0.5 s after SIGTERM); the wait allows 2.5 s, since on a loaded
 * machine the kill itself can start late. The "while the agent still ran" checks hold the
 * agent open longer than that (`pauseMs: 3000`), so its exit cannot do the killing.
 */
async function goneWithin(pids: number[], ms = 2500): Promise<number[]> {
  await waitFor(() => !pids.some(alive), ms);
  return pids.filter(alive);
}

describe("G2 no server can hang the agent: flooding, dead and silent servers (stdio)", () => {
  test("flooding replies: 10 MB of stderr, a byte-at-a-time reply and invalid UTF-8 work; an over-long reply fails at once naming its size and SPROUT_AGENT_MAX_LINE_BYTES", async () => {
    const pids = dir.file("flood.pids");
    const config = writeMcpConfig(dir.file("mcp.json"), {
      flood: faultEntry("flood", { FAULT_PID_FILE: pids }),
      other: faultEntry("other"),
    });
    const turns: FakeTurn[] = [
      {
        toolCalls: [
          call("flood__stderr", { bytes: 10 * 1024 * 1024 }),
          call("flood__trickle"),
          call("flood__bad_utf8"),
          call("other__echo", { text: "one" }),
        ],
      },
      {
        toolCalls: [
          call("flood__huge", { bytes: 2 * 1024 * 1024 }),
          call("flood__huge", { bytes: 2 * 1024 * 1024, idLast: true }),
          call("other__echo", { text: "two" }),
        ],
      },
      { toolCalls: [call("flood__echo", { text: "still readable" })] },
      { text: "done" },
    ];
    await withLlm(turns, async (llm) => {
      const run = await runCli(
        ["run", "--json", "--mcp-config", config, "flood"],
        llmEnv(llm, {
          SPROUT_AGENT_MAX_LINE_BYTES: String(1024 * 1024),
        }),
        { cwd: dir.path },
      );
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.events.at(-1)!["stopReason"], "end_turn");
      const stderr = endOf(run, "flood__stderr");
      assert.equal(stderr["ok"], true);
      assert.match(String(stderr["output"]), /wrote 10485760 bytes to stderr/);
      assert.equal(
        endOf(run, "flood__trickle")["output"],
        "trickled ✓ 世界",
        "a reply written one byte at a time arrives whole",
      );
      const bad = endOf(run, "flood__bad_utf8");
      assert.equal(bad["ok"], true);
      assert.match(
        String(bad["output"]),
        /^bad .*\uFFFD.* utf8 end$/,
        "invalid bytes become U+FFFD; the message is still read",
      );
      for (const nth of [0, 1]) {
        const huge = endOf(run, "flood__huge", nth);
        assert.equal(huge["ok"], false);
        assert.match(
          String(huge["output"]),
          /reply (is \d{7} bytes|is longer than 1048576 bytes), over the 1048576-byte limit set by SPROUT_AGENT_MAX_LINE_BYTES/,
        );
        assert.ok(
          Number(huge["durationMs"]) < 10_000,
          `failed at once, not at the 660 s tool timeout (${huge["durationMs"]} ms)`,
        );
      }
      assert.deepEqual(ends(run).filter((e) => e["name"] === "other__echo").map((e) => e["ok"]), [true, true]);
      assert.equal(
        endOf(run, "flood__echo")["output"],
        "flood echo: still readable",
        "the server is still read after a skipped line",
      );
      assert.ok(run.ms < 45_000, `the run took ${run.ms} ms`);
      assert.ok(llm.requests.every((r) => JSON.stringify(r.body).length < 200_000), "no flood reached the LLM");
    });
    assert.deepEqual(await goneWithin(pidsIn(pids)), []);
  });

  test("C08 a server exiting mid-call fails that call at once with its exit code; its grandchildren die with it; the other server keeps working", async () => {
    const pids = dir.file("dies.pids");
    const config = writeMcpConfig(dir.file("mcp.json"), {
      dies: faultEntry("dies", { FAULT_PID_FILE: pids, FAULT_SPAWN: "1" }),
      other: faultEntry("other"),
    });
    let leftWhileRunning: Promise<number[]> = Promise.resolve([]);
    const turns: FakeTurn[] = [
      { toolCalls: [call("dies__spawn", { count: 2 })] },
      { toolCalls: [call("dies__exit", { code: 3 }), call("other__echo", { text: "unaffected" })] },
    ];
    await withLlm((_r, index) => {
      if (index === 2) {
        leftWhileRunning = goneWithin(pidsIn(pids));
        return { text: "done", pauseMs: 3000 };
      }
      return turns[index] ?? { status: 500 };
    }, async (llm) => {
      const run = await runCli(["run", "--json", "--mcp-config", config, "die"], llmEnv(llm), { cwd: dir.path });
      assert.equal(run.code, 0, run.stderr);
      const exit = endOf(run, "dies__exit");
      assert.equal(exit["ok"], false);
      assert.match(String(exit["output"]), /Server "dies" exited during tool "dies__exit" \(exit code 3\)/);
      assert.match(String(exit["output"]), /exiting mid-call/, "the stderr tail is shown");
      assert.ok(Number(exit["durationMs"]) < 5000, `failed at once (${exit["durationMs"]} ms)`);
      assert.equal(endOf(run, "other__echo")["output"], "other echo: unaffected");
    });
    assert.equal(pidsIn(pids).length, 4, "the server, one grandchild at start, two spawned mid-session");
    assert.deepEqual(await leftWhileRunning, [], "while the agent still ran, nothing of the dead server was left");
  });

  test("a silent server fails its call at the tool timeout and is killed with its grandchildren; the other server answers at once", async () => {
    const pids = dir.file("silent.pids");
    const config = writeMcpConfig(dir.file("mcp.json"), {
      quiet: faultEntry("quiet", { FAULT_PID_FILE: pids, FAULT_SPAWN: "1" }),
      other: faultEntry("other"),
    });
    let leftWhileRunning: Promise<number[]> = Promise.resolve([]);
    await withLlm((_r, index) => {
      if (index === 0) return { toolCalls: [call("quiet__silent"), call("other__echo", { text: "fast" })] };
      leftWhileRunning = goneWithin(pidsIn(pids));
      return { text: "done", pauseMs: 3000 };
    }, async (llm) => {
      const run = await runCli(
        ["run", "--json", "--mcp-config", config, "wait"],
        llmEnv(llm, {
          SPROUT_AGENT_TOOL_TIMEOUT_SECS: "2",
        }),
        { cwd: dir.path },
      );
      assert.equal(run.code, 0, run.stderr);
      const silent = endOf(run, "quiet__silent");
      assert.equal(silent["ok"], false);
      assert.match(String(silent["output"]), /Tool "quiet__silent" timed out after 2 s; server "quiet" was stopped/);
      assert.ok(Number(silent["durationMs"]) >= 1900 && Number(silent["durationMs"]) < 6000);
      const echo = endOf(run, "other__echo");
      assert.equal(echo["ok"], true);
      assert.ok(Number(echo["durationMs"]) < 1500, `the other server answered at once (${echo["durationMs"]} ms)`);
    });
    assert.equal(pidsIn(pids).length, 2);
    assert.deepEqual(await leftWhileRunning, []);
  });

  test("C10 a server silent from the start is a warning after the init timeout, naming it; the others work; its processes are gone", async () => {
    const pids = dir.file("mute.pids");
    const config = writeMcpConfig(dir.file("mcp.json"), {
      mute: faultEntry("mute", { FAULT_PID_FILE: pids, FAULT_MUTE: "1", FAULT_SPAWN: "1" }),
      other: faultEntry("other"),
    });
    let leftWhileRunning: Promise<number[]> = Promise.resolve([]);
    await withLlm((_r, index) => {
      if (index === 0) {
        leftWhileRunning = goneWithin(pidsIn(pids));
        return { toolCalls: [call("other__echo", { text: "works" })], pauseMs: 3000 };
      }
      return { text: "done" };
    }, async (llm) => {
      const run = await runCli(
        ["run", "--json", "--mcp-config", config, "start"],
        llmEnv(llm, {
          SPROUT_AGENT_MCP_INIT_TIMEOUT_SECS: "3",
        }),
        { cwd: dir.path },
      );
      assert.equal(run.code, 0, run.stderr);
      const warning = eventsOf(run, "warning").map((w) => String(w["message"])).find((m) => m.includes('"mute"'));
      assert.match(String(warning), /timed out after 3 s/);
      assert.equal(endOf(run, "other__echo")["ok"], true);
      const tools = (llm.requests[0]!.body["tools"] as Array<{ name: string }>).map((t) => t.name);
      assert.ok(!tools.some((t) => t.startsWith("mute__")));
    });
    assert.ok(pidsIn(pids).length >= 2, "the server (started once, silent on the probe) and its grandchild");
    assert.deepEqual(await leftWhileRunning, []);
  });

  test("C12 a server that changes its tool list and notifies: the next request lists the new tools, the removed one is unknown", async () => {
    const config = writeMcpConfig(dir.file("mcp.json"), { chg: faultEntry("chg") });
    const turns: FakeTurn[] = [
      { toolCalls: [call("chg__change")] },
      { toolCalls: [call("chg__echo", { text: "gone?" }), call("chg__added", { text: "new" })] },
      { text: "done" },
    ];
    await withLlm(turns, async (llm) => {
      const run = await runCli(["run", "--json", "--mcp-config", config, "change"], llmEnv(llm), { cwd: dir.path });
      assert.equal(run.code, 0, run.stderr);
      const tools = (llm.requests[1]!.body["tools"] as Array<{ name: string }>).map((t) => t.name);
      assert.ok(
        tools.includes("chg__added") && !tools.includes("chg__echo") && !tools.some((t) => t.includes("_Stop")),
      );
      assert.match(String(endOf(run, "chg__echo")["output"]), /unknown tool: chg__echo/);
      assert.equal(endOf(run, "chg__added")["output"], "chg added: new");
    });
  });
});

describe("G2 no server can hang the agent over HTTP", () => {
  test("a server that forgets its sessions (404) is initialised again and the call retried; a killed server fails its calls at once; the other keeps working", async () => {
    const log = dir.file("web.log");
    const web = await startFaultHttp({ FAULT_NAME: "web", FAULT_LOG: log });
    try {
      const config = writeMcpConfig(dir.file("mcp.json"), {
        web: { type: "http", url: web.url },
        other: faultEntry("other"),
      });
      const turns: FakeTurn[] = [
        { toolCalls: [call("web__echo", { text: "first" })] },
        { toolCalls: [call("web__forget")] },
        { toolCalls: [call("web__echo", { text: "after 404" }), call("web__trickle")] },
      ];
      await withLlm((_r, index) => {
        if (index === 3) {
          void web.stop(); // SIGKILL now: the server is dead for the next calls
          return { toolCalls: [call("web__echo", { text: "dead" }), call("other__echo", { text: "alive" })] };
        }
        return turns[index] ?? { text: "done" };
      }, async (llm) => {
        const run = await runCli(["run", "--json", "--mcp-config", config, "web"], llmEnv(llm), { cwd: dir.path });
        assert.equal(run.code, 0, run.stderr);
        assert.equal(endOf(run, "web__echo", 1)["output"], "web echo: after 404");
        assert.equal(endOf(run, "web__trickle")["output"], "trickled ✓ 世界");
        assert.ok(logOf(log).some((e) => e.method === "http/404"), "the server did answer 404 once");
        assert.equal(logOf(log).filter((e) => e.method === "initialize").length, 2, "initialised again after the 404");
        assert.ok(eventsOf(run, "warning").some((w) => /lost session/.test(String(w["message"]))));
        const dead = endOf(run, "web__echo", 2);
        assert.equal(dead["ok"], false);
        assert.match(String(dead["output"]), /server "web"/);
        assert.ok(Number(dead["durationMs"]) < 5000, `a dead HTTP server fails at once (${dead["durationMs"]} ms)`);
        assert.equal(endOf(run, "other__echo")["output"], "other echo: alive");
      });
    } finally {
      await web.stop();
    }
  });
});

// Each test has its own configuration, pid files, fake LLM and processes: three run at once.
describe("G2 no process outlives the agent (children and grandchildren)", { concurrency: 3 }, () => {
  /** Two servers: one stubborn (ignores stdin EOF and SIGTERM) with a grandchild from the start, one that spawns two more mid-session. */
  function setup(tag: string) {
    const a = dir.file(`${tag}-a.pids`);
    const b = dir.file(`${tag}-b.pids`);
    const config = writeMcpConfig(dir.file(`${tag}-mcp.json`), {
      a: faultEntry("a", { FAULT_PID_FILE: a, FAULT_SPAWN: "1", FAULT_STUBBORN: "1" }),
      b: faultEntry("b", { FAULT_PID_FILE: b }),
    });
    return { config, pidFiles: [a, b] };
  }

  test("on normal exit", async () => {
    const { config, pidFiles } = setup("exit");
    await withLlm([{ toolCalls: [call("b__spawn", { count: 2 })] }, { text: "done" }], async (llm) => {
      const run = await runCli(["run", "--json", "--mcp-config", config, "go"], llmEnv(llm), { cwd: dir.path });
      assert.equal(run.code, 0, run.stderr);
    });
    assert.equal(pidFiles.flatMap(pidsIn).length, 5);
    assert.deepEqual(await goneWithin(pidFiles.flatMap(pidsIn)), []);
    assert.deepEqual(survivors(...pidFiles), []);
  });

  for (const [sig, code] of [["SIGTERM", 143], ["SIGINT", 130]] as const) {
    test(`on ${sig} during a tool call: exit ${code}, stop reason cancelled`, async () => {
      const { config, pidFiles } = setup(sig);
      const turns: FakeTurn[] = [{ toolCalls: [call("b__spawn", { count: 2 })] }, {
        toolCalls: [call("a__slow", { ms: 30_000 })],
      }];
      await withLlm(turns, async (llm) => {
        let signalledAt = 0;
        const run = await runCli(["run", "--json", "--mcp-config", config, "go"], llmEnv(llm), {
          cwd: dir.path,
          onLine(line, signal) {
            if (line.includes('"tool-start"') && line.includes("a__slow")) {
              setTimeout(() => {
                signalledAt = Date.now();
                signal(sig);
              }, 200);
            }
          },
        });
        assert.equal(run.code, code, run.stderr);
        assert.equal(run.events.at(-1)!["stopReason"], "cancelled");
        assert.ok(signalledAt > 0 && Date.now() - signalledAt < 10_000);
      });
      assert.equal(pidFiles.flatMap(pidsIn).length, 5);
      assert.deepEqual(await goneWithin(pidFiles.flatMap(pidsIn)), []);
      assert.deepEqual(survivors(...pidFiles), []);
    });
  }

  test("on SIGTERM while a server is still starting (silent, 30 s init timeout): exit 143 at once", async () => {
    const pids = dir.file("starting.pids");
    const config = writeMcpConfig(dir.file("starting-mcp.json"), {
      slowstart: faultEntry("slowstart", { FAULT_PID_FILE: pids, FAULT_MUTE: "1", FAULT_SPAWN: "1" }),
    });
    await withLlm([], async (llm) => {
      let signalledAt = 0;
      const run = await runCli(["run", "--json", "--mcp-config", config, "go"], llmEnv(llm), {
        cwd: dir.path,
        onStart(signal) {
          // Once the server and its grandchild run (the agent is waiting on its handshake).
          void waitFor(() => pidsIn(pids).length >= 2, 20_000).then(() =>
            setTimeout(() => {
              signalledAt = Date.now();
              signal("SIGTERM");
            }, 300)
          );
        },
      });
      assert.equal(run.code, 143, run.stderr);
      assert.ok(signalledAt > 0);
      assert.ok(Date.now() - signalledAt < 10_000, `exited ${Date.now() - signalledAt} ms after the signal`);
      assert.equal(llm.requests.length, 0);
    });
    assert.deepEqual(await goneWithin(pidsIn(pids)), []);
    assert.deepEqual(survivors(pids), []);
  });

  for (const how of ["stdin EOF", "SIGTERM"] as const) {
    test(`ACP: on ${how} during a tool call, the agent exits 0 and every server process is gone`, async () => {
      const pidFile = dir.file(`acp-${how.replace(" ", "-")}.pids`);
      await withLlm([{ toolCalls: [call("fx__slow", { ms: 30_000 })] }, { text: "unused" }], async (llm) => {
        const agent = spawnAgent(llmEnv(llm));
        try {
          await agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
          const entry = faultEntry("fx", { FAULT_PID_FILE: pidFile, FAULT_SPAWN: "2", FAULT_STUBBORN: "1" }) as {
            command: string;
            args: string[];
            env: Record<string, string>;
          };
          const created = await agent.request("session/new", {
            cwd: dir.path,
            mcpServers: [{
              name: "fx",
              command: entry.command,
              args: entry.args,
              env: Object.entries(entry.env).map(([name, value]) => ({ name, value })),
            }],
          });
          const sessionId = created.result.sessionId as string;
          void agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "go" }] }).catch(() => {});
          await agent.waitFor((m) => m.method === "session/update" && m.params?.update?.sessionUpdate === "tool_call");
          const at = Date.now();
          if (how === "stdin EOF") agent.child.stdin.end();
          else process.kill(agent.child.pid!, "SIGTERM");
          const code = await within(agent.exited, 15_000);
          assert.equal(code, 0, agent.stderr());
          assert.ok(Date.now() - at < 15_000);
        } finally {
          agent.child.kill("SIGKILL");
        }
      });
      assert.equal(pidsIn(pidFile).length, 3);
      assert.deepEqual(await goneWithin(pidsIn(pidFile)), []);
      assert.deepEqual(survivors(pidFile), []);
    });
  }
});
