/**
 * Guarantee 1 of issue 6, no hook can trap the agent: every hook fault of the fault-injection
 * server (tests/fixtures/faults/server.mjs) at once, through `cli.ts run --json` under the
 * current runtime against the recording fake LLM. Each run also checks guarantee 4 (no request
 * rejected by the fake). SPEC sections 4, 7 and 8.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { FakeLlm, FakeTurn, RecordedRequest } from "../lib/testing/fake-llm.ts";
import { MAX_HOOK_TEXT_BYTES } from "../lib/hooks/runner.ts";
import {
  alive,
  eventsOf,
  faultEntry,
  llmEnv,
  logOf,
  pidsIn,
  type Run,
  runCli,
  sentText,
  startFaultHttp,
  survivors,
  tempDir,
  waitFor,
  withLlm,
  writeMcpConfig,
} from "./helpers/faults.ts";
import type { HttpFixture } from "./fixtures/mcp/helpers.ts";

const HOOK_TIMEOUT_MS = 1500;
/** Scheduling slack on a loaded 2-core machine; the bound itself is the hook timeout. */
const SLACK_MS = 2000;

const dir = tempDir();
after(() => dir.cleanup());

type Hook = Record<string, unknown>;
const hooksOf = (run: Run, name: string): Hook[] => eventsOf(run, "hook").filter((e) => e["hook"] === name);
const byServer = (events: Hook[], server: string) => events.filter((e) => e["server"] === server);

describe("G1 no _Stop fault can trap the agent (every fault at once, stdio and HTTP)", () => {
  // Servers, in configuration order. Each lists only its hooks (and `pages` its 120 tools).
  const faults: Record<string, Record<string, string>> = {
    pages: { FAULT_STOP: "empty", FAULT_TOOLS: "120", FAULT_PAGE_SIZE: "50" }, // C11: hooks on page 3
    delayed: {
      FAULT_STOP: "delay",
      FAULT_STOP_DELAY_MS: "200",
      FAULT_STOP_TEXT: "finish the docs",
      FAULT_STOP_COUNT: "2",
    },
    late: {
      FAULT_STOP: "delay",
      FAULT_STOP_DELAY_MS: "4000",
      FAULT_STOP_TEXT: "LATE-REPLY-MUST-NOT-APPEAR",
      FAULT_SPAWN: "1",
    },
    never: { FAULT_STOP: "never", FAULT_SPAWN: "2" },
    iserror: { FAULT_STOP: "iserror" },
    blank: { FAULT_STOP: "blank" },
    image: { FAULT_STOP: "image" },
    huge: { FAULT_STOP: "huge", FAULT_STOP_COUNT: "1" },
    rpcerror: { FAULT_STOP: "rpc-error" },
    crash: { FAULT_STOP: "crash", FAULT_SPAWN: "1" },
  };
  const pidFiles: Record<string, string> = {};
  const logs: Record<string, string> = {};
  let http: HttpFixture;
  let httpLog: string;
  let run: Run;
  let requests: RecordedRequest[] = [];
  let aliveAfterKill: number[] = [];
  let killCheck: Promise<void> = Promise.resolve();

  before(async () => {
    const servers: Record<string, Record<string, unknown>> = {};
    for (const [name, env] of Object.entries(faults)) {
      pidFiles[name] = dir.file(`${name}.pids`);
      logs[name] = dir.file(`${name}.log`);
      servers[name] = faultEntry(name, {
        FAULT_NO_TOOLS: "1",
        FAULT_PID_FILE: pidFiles[name]!,
        FAULT_LOG: logs[name]!,
        ...env,
      });
    }
    httpLog = dir.file("http.log");
    http = await startFaultHttp({ FAULT_NAME: "web", FAULT_STOP: "never", FAULT_NO_TOOLS: "1", FAULT_LOG: httpLog });
    servers["web"] = { type: "http", url: http.url };
    const config = writeMcpConfig(dir.file("mcp.json"), servers);
    // Round 1 ends the turn: _Stop #1 (objections from `delayed` and `huge`, every other fault).
    // Round 2 calls a tool; round 3 ends the turn: _Stop #2 is the second consecutive timeout of
    // `late`, `never` and `web`, which are killed, and `delayed` objects again, so round 4 is
    // requested while the agent still runs: the fake looks at the processes then. Round 4 ends
    // the turn right after an objection, so the stop is accepted without _Stop (SPEC 7.1).
    const turns: FakeTurn[] = [
      { text: "All done, I think." },
      { text: "Using a tool first.", toolCalls: [{ name: "pages__t7", arguments: { text: "still working" } }] },
      { text: "Done now." },
    ];
    await withLlm((_request, index) => {
      if (index === 3) {
        // The agent waits on this (paused) response: every process of the killed servers must
        // be gone while it still runs. CASES C04's 1 s is asserted where one server is killed
        // (tests/hooks.test.ts, tests/cases.test.ts); here, with every fault at once through the
        // CLI on a machine running three runners, the kill itself can start late, so the wait
        // allows 2.5 s, as tests/reliability-servers.test.ts does, and the response is held
        // longer than that, so the agent's exit cannot do the killing.
        const pids = ["late", "never", "crash"].flatMap((s) => pidsIn(pidFiles[s]!));
        killCheck = waitFor(() => !pids.some(alive), 2500).then(() => {
          aliveAfterKill = pids.filter(alive);
        });
        return { text: "Really done.", pauseMs: 3000 };
      }
      return turns[index] ?? { status: 500 };
    }, async (llm) => {
      run = await runCli(
        ["run", "--json", "--mcp-config", config, "write the docs"],
        llmEnv(llm, {
          MCP_HOOK_SERVERS: "*",
          SPROUT_AGENT_HOOK_TIMEOUT_MS: String(HOOK_TIMEOUT_MS),
        }),
        { cwd: dir.path },
      );
      requests = [...llm.requests];
      await killCheck;
    }); // withLlm asserts guarantee 4 on the way out
  });
  after(async () => {
    await http.stop();
  });

  test("the run ends normally: exit 0, end_turn, the tool still works after the faults", () => {
    assert.equal(run.code, 0, run.stderr);
    const result = run.events.at(-1)!;
    assert.equal(result["type"], "result");
    assert.equal(result["stopReason"], "end_turn");
    const tool = eventsOf(run, "tool-end");
    assert.equal(tool.length, 1);
    assert.equal(tool[0]!["ok"], true);
    assert.match(String(tool[0]!["output"]), /pages t7: still working/);
  });

  test("C11 hooks on page 3 of a paged list are hidden from the LLM and called", () => {
    const tools = (requests[0]!.body["tools"] as Array<{ name: string }>).map((t) => t.name);
    assert.equal(tools.filter((t) => t.startsWith("pages__t")).length, 120);
    assert.ok(!tools.some((t) => t.includes("_Stop") || t.includes("_PostCompact")));
    assert.ok(byServer(hooksOf(run, "_Stop"), "pages").length >= 2);
  });

  test("each fault is classified on the first _Stop: objections for text, no objection for every fault", () => {
    const first = new Map<string, Hook>();
    for (const e of hooksOf(run, "_Stop")) if (!first.has(String(e["server"]))) first.set(String(e["server"]), e);
    const outcome = (s: string) => first.get(s)?.["outcome"];
    assert.equal(outcome("delayed"), "objection");
    assert.equal(outcome("huge"), "objection");
    assert.equal(outcome("late"), "timeout");
    assert.equal(outcome("never"), "timeout");
    assert.equal(outcome("web"), "timeout");
    assert.equal(outcome("iserror"), "error");
    assert.equal(outcome("rpcerror"), "error");
    assert.equal(outcome("crash"), "error");
    assert.equal(outcome("blank"), "none");
    assert.equal(outcome("image"), "none");
    assert.equal(outcome("pages"), "none");
    const warnings = eventsOf(run, "warning").map((w) => String(w["message"]));
    for (
      const [server, pattern] of [
        ["iserror", /returned an error: _Stop is broken: test runner not found/],
        ["rpcerror", /_Stop crashed inside the handler/],
        ["crash", /exited \(code 7\)/],
        ["blank", /only whitespace/],
        ["image", /no text, only other content/],
        ["late", /timed out after 1\.5 s \(1\/2\)/],
      ] as const
    ) {
      assert.ok(
        warnings.some((w) => w.includes(`"${server}"`) && pattern.test(w)),
        `a warning names ${server}: ${pattern}`,
      );
    }
  });

  test("the stop is decided within the hook timeout: hooks run concurrently, each bounded", () => {
    for (const e of hooksOf(run, "_Stop")) {
      const ms = Number(e["durationMs"]);
      assert.ok(ms <= HOOK_TIMEOUT_MS + SLACK_MS, `${e["server"]} took ${ms} ms`);
      if (e["outcome"] === "timeout") assert.ok(ms >= HOOK_TIMEOUT_MS - 100, `${e["server"]} timed out at ${ms} ms`);
    }
    // 2 stop decisions with timeouts, 3 short rounds and start-up: far below two sequential waits per server.
    assert.ok(run.ms < 30_000, `the run took ${run.ms} ms`);
  });

  test("objections are injected as JSON, the huge one capped at 16 KiB; late replies never reach the LLM", () => {
    const second = JSON.stringify(requests[1]!.body["messages"]);
    assert.ok(
      second.includes(JSON.stringify(JSON.stringify({ hook: "_Stop", server: "delayed", text: "finish the docs" }))),
    );
    const huge = hooksOf(run, "_Stop").find((e) => e["server"] === "huge" && e["outcome"] === "objection")!;
    assert.ok(new TextEncoder().encode(String(huge["text"])).length <= MAX_HOOK_TEXT_BYTES);
    assert.ok(String(huge["text"]).startsWith("HUGE-START") && String(huge["text"]).endsWith("[truncated]"));
    assert.ok(second.includes(JSON.stringify(JSON.stringify({ hook: "_Stop", server: "huge", text: huge["text"] }))));
    assert.ok(second.length < 40_000, "the 1 MB objection reached the LLM capped");
    const all = requests.map((r) => JSON.stringify(r.body["messages"])).join("\n");
    assert.doesNotMatch(all, /LATE-REPLY-MUST-NOT-APPEAR/);
    assert.equal(run.events.at(-1)!["objections"], 2);
  });

  test("C04 the second consecutive timeout kills the hook server: no process left, grandchildren included", () => {
    for (const server of ["late", "never", "web"]) {
      const outcomes = byServer(hooksOf(run, "_Stop"), server).map((e) => e["outcome"]);
      assert.deepEqual(outcomes, ["timeout", "timeout"], server);
      const last = byServer(hooksOf(run, "_Stop"), server).at(-1)!;
      assert.match(String(last["message"]), /\(2\/2\); server killed/);
    }
    assert.equal(pidsIn(pidFiles["late"]!).length, 2, "late and its grandchild wrote their pids");
    assert.equal(pidsIn(pidFiles["never"]!).length, 3);
    assert.deepEqual(aliveAfterKill, [], "while the agent still ran: no process of late, never or crashed is left");
    // A crashed hook server's grandchild must not outlive it either.
    assert.deepEqual(survivors(...Object.values(pidFiles)), [], "no process of any fault server outlives the agent");
  });

  test("an abandoned hook call is cancelled with notifications/cancelled naming its request", () => {
    for (const log of [logs["never"]!, httpLog]) {
      const entries = logOf(log);
      const calls = entries.filter((e) => e.method === "tools/call" && e.name === "_Stop").map((e) => e.id);
      const cancelled = entries.filter((e) => e.method === "notifications/cancelled").map((e) => e.requestId);
      assert.ok(calls.length >= 1 && cancelled.length >= 1, log);
      assert.equal(cancelled[0], calls[0]);
    }
  });

  test("a crashed hook server is dead: not called again, and the run goes on", () => {
    assert.equal(byServer(hooksOf(run, "_Stop"), "crash").length, 1);
    assert.ok(
      hooksOf(run, "_Stop").filter((e) => e["server"] === "iserror").length >= 2,
      "error results do not stop later calls",
    );
    assert.match(sentText({ requests } as FakeLlm), /write the docs/);
  });
});

describe("G1 no _PostCompact fault can trap the agent", () => {
  const faults: Record<string, Record<string, string>> = {
    work: {},
    delayed: {
      FAULT_POSTCOMPACT: "delay",
      FAULT_POSTCOMPACT_DELAY_MS: "200",
      FAULT_POSTCOMPACT_TEXT: "open todos: docs",
    },
    never: { FAULT_POSTCOMPACT: "never" },
    iserror: { FAULT_POSTCOMPACT: "iserror" },
    blank: { FAULT_POSTCOMPACT: "blank" },
    image: { FAULT_POSTCOMPACT: "image" },
    huge: { FAULT_POSTCOMPACT: "huge" },
    rpcerror: { FAULT_POSTCOMPACT: "rpc-error" },
    crash: { FAULT_POSTCOMPACT: "crash" },
  };

  test("every _PostCompact fault counts as nothing to inject; the text ones are injected; the run goes on", async () => {
    const servers: Record<string, Record<string, unknown>> = {};
    const pidFiles: string[] = [];
    for (const [name, env] of Object.entries(faults)) {
      const pids = dir.file(`${name}.pc.pids`);
      pidFiles.push(pids);
      servers[name] = faultEntry(name, {
        ...(name === "work" ? {} : { FAULT_NO_TOOLS: "1" }),
        FAULT_PID_FILE: pids,
        ...env,
      });
    }
    const config = writeMcpConfig(dir.file("mcp.json"), servers);
    const isSummary = (r: RecordedRequest) =>
      r.body["tools"] === undefined && JSON.stringify(r.body).includes("handoff");
    const turns: FakeTurn[] = [
      // 46000 bytes cross the 45000-token threshold alone (the fake reports 10 input tokens);
      // the fresh context, with the capped 16 KiB of "huge", stays smaller than that.
      { toolCalls: [{ name: "work__huge", arguments: { bytes: 46000 } }] },
      { toolCalls: [{ name: "work__echo", arguments: { text: "after compaction" } }] },
      { text: "finished" },
    ];
    let next = 0;
    await withLlm(
      (r) => (isSummary(r) ? { text: "SUMMARY: fill the context, then finish." } : turns[next++] ?? { status: 500 }),
      async (llm) => {
        const run = await runCli(
          ["run", "--json", "--mcp-config", config, "fill the context"],
          llmEnv(llm, {
            MCP_HOOK_SERVERS: "*",
            SPROUT_AGENT_HOOK_TIMEOUT_MS: String(HOOK_TIMEOUT_MS),
            SPROUT_AGENT_MAX_CONTEXT_TOKENS: "60000",
            SPROUT_AGENT_MAX_OUTPUT_TOKENS: "1000",
          }),
          { cwd: dir.path },
        );
        assert.equal(run.code, 0, run.stderr);
        assert.equal(run.events.at(-1)!["stopReason"], "end_turn");
        const compaction = eventsOf(run, "compaction");
        assert.equal(compaction.length, 1);
        assert.equal(compaction[0]!["mode"], "summary");
        assert.deepEqual(compaction[0]!["injected"], ["delayed", "huge"]);
        const hooks = hooksOf(run, "_PostCompact");
        const outcome = Object.fromEntries(hooks.map((e) => [e["server"], e["outcome"]]));
        assert.deepEqual(outcome, {
          delayed: "objection",
          never: "timeout",
          iserror: "error",
          blank: "none",
          image: "none",
          huge: "objection",
          rpcerror: "error",
          crash: "error",
        });
        for (const e of hooks) assert.ok(Number(e["durationMs"]) <= HOOK_TIMEOUT_MS + SLACK_MS);
        const afterCompaction = llm.requests.findIndex(isSummary) + 1;
        const fresh = JSON.stringify(llm.requests[afterCompaction]!.body["messages"]);
        assert.ok(
          fresh.includes(
            JSON.stringify(JSON.stringify({ hook: "_PostCompact", server: "delayed", text: "open todos: docs" })),
          ),
        );
        assert.ok(fresh.length < 40_000, "the 1 MB hook text was capped");
        const tools = eventsOf(run, "tool-end");
        assert.deepEqual(tools.map((t) => t["ok"]), [true, true], "the agent still works after the faults");
      },
    );
    assert.deepEqual(survivors(...pidFiles), []);
  });
});
