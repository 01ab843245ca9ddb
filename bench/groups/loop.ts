/**
 * Group `loop`: one prompt of N rounds (1000; each round one tool call, the last one ends the
 * turn) through the agent (`createAgent` + `prompt`, events consumed) against a minimal
 * hand-written loop (`model.complete`, push the reply, call the tool, push the result). Both
 * use the same in-memory model (it answers at once, so only loop overhead is timed) and the
 * same tool, `todo`, answered by a hand-written in-process MCP endpoint through our MCP client. Rows per runtime: the whole prompt, the last 100 rounds (history is longest there:
 * any per-round cost that grows with the history shows), and the agent's own last 100 rounds
 * against its first 100. Each runtime runs this in a child (`bench/child.ts loop`).
 *
 * When `bench/loop.ts` (the loop's own bench, `runLoopBench`) is in the tree, its measurement
 * replaces this file's: see `sharedLoopBench` below.
 * @module
 */
import { existsSync } from "node:fs";
import { createAgent } from "../../lib/agent/agent.ts";
import { connectMcp } from "../../lib/mcp/client.ts";
import { LEGACY_PROTOCOL_VERSION, type McpServerConfig } from "../../lib/mcp/types.ts";
import type { HistoryItem, LlmRequest, LlmResponse, Model } from "../../lib/conversation/types.ts";
import { type Group, inRuntime, now, type Row, row } from "../harness.ts";

/** The timings of one N-round prompt, in ms. */
export interface LoopTimes {
  totalMs: number;
  first100Ms: number;
  last100Ms: number;
}

const SERVER: McpServerConfig = {
  name: "todo",
  transport: { type: "http", url: "http://127.0.0.1/mcp", headers: {} },
  protocol: "legacy",
};

/**
 * A `fetch` that answers MCP (legacy era, JSON responses) in-process with one tool, `todo`,
 * that returns a fixed line: the cheapest real MCP round trip through our client, so the
 * timings are the loops' own and not a server's.
 */
function inProcessFetch(): typeof fetch {
  const json = (body: unknown) =>
    new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
  const respond = (init?: RequestInit): Response => {
    const message = JSON.parse(String(init?.body)) as { id?: number | string; method: string };
    if (message.id === undefined) return new Response(null, { status: 202 });
    const answer = (result: unknown) => json({ jsonrpc: "2.0", id: message.id, result });
    switch (message.method) {
      case "initialize":
        return answer({
          protocolVersion: LEGACY_PROTOCOL_VERSION,
          capabilities: { tools: {} },
          serverInfo: { name: "bench-tool", version: "1.0.0" },
        });
      case "tools/list":
        return answer({ tools: [{ name: "todo", description: "Reads the list", inputSchema: { type: "object" } }] });
      case "tools/call":
        return answer({ content: [{ type: "text", text: "No todo items." }] });
      default:
        return json({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "Method not found" } });
    }
  };
  return ((_url: string | URL | Request, init?: RequestInit) => Promise.resolve(respond(init))) as typeof fetch;
}

/** A model that calls `tool` for `rounds - 1` rounds, then ends the turn; it stamps each request. */
function model(rounds: number, tool: string, stamps: number[]): Model {
  let calls = 0;
  return {
    name: "bench:loop",
    complete(request: LlmRequest): Promise<LlmResponse> {
      stamps.push(now());
      calls++;
      if (calls >= rounds) return Promise.resolve({ text: "done", toolCalls: [], stop: "end_turn" });
      if (request.tools.length > 0 && !request.tools.some((t) => t.name === tool)) {
        throw new Error(`Tool "${tool}" is not offered: ${request.tools.map((t) => t.name).join(", ")}`);
      }
      return Promise.resolve({
        text: "",
        toolCalls: [{ id: `call_${calls}`, name: tool, arguments: {} }],
        stop: "tool_use",
      });
    },
  };
}

function times(stamps: readonly number[], end: number): LoopTimes {
  const n = stamps.length;
  const k = Math.min(100, n - 1);
  return { totalMs: end - stamps[0]!, first100Ms: stamps[k]! - stamps[0]!, last100Ms: end - stamps[n - k]! };
}

async function agentLoop(rounds: number, fetch: typeof globalThis.fetch): Promise<LoopTimes> {
  const stamps: number[] = [];
  const agent = await createAgent({
    model: model(rounds, "todo__todo", stamps),
    mcpServers: [SERVER],
    fetch,
    maxRounds: rounds + 10,
    maxContextTokens: 100_000_000,
  });
  try {
    const run = agent.prompt("Work through the list.");
    for await (const _event of run) { /* consumed, as the CLI would */ }
    const result = await run.result;
    const end = now();
    if (result.stopReason !== "end_turn" || stamps.length !== rounds) {
      throw new Error(`Agent stopped with ${result.stopReason} after ${stamps.length} rounds`);
    }
    return times(stamps, end);
  } finally {
    await agent.close();
  }
}

async function minimalLoop(rounds: number, fetch: typeof globalThis.fetch): Promise<LoopTimes> {
  const stamps: number[] = [];
  const conn = await connectMcp(SERVER, { sessionId: "bench", fetch });
  try {
    const tools = (await conn.listTools()).map((t) => ({
      name: `todo__${t.name}`,
      description: t.description ?? "",
      inputSchema: t.inputSchema as Record<string, unknown>,
    }));
    const m = model(rounds, "todo__todo", stamps);
    const history: HistoryItem[] = [{ role: "user", text: "Work through the list." }];
    while (true) {
      const reply = await m.complete({ system: "", history, tools, maxOutputTokens: 1024 });
      history.push({ role: "assistant", text: reply.text, toolCalls: reply.toolCalls });
      if (reply.toolCalls.length === 0) break;
      for (const call of reply.toolCalls) {
        const result = await conn.callTool(call.name.slice("todo__".length), call.arguments);
        history.push({ role: "tool", toolCallId: call.id, content: result.content as never, isError: false });
      }
    }
    return times(stamps, now());
  } finally {
    await conn.close();
  }
}

/** One row of the group before the runtime is prefixed to its case. */
export interface LoopCase {
  case: string;
  value: number;
  baseline: number;
  unit: string;
}

/** The figures of i11-loop's `bench/loop.ts` (`runLoopBench`) that become rows. */
interface SharedLoopPhase {
  agent: { totalMs: number; lastMs: number; firstMedianUs: number; lastMedianUs: number };
  minimal: { totalMs: number; lastMs: number };
}

/**
 * When `bench/loop.ts` (the loop's own bench, issue 11) is in the tree, its `runLoopBench`
 * is the measurement: `serialised` phase (the model serialises each request, as a wire
 * client does) for the whole prompt, `bare` phase for the last 100 rounds and the growth of
 * the median round. Undefined when the file is absent.
 */
async function sharedLoopBench(rounds: number): Promise<LoopCase[] | undefined> {
  const file = new URL("../loop.ts", import.meta.url);
  if (!existsSync(file)) return undefined;
  const mod = await import(file.href) as {
    runLoopBench?: (rounds: number) => Promise<{ serialised: SharedLoopPhase; bare: SharedLoopPhase }>;
  };
  if (mod.runLoopBench === undefined) return undefined;
  const { serialised, bare } = await mod.runLoopBench(rounds);
  return [
    {
      case: `${rounds}-round prompt vs minimal loop (requests serialised)`,
      value: serialised.agent.totalMs,
      baseline: serialised.minimal.totalMs,
      unit: "ms",
    },
    {
      case: "last tenth of the rounds vs minimal loop's",
      value: bare.agent.lastMs,
      baseline: bare.minimal.lastMs,
      unit: "ms",
    },
    {
      case: "agent's median round, last tenth vs first tenth",
      value: bare.agent.lastMedianUs,
      baseline: bare.agent.firstMedianUs,
      unit: "µs",
    },
  ];
}

/**
 * The in-process part: `bench/loop.ts`'s measurement when present, else this file's own (a
 * short warm-up of each, then the minimal loop and the agent back to back).
 */
export async function loopInProcess(options: { rounds: number }): Promise<LoopCase[]> {
  const shared = await sharedLoopBench(options.rounds);
  if (shared !== undefined) return shared;
  const fetch = inProcessFetch();
  const warmup = Math.max(10, Math.round(options.rounds / 20));
  await minimalLoop(warmup, fetch);
  await agentLoop(warmup, fetch);
  const minimal = await minimalLoop(options.rounds, fetch);
  const agent = await agentLoop(options.rounds, fetch);
  return [
    {
      case: `${options.rounds}-round prompt vs minimal loop`,
      value: agent.totalMs,
      baseline: minimal.totalMs,
      unit: "ms",
    },
    { case: "last 100 rounds vs minimal loop's", value: agent.last100Ms, baseline: minimal.last100Ms, unit: "ms" },
    {
      case: "agent's last 100 rounds vs its first 100",
      value: agent.last100Ms,
      baseline: agent.first100Ms,
      unit: "ms",
    },
  ];
}

/** The `loop` group. */
export const loopGroup: Group = {
  name: "loop",
  title: "one N-round prompt: the agent vs a minimal loop",
  async run({ quick, runtimes, log }) {
    const rows: Row[] = [];
    const rounds = quick ? 200 : 1000;
    for (const which of runtimes) {
      log(`loop: ${which}`);
      for (const c of await inRuntime<LoopCase[]>(which, "loop", { rounds })) {
        rows.push(row("loop", `${which}: ${c.case}`, c.value, c.baseline, c.unit));
      }
    }
    return rows;
  },
};
