/**
 * The picture of docs/TRACING.md: one traced run exported over OTLP/HTTP to a receiver here,
 * written as it arrived (docs/images/trace-run.json), and drawn as a timeline
 * (docs/images/trace-run.svg; `--png` also renders docs/images/trace-run.png with headless
 * Chromium). The run: the fake Anthropic API (lib/testing/fake-llm.ts, with pauses) and an
 * official SDK v2 server with two tools and three hooks, which opens a span of its own in the
 * hook calls, under the `traceparent` of their `_meta`, exported as another service.
 *
 *     npx tsx scripts/trace-picture.ts [--png]
 * @module
 */
import { spawnSync } from "node:child_process";
import { createServer } from "node:http";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";
import { ROOT_CONTEXT, trace, type Tracer } from "@opentelemetry/api";
import { BasicTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { createAgent } from "../lib/agent/agent.ts";
import type { InProcessTransport } from "../lib/mcp/in-process.ts";
import { startFakeLlm } from "../lib/testing/fake-llm.ts";
import { parseTraceparent } from "../lib/util/trace.ts";
import { otelIdGenerator, otelObserver } from "../telemetry/otel.ts";

const root = new URL("..", import.meta.url).pathname;
const out = join(root, "docs/images");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// 1. A receiver of OTLP/HTTP JSON.
const bodies: unknown[] = [];
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    bodies.push(JSON.parse(Buffer.concat(chunks).toString("utf8")));
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
});
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/v1/traces`;
const provider = (service: string) =>
  new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": service }),
    idGenerator: otelIdGenerator,
    spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url }))],
  });
const agentProvider = provider("sprout-agent");
const serverProvider = provider("todo-server");

// 2. The hook server: its hooks open a span under the traceparent the agent sent.
function todoServer(tracer: Tracer) {
  let stops = 0;
  const inSpanOf = async <T>(meta: Record<string, unknown> | undefined, name: string, fn: () => Promise<T>) => {
    const parent = parseTraceparent(meta?.["traceparent"]);
    const context = parent === undefined ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, {
      traceId: parent.traceId,
      spanId: parent.spanId,
      traceFlags: 1,
      isRemote: true,
    });
    const span = tracer.startSpan(name, {}, context);
    try {
      return await fn();
    } finally {
      span.end();
    }
  };
  const create = () => {
    const server = new McpServer({ name: "todo", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.registerTool("read_file", { inputSchema: z.object({ path: z.string() }) }, async (args) => {
      await sleep(90);
      return { content: [{ type: "text" as const, text: `contents of ${args.path}` }] };
    });
    server.registerTool("run_tests", { inputSchema: z.object({}) }, async () => {
      await sleep(420);
      return { content: [{ type: "text" as const, text: "12 passed, 1 failed" }] };
    });
    server.registerTool(
      "_PreToolUse",
      { inputSchema: z.object({}) },
      (_args, ctx) =>
        inSpanOf(ctx.mcpReq._meta, "todo policy check", async () => {
          await sleep(12);
          return { content: [] };
        }),
    );
    server.registerTool(
      "_Stop",
      { inputSchema: z.object({}) },
      (_args, ctx) =>
        inSpanOf(ctx.mcpReq._meta, "todo open items", async () => {
          await sleep(35);
          return {
            content: [{
              type: "text" as const,
              text: stops++ === 0 ? "1 test still fails: fix it before finishing" : "",
            }],
          };
        }),
    );
    return server;
  };
  return (transport: InProcessTransport) => serveStdio(create, { transport });
}

// 3. The run.
const llm = await startFakeLlm({
  responses: [
    {
      text: "Reading the code and running the tests.",
      toolCalls: [
        { name: "todo__read_file", arguments: { path: "src/parse.ts" } },
        { name: "todo__run_tests", arguments: {} },
      ],
      usage: { inputTokens: 1840, outputTokens: 96 },
      pauseMs: 380,
    },
    { text: "All done: the parser is fixed.", usage: { inputTokens: 2310, outputTokens: 41 }, pauseMs: 260 },
    {
      text: "Fixed the failing test too.",
      toolCalls: [{ name: "todo__run_tests", arguments: {} }],
      usage: { inputTokens: 2420, outputTokens: 58 },
      pauseMs: 300,
    },
    { text: "All 13 tests pass.", usage: { inputTokens: 2510, outputTokens: 22 }, pauseMs: 180 },
  ],
});
const agent = await createAgent({
  model: { provider: "anthropic", model: "claude-sonnet-4-5", apiKey: "sk-ant-demo", baseUrl: llm.anthropicBaseUrl },
  inProcessServers: { todo: todoServer(serverProvider.getTracer("todo-server")) },
  hookServers: ["todo"],
  sessionStore: false,
  sessionId: "ses_demo",
  observe: otelObserver({ tracer: agentProvider.getTracer("sprout-agent") }),
});
const run = agent.prompt("Fix the failing parser test");
for await (const _ of run) { /* the spans are the point */ }
await run.result;
await agent.close();
await agentProvider.forceFlush();
await serverProvider.forceFlush();
await llm.close();
receiver.close();

// 4. The spans, as exported.
interface Attr {
  key: string;
  value: Record<string, unknown>;
}
interface Exported {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Attr[];
  service: string;
}
const spans: Exported[] = bodies.flatMap((b) =>
  (b as { resourceSpans: { resource: { attributes: Attr[] }; scopeSpans: { spans: Exported[] }[] }[] }).resourceSpans
    .flatMap((r) => {
      const service = String(r.resource.attributes.find((a) => a.key === "service.name")?.value["stringValue"]);
      return r.scopeSpans.flatMap((s) => s.spans.map((span) => ({ ...span, service })));
    })
);
mkdirSync(out, { recursive: true });
writeFileSync(join(out, "trace-run.json"), `${JSON.stringify(bodies, null, 1)}\n`);

// 5. The timeline: spans in tree order, one row each.
const ns = (s: string) => Number(BigInt(s) / 1000n) / 1000; // ms
const byParent = new Map<string, Exported[]>();
for (const span of spans) {
  const key = span.parentSpanId && spans.some((s) => s.spanId === span.parentSpanId) ? span.parentSpanId : "";
  byParent.set(key, [...(byParent.get(key) ?? []), span]);
}
const rows: { span: Exported; depth: number }[] = [];
const visit = (parent: string, depth: number) => {
  for (const span of (byParent.get(parent) ?? []).sort((a, b) => ns(a.startTimeUnixNano) - ns(b.startTimeUnixNano))) {
    rows.push({ span, depth });
    visit(span.spanId, depth + 1);
  }
};
visit("", 0);
const t0 = Math.min(...spans.map((s) => ns(s.startTimeUnixNano)));
const t1 = Math.max(...spans.map((s) => ns(s.endTimeUnixNano)));
const attr = (span: Exported, key: string) => {
  const v = span.attributes.find((a) => a.key === key)?.value;
  return v === undefined ? undefined : v["stringValue"] ?? v["intValue"];
};
const colour = (span: Exported) =>
  span.service !== "sprout-agent"
    ? "#8e6bbf"
    : span.name.startsWith("invoke_agent")
    ? "#3d6fb6"
    : span.name.startsWith("chat")
    ? "#e08a2c"
    : span.name.startsWith("execute_tool")
    ? "#3c9a5f"
    : attr(span, "sprout_agent.hook.outcome") === "objected"
    ? "#c8453c"
    : "#d4a23a";
const labelW = 330;
const chartW = 700;
const rowH = 26;
const top = 54;
const width = labelW + chartW + 170;
const height = top + rows.length * rowH + 70;
const x = (ms: number) => labelW + ((ms - t0) / (t1 - t0)) * chartW;
const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const ticks: string[] = [];
const step = (t1 - t0) > 2000 ? 500 : 250;
for (let t = 0; t <= t1 - t0; t += step) {
  ticks.push(
    `<line x1="${x(t0 + t)}" y1="${top - 8}" x2="${x(t0 + t)}" y2="${
      top + rows.length * rowH
    }" stroke="#e3e3e3"/><text x="${x(t0 + t)}" y="${
      top - 14
    }" font-size="11" fill="#777" text-anchor="middle">${t} ms</text>`,
  );
}
const bars = rows.map(({ span, depth }, i) => {
  const y = top + i * rowH;
  const start = ns(span.startTimeUnixNano);
  const end = ns(span.endTimeUnixNano);
  const w = Math.max(2, x(end) - x(start));
  const detail = span.name.startsWith("chat")
    ? `${attr(span, "gen_ai.usage.input_tokens")} in / ${attr(span, "gen_ai.usage.output_tokens")} out`
    : attr(span, "sprout_agent.hook.outcome") !== undefined
    ? String(attr(span, "sprout_agent.hook.outcome"))
    : span.service !== "sprout-agent"
    ? span.service
    : "";
  const label = `${esc(span.name)}`;
  const text = `${(end - start).toFixed(0)} ms${detail ? ` · ${esc(detail)}` : ""}`;
  const inside = w > 150;
  return `<g>
  <rect x="0" y="${y}" width="${width}" height="${rowH}" fill="${i % 2 ? "#fafafa" : "#ffffff"}"/>
  <text x="${12 + depth * 16}" y="${y + 17}" font-size="12.5" fill="#222">${label}</text>
  <rect x="${x(start)}" y="${y + 5}" width="${w}" height="${rowH - 10}" rx="3" fill="${colour(span)}"/>
  <text x="${inside ? x(start) + 6 : x(start) + w + 6}" y="${y + 17}" font-size="11" fill="${
    inside ? "#fff" : "#444"
  }">${text}</text>
</g>`;
});
const legend = [
  ["invoke_agent", "#3d6fb6"],
  ["chat (model request)", "#e08a2c"],
  ["execute_tool", "#3c9a5f"],
  ["hook call", "#d4a23a"],
  ["hook call that objected", "#c8453c"],
  ["the hook server's own span", "#8e6bbf"],
].map(([name, fill], i) =>
  `<rect x="${12 + i * 180}" y="${height - 36}" width="12" height="12" rx="2" fill="${fill}"/><text x="${
    30 + i * 180
  }" y="${height - 26}" font-size="11.5" fill="#333">${name}</text>`
);
const svg =
  `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif">
<rect width="${width}" height="${height}" fill="#ffffff"/>
<text x="12" y="22" font-size="15" font-weight="bold" fill="#222">One traced prompt: trace ${spans[0]!.traceId}</text>
${ticks.join("\n")}
${bars.join("\n")}
${legend.join("\n")}
</svg>
`;
writeFileSync(join(out, "trace-run.svg"), svg);
console.log(`${spans.length} spans, ${(t1 - t0).toFixed(0)} ms; wrote docs/images/trace-run.json and trace-run.svg`);

if (process.argv.includes("--png")) {
  const html = join(out, "trace-run.html");
  writeFileSync(html, `<html><body style="margin:0">${svg}</body></html>`);
  const chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) =>
    spawnSync(p, ["--version"]).status === 0
  );
  if (chromium === undefined) throw new Error("no chromium: apt-get install -y chromium");
  const shot = spawnSync(chromium, [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--hide-scrollbars",
    `--window-size=${width},${height}`,
    `--screenshot=${join(out, "trace-run.png")}`,
    `file://${html}`,
  ], { encoding: "utf8" });
  spawnSync("rm", ["-f", html]);
  if (shot.status !== 0) throw new Error(`chromium failed: ${shot.stderr}`);
  console.log("wrote docs/images/trace-run.png");
}
