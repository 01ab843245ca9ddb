/**
 * Whether the standard `OTEL_*` variables ask the CLI to trace (SPEC section 11, tracing), and if so
 * the OpenTelemetry setup of `telemetry/otel-env.ts`, loaded then and only then: a run without
 * them loads no tracing code at all.
 * @module
 */

import type { AgentObserver } from "../conversation/events.ts";

/** The tracing a run uses: the observer for `createAgent`, and the flush before exiting. */
export interface CliTracing {
  /** For `createAgent({ observe })`. */
  observe: AgentObserver;
  /** Exports the spans left; resolves within about 5 s. */
  shutdown(): Promise<void>;
}

/**
 * True when `env` asks for traces: `OTEL_TRACES_EXPORTER` is `otlp` or `console`, or an OTLP
 * endpoint (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_ENDPOINT`) is set and
 * `OTEL_TRACES_EXPORTER` is not `none`; never with `OTEL_SDK_DISABLED=true`.
 */
export function tracingRequested(env: Record<string, string | undefined>): boolean {
  if (env["OTEL_SDK_DISABLED"]?.trim().toLowerCase() === "true") return false;
  const exporter = env["OTEL_TRACES_EXPORTER"]?.trim().toLowerCase();
  if (exporter === "none") return false;
  if (exporter === "otlp" || exporter === "console") return true;
  return Boolean(env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]?.trim() || env["OTEL_EXPORTER_OTLP_ENDPOINT"]?.trim());
}

/**
 * The run's tracing when `env` asks for it ({@link tracingRequested}), else `undefined` with
 * nothing loaded. Missing OpenTelemetry packages are one `warn` naming them, and `undefined`.
 */
export async function startTracing(
  env: Record<string, string | undefined>,
  warn: (message: string) => void,
): Promise<CliTracing | undefined> {
  if (!tracingRequested(env)) return undefined;
  // Outside lib/ (it imports the OpenTelemetry SDK); the build leaves it a file of its own.
  const { otelFromEnv } = await import("../../telemetry/otel-env.ts");
  return await otelFromEnv(env, warn);
}

/** The `trace` option of `createAgent` from `TRACEPARENT`/`TRACESTATE` (SPEC section 10), if set. */
export function traceFromEnv(
  env: Record<string, string | undefined>,
): { traceparent: string; tracestate?: string } | undefined {
  const traceparent = env["TRACEPARENT"]?.trim();
  if (!traceparent) return undefined;
  const tracestate = env["TRACESTATE"]?.trim();
  return tracestate ? { traceparent, tracestate } : { traceparent };
}
