/**
 * Subagents (SPEC section 13): a parent hands two tasks to two subagents in one response; they
 * run at once, each with a fresh history, its own instructions and tools (from the agent files
 * in `.sprout-agent/agents/` beside this file) and its own hooks; the parent gets both reports.
 *
 *     npx tsx examples/subagents/run.ts        # or: bun examples/subagents/run.ts
 *
 * Offline by default: a small model that answers by the system prompt it is sent (the parent
 * delegates, the reviewer reports, the tester plans). Set SPROUT_AGENT_PROVIDER (with
 * ANTHROPIC_API_KEY and ANTHROPIC_MODEL, or OPENAI_COMPAT_*) to ask a real model instead.
 *
 * In-process hooks count their calls per agent (`ctx.agent` is absent for the parent): the
 * parent's `_Stop` runs once, each child's `_SubagentStart` and `_SubagentStop` once, and the
 * reviewer's `_SubagentStop` objects once: its closing answer is added to its report, never put
 * in its place.
 * @module
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import { type AgentEvent, agentOptionsFromEnv, createAgent, loadSubagentFiles, type Model } from "../../mod.ts";

const here = new URL(".", import.meta.url).pathname;

/** The offline model: it answers the parent and each subagent by the system prompt it is sent. */
const offline: Model = {
  name: "offline",
  complete(request) {
    const say = (text: string) => {
      request.onTextDelta?.(text);
      return Promise.resolve({ text, toolCalls: [], stop: "end_turn" as const });
    };
    const seen = JSON.stringify(request.history);
    if (request.system.startsWith("You review code.")) {
      return say(seen.includes("Name the line") ? "Each problem above names its line." : "line 3: divides by zero");
    }
    if (request.system.startsWith("You plan tests.")) return say("a test with an empty list\na test with one item");
    if (request.history.some((i) => i.role === "tool")) {
      return say("Review and test plan are in: fix line 3, then add the two tests.");
    }
    return Promise.resolve({
      text: "",
      stop: "tool_use" as const,
      toolCalls: [
        { id: "call_review", name: "subagent_reviewer", arguments: { task: "Review stats.ts" } },
        { id: "call_tests", name: "subagent_tester", arguments: { task: "mean() now rejects an empty list" } },
      ],
    });
  },
};

const { definitions, warnings } = await loadSubagentFiles({ cwd: here, env: {} });
for (const warning of warnings) console.error(`warning: ${warning}`);
const counts: Record<string, number> = {};
const count = (hook: string, agent: string | undefined) => {
  const key = `${hook} ${agent ?? "parent"}`;
  counts[key] = (counts[key] ?? 0) + 1;
};
const real = process.env["SPROUT_AGENT_PROVIDER"] !== undefined;
const agent = await createAgent({
  ...(real ? agentOptionsFromEnv(process.env, { readFile: (path) => readFileSync(path, "utf8") }) : { model: offline }),
  subagents: definitions,
  sessionStore: false,
  hooks: {
    audit: {
      _Stop: (ctx) => (count("_Stop", ctx.agent?.name), ""),
      _SubagentStart: (ctx) => (count("_SubagentStart", ctx.agent?.name), ""),
      _SubagentStop: (ctx) => {
        count("_SubagentStop", ctx.agent?.name);
        return ctx.agent?.name === "reviewer" && ctx.rejectionsUsed === 0 ? "Name the line of each problem." : "";
      },
    },
  },
});
/** A child's tool calls and answers, indented under the parent's call. */
const show = (event: AgentEvent, indent = "  "): void => {
  if (event.type !== "subagent") return;
  const inner = event.event;
  if (inner.type === "tool-end") console.error(`${indent}[${event.name}] ${inner.ok ? "✓" : "✗"} ${inner.name}`);
  if (inner.type === "hook" && inner.outcome === "objection") {
    console.error(`${indent}[${event.name}] ${inner.hook} objected: ${inner.text}`);
  }
  show(inner, `${indent}  `);
};
try {
  const run = agent.prompt("Review stats.ts and plan its tests.");
  for await (const event of run) {
    if (event.type === "text-delta") process.stdout.write(event.text);
    else if (event.type === "tool-end") console.error(`✓ ${event.name} → ${event.output.split("\n").join(" / ")}`);
    else show(event);
  }
  const result = await run.result;
  process.stdout.write("\n");
  console.error(`■ ${result.stopReason}; hook calls: ${JSON.stringify(counts)}`);
} finally {
  await agent.close();
}
