/**
 * Trace context and OpenTelemetry (SPEC sections 10 and 11, tracing; docs/TRACING.md): the W3C
 * `traceparent` read and written by lib/util/trace.ts; `_meta.traceparent` on the MCP requests of
 * a prompt, naming the tool-call and hook-call spans, as an official SDK v2 server reads it; the
 * prompt continuing the caller's trace; then the real OpenTelemetry JS SDK exporting OTLP/HTTP
 * JSON to a receiver in the test (span names, nesting, attributes, and the hook server's
 * `traceparent` naming the exported hook span); and `cli.ts run` exporting from `OTEL_*`.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { createAgent } from "../lib/agent/agent.ts";
import type { AgentEvent, SpanIds, TraceEvent } from "../lib/conversation/events.ts";
import type { InProcessServer } from "../lib/mcp/in-process.ts";
import { startFakeLlm } from "../lib/testing/fake-llm.ts";
import {
  childSpan,
  continueTrace,
  formatTraceparent,
  newSpanId,
  newTraceId,
  parseTraceparent,
  parseTracestate,
  traceParentFromMeta,
} from "../lib/util/trace.ts";
import { tracesUrl } from "../telemetry/otel-env.ts";
import { otelIdGenerator, otelObserver } from "../telemetry/otel.ts";
import { tracingRequested } from "../lib/cli/tracing.ts";
import { runCli } from "./helpers/cli.ts";
import { spawnAgent } from "./helpers/acp.ts";

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;

describe("W3C trace context (lib/util/trace.ts)", () => {
  test("parses version 00 exactly, reads later versions by their first fields, refuses the rest", () => {
    assert.deepEqual(parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), {
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      flags: "01",
    });
    assert.equal(
      parseTraceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-ever")?.spanId,
      "00f067aa0ba902b7",
    );
    for (
      const bad of [
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", // uppercase
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01", // zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // zero span id
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // version ff
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", // 00 with more
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", // short
        "",
        42,
        undefined,
      ]
    ) {
      assert.equal(parseTraceparent(bad), undefined, String(bad));
    }
  });

  test("tracestate: a checked list kept, an invalid one dropped; new ids are lowercase hex, never zero", () => {
    assert.equal(
      parseTracestate("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE"),
      "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
    );
    assert.equal(parseTracestate("no equals sign"), undefined);
    assert.equal(parseTracestate("a=1,".repeat(40)), undefined);
    for (let i = 0; i < 50; i++) {
      assert.match(newTraceId(), /^[0-9a-f]{32}$/);
      assert.match(newSpanId(), /^[0-9a-f]{16}$/);
    }
    const parent = continueTrace({
      traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      tracestate: "rojo=1",
    });
    const child = childSpan(parent);
    assert.equal(child.traceId, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert.equal(child.parentSpanId, "00f067aa0ba902b7");
    assert.equal(child.tracestate, "rojo=1");
    assert.notEqual(child.spanId, parent!.spanId);
    assert.match(formatTraceparent(child), TRACEPARENT);
    assert.deepEqual(traceParentFromMeta({ traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" }), {
      traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    });
    assert.equal(traceParentFromMeta({ traceparent: "junk" }), undefined);
    assert.equal(traceParentFromMeta("junk"), undefined);
  });

  test("the CLI traces only when OTEL_* ask for it; the traces URL follows the OTLP rules", () => {
    assert.equal(tracingRequested({}), false);
    assert.equal(tracingRequested({ OTEL_SERVICE_NAME: "x" }), false);
    assert.equal(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" }), true);
    assert.equal(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://c:4318/v1/traces" }), true);
    assert.equal(
      tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "none" }),
      false,
    );
    assert.equal(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" }), false);
    assert.equal(tracingRequested({ OTEL_TRACES_EXPORTER: "console" }), true);
    assert.equal(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318/" }), "http://c:4318/v1/traces");
    assert.equal(
      tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://t/x" }),
      "http://t/x",
    );
    assert.equal(tracesUrl({}), undefined);
  });
});

/** What the SDK server saw: one entry per request the tool and hook handlers got. */
interface Seen {
  tool: string;
  traceparent: unknown;
}

/** An official SDK v2 server: `echo`, a `_PreToolUse` that allows, a `_Stop` that objects once; each reads `_meta.traceparent`. */
function hookServer(seen: Seen[]): InProcessServer {
  let stops = 0;
  const create = () => {
    const server = new McpServer({ name: "traced", version: "1.0.0" }, { capabilities: { tools: {} } });
    const record = (tool: string, ctx: { mcpReq: { _meta?: Record<string, unknown> } }) =>
      seen.push({ tool, traceparent: ctx.mcpReq._meta?.["traceparent"] });
    server.registerTool("echo", { description: "Echoes", inputSchema: z.object({ text: z.string() }) }, (args, ctx) => {
      record("echo", ctx);
      return { content: [{ type: "text" as const, text: `echo: ${args.text}` }] };
    });
    server.registerTool("_PreToolUse", { description: "Allows", inputSchema: z.object({}) }, (_args, ctx) => {
      record("_PreToolUse", ctx);
      return { content: [] };
    });
    server.registerTool("_Stop", { description: "Objects once", inputSchema: z.object({}) }, (_args, ctx) => {
      record("_Stop", ctx);
      return { content: [{ type: "text" as const, text: stops++ === 0 ? "check the tests" : "" }] };
    });
    return server;
  };
  return (transport) => serveStdio(create, { transport });
}

/** A prompt's turns: a tool call, an answer (the _Stop objects), a final answer (final: no second _Stop, SPEC 7.1). */
const TURNS = [
  { text: "Calling echo.", toolCalls: [{ name: "traced__echo", arguments: { text: "hi" } }] },
  { text: "Done." },
  { text: "Tests checked." },
];

async function tracedRun(
  llmBaseUrl: string,
  observe: (event: AgentEvent | TraceEvent, span: SpanIds | undefined) => void,
  seen: Seen[],
  trace?: { traceparent: string },
) {
  const agent = await createAgent({
    model: { provider: "anthropic", model: "claude-test", apiKey: "sk-ant-test", baseUrl: llmBaseUrl },
    inProcessServers: { traced: hookServer(seen) },
    hookServers: ["traced"],
    sessionStore: false,
    observe,
  });
  try {
    const run = agent.prompt("go", trace === undefined ? {} : { trace });
    const events: AgentEvent[] = [];
    for await (const event of run) events.push(event);
    return { result: await run.result, sessionId: agent.sessionId, events };
  } finally {
    await agent.close();
  }
}

describe("trace context on the MCP requests of a prompt (SPEC section 10)", () => {
  test("tools/call names the tool-call span, each hook call its own span, nested under the prompt's", async () => {
    const llm = await startFakeLlm({ responses: TURNS });
    const seen: Seen[] = [];
    const observed: Array<{ event: AgentEvent | TraceEvent; span: SpanIds | undefined }> = [];
    try {
      const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
      const { result } = await tracedRun(
        llm.anthropicBaseUrl,
        (event, span) => observed.push({ event, span }),
        seen,
        { traceparent: parent },
      );
      assert.equal(result.stopReason, "end_turn");
      const of = (type: string, pick: (e: AgentEvent | TraceEvent) => boolean = () => true) =>
        observed.filter((o) => o.event.type === type && pick(o.event)).map((o) => o.span!);
      const [prompt] = of("prompt-start");
      assert.deepEqual(prompt && { traceId: prompt.traceId, parent: prompt.parentSpanId }, {
        traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
        parent: "00f067aa0ba902b7",
      });
      const [tool] = of("tool-start");
      assert.equal(tool?.parentSpanId, prompt!.spanId);
      assert.deepEqual(of("tool-end"), [tool]);
      const rounds = of("round-start");
      assert.equal(rounds.length, 3);
      for (const round of rounds) assert.equal(round.parentSpanId, prompt!.spanId);
      assert.deepEqual(of("round-end").map((s) => s.spanId), rounds.map((s) => s.spanId));
      const pre = of("hook-start", (e) => (e as { hook: string }).hook === "_PreToolUse");
      const stops = of("hook-start", (e) => (e as { hook: string }).hook === "_Stop");
      assert.equal(pre[0]?.parentSpanId, tool!.spanId, "_PreToolUse is called inside the tool call's span");
      assert.equal(stops.length, 1);
      assert.equal(stops[0]!.parentSpanId, prompt!.spanId);
      assert.deepEqual(of("hook").map((s) => s.spanId), [pre[0]!.spanId, stops[0]!.spanId]);
      // What the SDK server read in _meta, call by call.
      const named = (span: SpanIds) => `00-${span.traceId}-${span.spanId}-01`;
      assert.deepEqual(seen, [
        { tool: "_PreToolUse", traceparent: named(pre[0]!) },
        { tool: "echo", traceparent: named(tool!) },
        { tool: "_Stop", traceparent: named(stops[0]!) },
      ]);
      const end = observed.find((o) => o.event.type === "prompt-end");
      assert.deepEqual(end?.span, prompt);
      assert.equal((end?.event as { stopReason?: string }).stopReason, "end_turn");
      const roundEnd = observed.find((o) => o.event.type === "round-end")!.event as Extract<
        TraceEvent,
        { type: "round-end" }
      >;
      assert.deepEqual([roundEnd.model, roundEnd.stop, roundEnd.usage], [
        "anthropic:claude-test",
        "tool_use",
        { inputTokens: 10, outputTokens: 5 },
      ]);
    } finally {
      await llm.close();
    }
  });

  test("without a trace to continue each prompt is the root of a new trace; a stream's events keep their shape", async () => {
    const llm = await startFakeLlm({ responses: TURNS });
    const seen: Seen[] = [];
    const spans: SpanIds[] = [];
    try {
      const { events } = await tracedRun(llm.anthropicBaseUrl, (event, span) => {
        if (event.type === "prompt-start") spans.push(span!);
      }, seen);
      assert.deepEqual([...new Set(events.map((e) => e.type))], [
        "round-start",
        "text-delta",
        "tool-start",
        "hook",
        "tool-end",
      ]);
      for (const event of events) assert.ok(!("traceId" in event) && !("spanId" in event), event.type);
      assert.equal(spans.length, 1);
      assert.equal(spans[0]!.parentSpanId, undefined);
      for (const s of seen) {
        const match = TRACEPARENT.exec(String(s.traceparent));
        assert.equal(match?.[1], spans[0]!.traceId, s.tool);
      }
    } finally {
      await llm.close();
    }
  });
});

/** An OTLP/HTTP receiver: collects the JSON of every export request. */
async function otlpReceiver(): Promise<{ url: string; spans: () => OtlpSpan[]; close: () => Promise<void> }> {
  const bodies: unknown[] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.url === "/v1/traces" && req.method === "POST") {
        bodies.push(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () =>
      bodies.flatMap((b) =>
        (b as { resourceSpans: OtlpResourceSpans[] }).resourceSpans.flatMap((r) =>
          r.scopeSpans.flatMap((s) =>
            s.spans.map((span) => ({ ...span, service: attributes(r.resource.attributes)["service.name"] }))
          )
        )
      ),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

interface OtlpAttribute {
  key: string;
  value: {
    stringValue?: string;
    intValue?: string | number;
    boolValue?: boolean;
    arrayValue?: { values: { stringValue?: string }[] };
  };
}
interface OtlpSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpAttribute[];
  status?: { code?: number };
  service?: unknown;
}
interface OtlpResourceSpans {
  resource: { attributes: OtlpAttribute[] };
  scopeSpans: { spans: OtlpSpan[] }[];
}

function attributes(list: OtlpAttribute[]): Record<string, unknown> {
  return Object.fromEntries(list.map(({ key, value }) => [
    key,
    value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.boolValue ??
      value.arrayValue?.values.map((v) => v.stringValue),
  ]));
}

/** OTLP span kinds. */
const INTERNAL = 1;
const CLIENT = 3;

describe("OpenTelemetry export (sprout-agent/telemetry/otel) to a real OTLP/HTTP receiver", () => {
  test("invoke_agent, chat, execute_tool and hook spans, nested, with the GenAI attributes; the hook server's traceparent names its span", async () => {
    const receiver = await otlpReceiver();
    const llm = await startFakeLlm({ responses: TURNS });
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ "service.name": "tracing-test" }),
      idGenerator: otelIdGenerator,
      spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${receiver.url}/v1/traces` }))],
    });
    const seen: Seen[] = [];
    const warnings: string[] = [];
    try {
      const observe = otelObserver({ tracer: provider.getTracer("test"), onWarning: (m) => warnings.push(m) });
      const { sessionId } = await tracedRun(llm.anthropicBaseUrl, observe, seen);
      await provider.forceFlush();
      const spans = receiver.spans();
      assert.deepEqual(warnings, []);
      const names = spans.map((s) => s.name).sort();
      assert.deepEqual(names, [
        "chat claude-test",
        "chat claude-test",
        "chat claude-test",
        "execute_tool traced__echo",
        "invoke_agent sprout-agent",
        "sprout-agent.hook _PreToolUse",
        "sprout-agent.hook _Stop",
      ]);
      const byName = (name: string) => spans.filter((s) => s.name === name);
      const agent = byName("invoke_agent sprout-agent")[0]!;
      assert.equal(agent.parentSpanId ?? "", "");
      assert.equal(agent.kind, INTERNAL);
      assert.equal(agent.service, "tracing-test");
      assert.deepEqual(
        [
          attributes(agent.attributes)["gen_ai.operation.name"],
          attributes(agent.attributes)["gen_ai.conversation.id"],
          attributes(agent.attributes)["gen_ai.usage.input_tokens"],
        ],
        ["invoke_agent", sessionId, 30],
      );
      for (const span of spans) {
        assert.equal(span.traceId, agent.traceId, span.name);
        assert.equal(attributes(span.attributes)["gen_ai.conversation.id"], sessionId, span.name);
      }
      const chats = byName("chat claude-test");
      for (const chat of chats) {
        assert.equal(chat.parentSpanId, agent.spanId);
        assert.equal(chat.kind, CLIENT);
        const a = attributes(chat.attributes);
        assert.deepEqual(
          [
            a["gen_ai.operation.name"],
            a["gen_ai.provider.name"],
            a["gen_ai.request.model"],
            a["gen_ai.response.model"],
          ],
          ["chat", "anthropic", "claude-test", "claude-test"],
        );
        assert.deepEqual([a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]], [10, 5]);
      }
      assert.deepEqual(
        chats.sort((x, y) => Number(BigInt(x.startTimeUnixNano) - BigInt(y.startTimeUnixNano))).map((c) =>
          attributes(c.attributes)["gen_ai.response.finish_reasons"]
        ),
        [["tool_use"], ["end_turn"], ["end_turn"]],
      );
      const tool = byName("execute_tool traced__echo")[0]!;
      assert.equal(tool.parentSpanId, agent.spanId);
      assert.equal(tool.kind, INTERNAL);
      const t = attributes(tool.attributes);
      assert.deepEqual(
        [t["gen_ai.operation.name"], t["gen_ai.tool.name"], t["gen_ai.tool.type"], typeof t["gen_ai.tool.call.id"]],
        ["execute_tool", "traced__echo", "function", "string"],
      );
      const pre = byName("sprout-agent.hook _PreToolUse")[0]!;
      assert.equal(pre.parentSpanId, tool.spanId);
      assert.deepEqual(
        [
          attributes(pre.attributes)["sprout_agent.hook.server"],
          attributes(pre.attributes)["sprout_agent.hook.outcome"],
        ],
        ["traced", "none"],
      );
      const stops = byName("sprout-agent.hook _Stop");
      assert.deepEqual(stops.map((s) => attributes(s.attributes)["sprout_agent.hook.outcome"]), ["objected"]);
      assert.equal(stops[0]!.parentSpanId, agent.spanId);
      // The hook server's own spans would nest under ours: its traceparent names the exported span.
      assert.deepEqual(seen.map((s) => s.traceparent), [
        `00-${agent.traceId}-${pre.spanId}-01`,
        `00-${agent.traceId}-${tool.spanId}-01`,
        `00-${agent.traceId}-${stops[0]!.spanId}-01`,
      ]);
      for (const span of spans) {
        assert.ok(BigInt(span.endTimeUnixNano) >= BigInt(span.startTimeUnixNano), span.name);
      }
    } finally {
      await provider.shutdown();
      await llm.close();
      await receiver.close();
    }
  });
});

describe("otelObserver on its own", () => {
  test("a hook span's outcome by point and answer; failures are ERROR with error.type; ids are the agent's", () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      idGenerator: otelIdGenerator,
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    const warnings: string[] = [];
    const observe = otelObserver({ tracer: provider.getTracer("t"), onWarning: (m) => warnings.push(m) });
    const traceId = newTraceId();
    const prompt = { traceId, spanId: newSpanId() };
    observe({ type: "prompt-start", sessionId: "ses_x", prompt: 1 }, prompt);
    const hooks: Array<[string, string, Extract<AgentEvent, { type: "hook" }>["outcome"], object]> = [
      ["_Stop", "objection", "objection", { text: "no" }],
      ["_PreToolUse", "deny", "objection", { text: "not that" }],
      ["_PreToolUse", "deny", "objection", { decision: { decision: "allow" }, text: "fine" }],
      ["_Stop", "objection", "objection", { decision: { decision: "block", continue: false } }],
      ["_PostCompact", "injection", "objection", { text: "context" }],
      ["_SessionEnd", "log", "objection", { text: "bye" }],
      ["_Stop", "objection", "none", {}],
      ["_Stop", "objection", "timeout", { message: "timed out" }],
      ["_Stop", "objection", "error", { message: "boom" }],
    ];
    for (const [hook, effect, outcome, extra] of hooks) {
      const span = { traceId, spanId: newSpanId(), parentSpanId: prompt.spanId };
      observe({ type: "hook-start", hook, server: "s", effect }, span);
      observe({ type: "hook", hook, server: "s", outcome, durationMs: 1, ...extra }, span);
    }
    const tool = { traceId, spanId: newSpanId(), parentSpanId: prompt.spanId };
    observe({ type: "tool-start", id: "c1", name: "fs__rm", arguments: {} }, tool);
    observe({ type: "tool-end", id: "c1", name: "fs__rm", ok: false, durationMs: 1, output: "denied" }, tool);
    const chat = { traceId, spanId: newSpanId(), parentSpanId: prompt.spanId };
    observe({ type: "round-start", round: 1 }, chat);
    observe({ type: "round-end", round: 1, model: "openai:gpt-x", durationMs: 1, error: "HTTP 500" }, chat);
    observe({ type: "prompt-end", sessionId: "ses_x", prompt: 1, durationMs: 3, error: "HTTP 500" }, prompt);
    const spans = exporter.getFinishedSpans();
    const hookSpans = spans.filter((s) => s.name.startsWith("sprout-agent.hook"));
    assert.deepEqual(hookSpans.map((s) => s.attributes["sprout_agent.hook.outcome"]), [
      "objected",
      "denied",
      "allowed",
      "objected",
      "injected",
      "logged",
      "none",
      "timeout",
      "error",
    ]);
    assert.equal(hookSpans[3]!.attributes["sprout_agent.hook.halted"], true);
    assert.deepEqual(hookSpans.slice(7).map((s) => [s.status.code, s.attributes["error.type"]]), [
      [2, "timeout"],
      [2, "error"],
    ]);
    const failedTool = spans.find((s) => s.name === "execute_tool fs__rm")!;
    assert.deepEqual([failedTool.status.code, failedTool.attributes["error.type"]], [2, "tool_error"]);
    const failedChat = spans.find((s) => s.name === "chat gpt-x")!;
    assert.deepEqual(
      [failedChat.status.code, failedChat.attributes["error.type"], failedChat.attributes["gen_ai.provider.name"]],
      [2, "llm_error", "openai"],
    );
    const agent = spans.find((s) => s.name === "invoke_agent sprout-agent")!;
    assert.deepEqual([agent.spanContext().spanId, agent.spanContext().traceId, agent.status.code], [
      prompt.spanId,
      traceId,
      2,
    ]);
    for (const span of spans) assert.equal(span.spanContext().traceId, traceId);
    assert.equal(failedTool.parentSpanContext?.spanId, prompt.spanId);
    assert.deepEqual(warnings, []);
  });

  test("a provider without otelIdGenerator still nests the spans, and the observer warns once", () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const warnings: string[] = [];
    const observe = otelObserver({ tracer: provider.getTracer("t"), onWarning: (m) => warnings.push(m) });
    const prompt = { traceId: newTraceId(), spanId: newSpanId() };
    const tool = { ...prompt, spanId: newSpanId(), parentSpanId: prompt.spanId };
    observe({ type: "prompt-start", sessionId: "s", prompt: 1 }, prompt);
    observe({ type: "tool-start", id: "c", name: "x", arguments: {} }, tool);
    observe({ type: "tool-end", id: "c", name: "x", ok: true, durationMs: 1, output: "" }, tool);
    observe({ type: "prompt-end", sessionId: "s", prompt: 1, durationMs: 1 }, prompt);
    const [toolSpan, agentSpan] = exporter.getFinishedSpans();
    assert.equal(toolSpan!.parentSpanContext?.spanId, agentSpan!.spanContext().spanId);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /idGenerator: otelIdGenerator/);
  });
});

describe("cli.ts run with OTEL_* set", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "sprout-tracing-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("exports the run's spans to OTEL_EXPORTER_OTLP_ENDPOINT under OTEL_SERVICE_NAME, continuing TRACEPARENT; --json is unchanged", async () => {
    const receiver = await otlpReceiver();
    const script = join(dir, "script.json");
    writeFileSync(script, JSON.stringify([{ text: "Hello.", usage: { inputTokens: 7, outputTokens: 3 } }]));
    try {
      const run = await runCli(["run", "--json", "hi"], {
        SPROUT_AGENT_PROVIDER: "scripted",
        SPROUT_AGENT_SCRIPT: script,
        SPROUT_AGENT_SESSION_DIR: "off",
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_SERVICE_NAME: "cli-under-test",
        TRACEPARENT: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      }, { cwd: dir });
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual([...new Set(run.events.map((e) => e["type"]))], ["round-start", "text-delta", "result"]);
      assert.ok(run.events.every((e) => !("traceId" in e) && !("spanId" in e)));
      const spans = receiver.spans();
      assert.deepEqual(spans.map((s) => s.name).sort(), ["chat " + script, "invoke_agent sprout-agent"].sort());
      const agent = spans.find((s) => s.name.startsWith("invoke_agent"))!;
      assert.deepEqual([agent.traceId, agent.parentSpanId, agent.service], [
        "4bf92f3577b34da6a3ce929d0e0e4736",
        "00f067aa0ba902b7",
        "cli-under-test",
      ]);
      const chat = spans.find((s) => s.name.startsWith("chat"))!;
      assert.equal(chat.parentSpanId, agent.spanId);
      assert.equal(attributes(chat.attributes)["gen_ai.provider.name"], "scripted");
      assert.equal(attributes(chat.attributes)["gen_ai.usage.output_tokens"], 3);
    } finally {
      await receiver.close();
    }
  });

  test("OTEL_TRACES_EXPORTER=console writes the spans to stderr as JSON lines; stdout is the answer alone", async () => {
    const script = join(dir, "console.json");
    writeFileSync(script, JSON.stringify([{ text: "Hello." }]));
    const run = await runCli(["run", "hi"], {
      SPROUT_AGENT_PROVIDER: "scripted",
      SPROUT_AGENT_SCRIPT: script,
      SPROUT_AGENT_SESSION_DIR: "off",
      OTEL_TRACES_EXPORTER: "console",
    }, { cwd: dir });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, "Hello.\n");
    const spans = run.stderr.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
    assert.deepEqual(spans.map((s) => s.name).sort(), [`chat ${script}`, "invoke_agent sprout-agent"]);
  });
});

describe("cli.ts acp with OTEL_* set", () => {
  test("a session/prompt's _meta.traceparent is continued, else session/new's; spans are exported; stdout stays JSON-RPC", async () => {
    const receiver = await otlpReceiver();
    const dir = mkdtempSync(join(tmpdir(), "sprout-tracing-acp-"));
    const script = join(dir, "script.json");
    writeFileSync(script, JSON.stringify([{ text: "Hello over ACP." }]));
    // Every stdout line must parse as JSON (spawnAgent fails the test otherwise).
    const agent = spawnAgent({
      SPROUT_AGENT_PROVIDER: "scripted",
      SPROUT_AGENT_SCRIPT: script,
      SPROUT_AGENT_SESSION_DIR: "off",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
    });
    try {
      await agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
      const created = await agent.request("session/new", { cwd: dir, mcpServers: [] });
      const sessionId = created.result.sessionId as string;
      const reply = await agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: "hi" }],
        _meta: {
          traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
          tracestate: "congo=t61rcWkgMzE",
        },
      });
      assert.equal(reply.result.stopReason, "end_turn");
      // A session/new's _meta is the trace of the session's prompts that send none.
      const second = await agent.request("session/new", {
        cwd: dir,
        mcpServers: [],
        _meta: { traceparent: "00-11111111111111111111111111111111-2222222222222222-01" },
      });
      const secondId = second.result.sessionId as string;
      const again = await agent.request("session/prompt", {
        sessionId: secondId,
        prompt: [{ type: "text", text: "hi" }],
      });
      assert.equal(again.result.stopReason, "end_turn");
      assert.equal(await agent.close(), 0, agent.stderr());
      const spans = receiver.spans();
      const fromSession = spans.find((s) =>
        s.name === "invoke_agent sprout-agent" && attributes(s.attributes)["gen_ai.conversation.id"] === secondId
      );
      assert.deepEqual([fromSession?.traceId, fromSession?.parentSpanId], [
        "11111111111111111111111111111111",
        "2222222222222222",
      ]);
      const invoke = spans.find((s) =>
        s.name === "invoke_agent sprout-agent" && attributes(s.attributes)["gen_ai.conversation.id"] === sessionId
      );
      assert.deepEqual([invoke?.traceId, invoke?.parentSpanId], [
        "0af7651916cd43dd8448eb211c80319c",
        "b7ad6b7169203331",
      ]);
      assert.equal(attributes(invoke!.attributes)["gen_ai.conversation.id"], sessionId);
      assert.equal(spans.find((s) => s.name.startsWith("chat "))?.parentSpanId, invoke!.spanId);
      assert.ok(agent.messages.every((m) => m["jsonrpc"] === "2.0"));
    } finally {
      if (agent.child.exitCode === null) agent.child.kill("SIGKILL");
      await receiver.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
