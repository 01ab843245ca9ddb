/**
 * OpenTelemetry spans from an agent's events, following the OpenTelemetry GenAI semantic
 * conventions (docs/TRACING.md): `invoke_agent {name}` per prompt, `chat {model}` per model
 * request, `execute_tool {tool}` per tool call, and `sprout-agent.hook {point}` per hook call.
 * `@opentelemetry/api` is its one dependency (an optional peer dependency of the package).
 *
 * ```ts
 * import { createAgent } from "sprout-agent";
 * import { otelIdGenerator, otelObserver } from "sprout-agent/telemetry/otel";
 * import { BasicTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
 * import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
 *
 * const provider = new BasicTracerProvider({
 *   idGenerator: otelIdGenerator, // the spans get the ids the agent puts in `_meta.traceparent`
 *   spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter())],
 * });
 * const agent = await createAgent({ model, observe: otelObserver({ tracer: provider.getTracer("sprout-agent") }) });
 * ```
 * @module
 */

import {
  type Attributes,
  type Context,
  context as contextApi,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Tracer,
} from "@opentelemetry/api";
import type { AgentEvent, AgentObserver, SpanIds, TraceEvent } from "../lib/conversation/events.ts";

export type { Tracer } from "@opentelemetry/api";
export type { AgentObserver } from "../lib/conversation/events.ts";

/** Options of {@link otelObserver}. */
export interface OtelObserverOptions {
  /** Where the spans go; default `trace.getTracer("sprout-agent")` (the global provider's). */
  tracer?: Tracer;
  /** `gen_ai.agent.name` and the `invoke_agent` span's name; default `sprout-agent`. */
  agentName?: string;
  /**
   * Told once when a span's ids differ from the ones the agent sent in `_meta.traceparent`
   * (the provider was not given {@link otelIdGenerator}): a hook server's spans then do not
   * nest under the exported hook-call span. Default: nothing.
   */
  onWarning?: (message: string) => void;
}

/** The ids the next span must have, set around each `startSpan` (synchronously). */
let pending: { traceId: string; spanId: string } | undefined;
const randomHex = (bytes: number): string => {
  let hex = "";
  for (const byte of crypto.getRandomValues(new Uint8Array(bytes))) hex += byte.toString(16).padStart(2, "0");
  return /^0+$/.test(hex) ? randomHex(bytes) : hex;
};

/**
 * An OpenTelemetry SDK `IdGenerator` (`new BasicTracerProvider({ idGenerator: otelIdGenerator })`)
 * that gives the spans of {@link otelObserver} the trace and span ids the agent sent in
 * `_meta.traceparent` (SPEC section 10), and every other span random ids as the SDK's own does.
 */
export const otelIdGenerator: { generateTraceId(): string; generateSpanId(): string } = {
  generateTraceId: () => pending?.traceId ?? randomHex(16),
  generateSpanId: () => pending?.spanId ?? randomHex(8),
};

/** What a hook call's output did, by its outcome, typed answer and point (SPEC sections 4.3, 7). */
function hookResult(effect: string, event: Extract<AgentEvent, { type: "hook" }>): string {
  if (event.outcome !== "objection") return event.outcome;
  // A typed answer says what it does (SPEC 7.7); plain text does what the point does with it.
  if (event.decision !== undefined) {
    const decision = event.decision.decision;
    if (decision === "deny") return "denied";
    if (decision === "block") return "objected";
    if (decision === "allow") return "allowed";
    if (decision === "ask") return "asked";
    return "injected";
  }
  if (effect === "deny") return "denied";
  if (effect === "objection") return "objected";
  if (effect === "log") return "logged";
  return "injected";
}

/** `provider:model` → its two parts; a name without a colon is the model. */
function splitModel(name: string): { provider?: string; model: string } {
  const colon = name.indexOf(":");
  return colon < 0 ? { model: name } : { provider: name.slice(0, colon), model: name.slice(colon + 1) };
}

interface Open {
  span: Span;
  attributes: Attributes;
  /** For a hook call: its point's effect. */
  effect?: string;
}

/**
 * An observer for `createAgent({ observe })` that turns the agent's events into spans: per
 * prompt an `invoke_agent {agentName}` span (kind INTERNAL), per model request `chat {model}`
 * (CLIENT; `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.response.model`,
 * `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, `gen_ai.response.finish_reasons`),
 * per tool call `execute_tool {tool}` (INTERNAL; `gen_ai.tool.name`, `gen_ai.tool.call.id`,
 * `gen_ai.tool.type` `function`), per hook call `sprout-agent.hook {point}` (INTERNAL;
 * `sprout_agent.hook.point`, `.server`, `.outcome`: `objected` | `denied` | `allowed` |
 * `asked` | `injected` | `logged` | `none` | `timeout` | `error`, `.tool_call.id`, `.halted`). Every span has
 * `gen_ai.conversation.id` = the session id; a failure sets status ERROR and `error.type`.
 * Warnings and compactions are span events. Spans nest as the agent's do and, with
 * {@link otelIdGenerator}, carry the very ids of the `_meta.traceparent` the agent sent, so a
 * hook server's spans are children of the hook-call span. Never throws.
 * @example
 * const agent = await createAgent({ model, observe: otelObserver({ tracer }) });
 */
export function otelObserver(options: OtelObserverOptions = {}): AgentObserver {
  const tracer = options.tracer ?? trace.getTracer("sprout-agent");
  const agentName = options.agentName ?? "sprout-agent";
  const open = new Map<string, Open>();
  let warned = false;
  let conversation: string | undefined;

  const parentContext = (ids: SpanIds): Context => {
    if (ids.parentSpanId === undefined) return ROOT_CONTEXT;
    const parent = open.get(ids.parentSpanId);
    if (parent !== undefined) return trace.setSpan(ROOT_CONTEXT, parent.span);
    // A parent of the caller's (an ACP client's span): remote.
    return trace.setSpanContext(ROOT_CONTEXT, {
      traceId: ids.traceId,
      spanId: ids.parentSpanId,
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
    });
  };

  const start = (ids: SpanIds, name: string, kind: SpanKind, attributes: Attributes, effect?: string): void => {
    pending = { traceId: ids.traceId, spanId: ids.spanId };
    let span: Span;
    try {
      span = tracer.startSpan(name, { kind, attributes }, parentContext(ids));
    } finally {
      pending = undefined;
    }
    const got = span.spanContext();
    if (!warned && span.isRecording() && (got.spanId !== ids.spanId || got.traceId !== ids.traceId)) {
      warned = true;
      options.onWarning?.(
        "OpenTelemetry spans get ids other than the agent's traceparent: give the tracer provider " +
          "`idGenerator: otelIdGenerator` (sprout-agent/telemetry/otel) so that MCP servers' spans nest under them",
      );
    }
    open.set(ids.spanId, { span, attributes, ...(effect === undefined ? {} : { effect }) });
  };

  const end = (ids: SpanIds | undefined, attributes: Attributes, error?: string): void => {
    if (ids === undefined) return;
    const entry = open.get(ids.spanId);
    if (entry === undefined) return;
    open.delete(ids.spanId);
    entry.span.setAttributes(attributes);
    if (error !== undefined) {
      entry.span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    }
    entry.span.end();
  };

  const failed = (type: string): Attributes => ({ "error.type": type });

  const observe = (event: AgentEvent | TraceEvent, ids: SpanIds | undefined): void => {
    const common: Attributes = conversation === undefined ? {} : { "gen_ai.conversation.id": conversation };
    switch (event.type) {
      case "prompt-start":
        if (ids === undefined) return;
        conversation = event.sessionId;
        start(ids, `invoke_agent ${agentName}`, SpanKind.INTERNAL, {
          "gen_ai.operation.name": "invoke_agent",
          "gen_ai.agent.name": agentName,
          "gen_ai.conversation.id": event.sessionId,
          "sprout_agent.prompt": event.prompt,
        });
        return;
      case "prompt-end": {
        const attributes: Attributes = {};
        if (event.stopReason !== undefined) attributes["sprout_agent.stop_reason"] = event.stopReason;
        if (event.usage !== undefined) {
          attributes["gen_ai.usage.input_tokens"] = event.usage.inputTokens;
          attributes["gen_ai.usage.output_tokens"] = event.usage.outputTokens;
        }
        if (event.error !== undefined) Object.assign(attributes, failed("agent_error"));
        end(ids, attributes, event.error);
        return;
      }
      case "round-start":
        if (ids === undefined) return;
        start(ids, "chat", SpanKind.CLIENT, {
          ...common,
          "gen_ai.operation.name": "chat",
          "sprout_agent.round": event.round,
        });
        return;
      case "round-end": {
        const { provider, model } = splitModel(event.model);
        const entry = ids === undefined ? undefined : open.get(ids.spanId);
        entry?.span.updateName(`chat ${model}`);
        const attributes: Attributes = { "gen_ai.request.model": model };
        if (event.responseModel !== undefined) attributes["gen_ai.response.model"] = event.responseModel;
        if (provider !== undefined) attributes["gen_ai.provider.name"] = provider;
        if (event.usage !== undefined) {
          attributes["gen_ai.usage.input_tokens"] = event.usage.inputTokens;
          attributes["gen_ai.usage.output_tokens"] = event.usage.outputTokens;
        }
        if (event.stop !== undefined) attributes["gen_ai.response.finish_reasons"] = [event.stop];
        if (event.error !== undefined) {
          Object.assign(attributes, failed(event.error === "cancelled" ? "cancelled" : "llm_error"));
        }
        end(ids, attributes, event.error);
        return;
      }
      case "tool-start":
        if (ids === undefined) return;
        start(ids, `execute_tool ${event.name}`, SpanKind.INTERNAL, {
          ...common,
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": event.name,
          "gen_ai.tool.call.id": event.id,
          "gen_ai.tool.type": "function",
        });
        return;
      case "tool-end":
        end(ids, event.ok ? {} : failed("tool_error"), event.ok ? undefined : event.output.slice(0, 1024));
        return;
      case "hook-start": {
        if (ids === undefined) return;
        const attributes: Attributes = {
          ...common,
          "sprout_agent.hook.point": event.hook,
          "sprout_agent.hook.server": event.server,
        };
        if (event.toolCallId !== undefined) attributes["sprout_agent.hook.tool_call.id"] = event.toolCallId;
        start(ids, `sprout-agent.hook ${event.hook}`, SpanKind.INTERNAL, attributes, event.effect);
        return;
      }
      case "hook": {
        const entry = ids === undefined ? undefined : open.get(ids.spanId);
        const outcome = hookResult(entry?.effect ?? "", event);
        const attributes: Attributes = { "sprout_agent.hook.outcome": outcome };
        if (event.decision?.continue === false) attributes["sprout_agent.hook.halted"] = true;
        const bad = event.outcome === "timeout" || event.outcome === "error";
        if (bad) Object.assign(attributes, failed(event.outcome));
        end(ids, attributes, bad ? event.message ?? event.outcome : undefined);
        return;
      }
      case "warning":
      case "compaction": {
        const entry = ids === undefined ? undefined : open.get(ids.spanId);
        if (entry === undefined) return;
        if (event.type === "warning") entry.span.addEvent("sprout_agent.warning", { message: event.message });
        else {
          entry.span.addEvent("sprout_agent.compaction", {
            mode: event.mode,
            before_tokens: event.beforeTokens,
            after_tokens: event.afterTokens,
          });
        }
        return;
      }
      default:
        return;
    }
  };
  return (event, ids) => {
    try {
      observe(event, ids);
    } catch {
      // a tracer that throws never breaks a run
    }
  };
}

/** The active OpenTelemetry context's span as `{traceparent}`, for `createAgent({ trace })`; `undefined` without one. */
export function activeTraceParent(): { traceparent: string } | undefined {
  const span = trace.getSpan(contextApi.active());
  if (span === undefined) return undefined;
  const { traceId, spanId, traceFlags } = span.spanContext();
  if (!trace.isSpanContextValid(span.spanContext())) return undefined;
  return { traceparent: `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, "0")}` };
}
