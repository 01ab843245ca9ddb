/**
 * The agent loop's own cost per round (issue 11): one long prompt of N rounds through
 * `AgentSession`, against the same prompt driven by a minimal hand-written loop that makes the
 * same model and tool calls. Both use the same in-process model and the same real tool
 * registry (`createRegistry`) over an in-process MCP connection, so the difference is the
 * agent's own bookkeeping: compaction estimates, history invariants, events.
 *
 * Two phases: `serialised`, where the model turns each request into JSON as a wire client
 * does (the floor both loops pay, growing with the history: compare the totals), and `bare`,
 * where the model does nothing (the loops' own cost alone: compare a round's median cost at
 * the start and at the end, which stays flat when nothing the loop does grows with the
 * history). Each timed run follows a warm-up and a full garbage collection where the runtime
 * offers one (Bun; Node with `--expose-gc`). The machine's load moves the sums a lot; the
 * medians much less.
 *
 * Run alone: `node --expose-gc --import tsx bench/loop.ts [rounds]`, `bun bench/loop.ts
 * [rounds]`, `deno run -A bench/loop.ts [rounds]`. Prints one JSON object.
 * @module
 */

import process from "node:process";
import { loadConfig } from "../lib/config/config.ts";
import { AgentSession } from "../lib/agent/loop.ts";
import { createRegistry } from "../lib/mcp/registry.ts";
import type { CallToolResult, McpConnection, McpTool, ToolRegistry } from "../lib/mcp/types.ts";
import type { HistoryItem, LlmRequest, LlmResponse, Model, ToolDef } from "../lib/conversation/types.ts";

/** One loop's figures in one phase. */
export interface LoopFigures {
  /** The whole prompt, in ms. */
  totalMs: number;
  /** The first 100 rounds (the first tenth when there are fewer than 1000), in ms. */
  firstMs: number;
  /** The last 100 rounds (the last tenth), in ms. */
  lastMs: number;
  /** The median round of the first 100, in µs: unlike the sums, untouched by a GC pause or a busy machine. */
  firstMedianUs: number;
  /** The median round of the last 100, in µs. */
  lastMedianUs: number;
}

/** One phase of {@link runLoopBench}: both loops over the same rounds. */
export interface LoopPhase {
  /** The prompt through `AgentSession`. */
  agent: LoopFigures;
  /** The same model and tool calls through the minimal loop. */
  minimal: LoopFigures;
  /** `agent.totalMs / minimal.totalMs`. */
  ratio: number;
  /** `agent.lastMs / agent.firstMs`: about 1 when a round's cost does not grow with the history. */
  agentGrowth: number;
  /** `agent.lastMedianUs / agent.firstMedianUs`. */
  agentMedianGrowth: number;
}

/** What {@link runLoopBench} measured. */
export interface LoopBenchResult {
  /** Rounds each prompt ran (the last one ends the turn without tool calls). */
  rounds: number;
  /**
   * The model serialises each request to JSON, as a wire client does: the floor both loops
   * pay, which grows with the history.
   */
  serialised: LoopPhase;
  /** The model does no work: the loops' own cost alone. */
  bare: LoopPhase;
}

const TOOL_COUNT = 12;
const RESULT_TEXT = "line of output from the fake tool, ".repeat(8);

/** An in-process MCP connection: `TOOL_COUNT` tools, each answering a fixed text. */
function fakeConnection(): McpConnection {
  const tools: McpTool[] = Array.from({ length: TOOL_COUNT }, (_, i) => ({
    name: `tool${i}`,
    description: `Fake tool number ${i}, which answers with a fixed text`,
    inputSchema: { type: "object", properties: { path: { type: "string" }, n: { type: "number" } } },
  }));
  return {
    era: "legacy",
    protocolVersion: "2025-11-25",
    serverInfo: { name: "fake", version: "1" },
    pid: undefined,
    closed: false,
    listTools: () => Promise.resolve(structuredClone(tools)),
    callTool: (name): Promise<CallToolResult> =>
      Promise.resolve({ content: [{ type: "text", text: `${name}: ${RESULT_TEXT}` }] }),
    kill() {},
    close: () => Promise.resolve(),
  };
}

/**
 * A model that asks for one tool call per round until `rounds - 1` rounds have run, then
 * ends the turn. Each request is serialised to JSON, as a wire client does with its body.
 */
function fakeModel(rounds: number, serialise: boolean): Model & { calls: number; sink: number } {
  const model = {
    name: "bench",
    calls: 0,
    sink: 0,
    complete(request: LlmRequest): Promise<LlmResponse> {
      const body = serialise
        ? JSON.stringify({
          system: request.system,
          messages: request.history,
          tools: request.tools,
          max_tokens: request.maxOutputTokens,
        })
        : "";
      model.sink += body.length;
      const n = ++model.calls;
      const usage = { inputTokens: 1000 + 100 * n, outputTokens: 20 };
      if (n >= rounds) return Promise.resolve({ text: "All done.", toolCalls: [], stop: "end_turn", usage });
      return Promise.resolve({
        text: `Step ${n}: reading the next file.`,
        toolCalls: [{ id: `call_${n}`, name: `s__tool${n % TOOL_COUNT}`, arguments: { path: `src/file${n}.ts`, n } }],
        stop: "tool_use",
        usage,
      });
    },
  };
  return model;
}

async function registry(): Promise<ToolRegistry> {
  const { registry, failures } = await createRegistry(
    [{ name: "s", transport: { type: "stdio", command: "fake", args: [], env: {} } }],
    { sessionId: "bench", env: {}, connect: () => Promise.resolve(fakeConnection()) },
  );
  if (failures.length > 0) throw new Error(failures[0]!.message);
  return registry;
}

/** Sum of `times[from..to)`. */
function sum(times: readonly number[], from: number, to: number): number {
  let total = 0;
  for (let i = Math.max(0, from); i < Math.min(times.length, to); i++) total += times[i]!;
  return total;
}

/** One prompt of `rounds` rounds through `AgentSession`; per-round times from `round-start` events. */
async function agentRun(rounds: number, serialise: boolean): Promise<{ totalMs: number; perRound: number[] }> {
  const config = loadConfig({
    SPROUT_AGENT_PROVIDER: "scripted",
    // No compaction: the bench measures the rounds, not a handoff.
    SPROUT_AGENT_MAX_CONTEXT_TOKENS: "1000000000",
  }, () => "");
  const reg = await registry();
  const session = new AgentSession({ config, model: fakeModel(rounds, serialise), registry: reg });
  const starts: number[] = [];
  const t0 = performance.now();
  const run = session.prompt("Read every file, one at a time.");
  for await (const event of run) if (event.type === "round-start") starts.push(performance.now());
  const result = await run.result;
  const end = performance.now();
  await reg.close();
  if (result.rounds !== rounds) throw new Error(`The agent ran ${result.rounds} rounds, not ${rounds}`);
  const perRound = starts.map((s, i) => (starts[i + 1] ?? end) - s);
  return { totalMs: end - t0, perRound };
}

/** The minimal loop: list tools, call the model, run its calls, append, until it stops calling. */
async function minimalRun(rounds: number, serialise: boolean): Promise<{ totalMs: number; perRound: number[] }> {
  const reg = await registry();
  const model = fakeModel(rounds, serialise);
  const history: HistoryItem[] = [];
  const perRound: number[] = [];
  const t0 = performance.now();
  history.push({ role: "user", text: "Read every file, one at a time." });
  while (true) {
    const start = performance.now();
    const tools: ToolDef[] = await reg.listTools();
    const response = await model.complete({ system: "", history, tools, maxOutputTokens: 32768 });
    history.push({ role: "assistant", text: response.text, toolCalls: response.toolCalls });
    if (response.toolCalls.length === 0) {
      perRound.push(performance.now() - start);
      break;
    }
    for (const call of response.toolCalls) {
      const outcome = await reg.callTool(call.name, call.arguments, { timeoutMs: 60_000 });
      history.push({ role: "tool", toolCallId: call.id, content: outcome.content, isError: outcome.isError });
    }
    perRound.push(performance.now() - start);
  }
  const totalMs = performance.now() - t0;
  await reg.close();
  if (perRound.length !== rounds) throw new Error(`The minimal loop ran ${perRound.length} rounds, not ${rounds}`);
  return { totalMs, perRound };
}

/** A full collection before a timed run, where the runtime offers one (Bun; Node with --expose-gc). */
function collectGarbage(): void {
  const g = globalThis as { Bun?: { gc(force: boolean): void }; gc?: () => void };
  if (g.Bun !== undefined) g.Bun.gc(true);
  else g.gc?.();
}

function median(times: readonly number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

function figures(run: { totalMs: number; perRound: number[] }, slice: number): LoopFigures {
  const n = run.perRound.length;
  return {
    totalMs: run.totalMs,
    firstMs: sum(run.perRound, 0, slice),
    lastMs: sum(run.perRound, n - slice, n),
    firstMedianUs: median(run.perRound.slice(0, slice)) * 1000,
    lastMedianUs: median(run.perRound.slice(n - slice)) * 1000,
  };
}

async function phase(rounds: number, serialise: boolean): Promise<LoopPhase> {
  // Warm-up: let the JIT see both loops before timing them.
  await agentRun(Math.min(rounds, 200), serialise);
  await minimalRun(Math.min(rounds, 200), serialise);
  const slice = rounds >= 1000 ? 100 : Math.floor(rounds / 10);
  collectGarbage();
  const minimal = figures(await minimalRun(rounds, serialise), slice);
  collectGarbage();
  const agent = figures(await agentRun(rounds, serialise), slice);
  return {
    agent,
    minimal,
    ratio: agent.totalMs / minimal.totalMs,
    agentGrowth: agent.lastMs / agent.firstMs,
    agentMedianGrowth: agent.lastMedianUs / agent.firstMedianUs,
  };
}

/**
 * Runs both loops for `rounds` rounds, each after a warm-up, twice: with a model that
 * serialises its requests and with one that does nothing.
 * @param rounds rounds per prompt, at least 10; default 1000
 * @throws {RangeError} for fewer than 10 rounds
 */
export async function runLoopBench(rounds = 1000): Promise<LoopBenchResult> {
  if (!Number.isInteger(rounds) || rounds < 10) throw new RangeError(`Cannot run the loop bench: ${rounds} rounds`);
  return { rounds, serialised: await phase(rounds, true), bare: await phase(rounds, false) };
}

if (import.meta.main ?? process.argv[1]?.endsWith("loop.ts")) {
  const rounds = Number(process.argv[2] ?? "1000");
  const result = await runLoopBench(rounds);
  // One line per phase, figures rounded to 0.01.
  console.log(JSON.stringify(result, (_, v) => typeof v === "number" ? Math.round(v * 100) / 100 : v));
}
