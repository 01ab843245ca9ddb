/**
 * The CLI's tracing (SPEC section 11, tracing): an OpenTelemetry SDK tracer provider built from the
 * standard `OTEL_*` variables, exporting OTLP over HTTP (or to stderr with
 * `OTEL_TRACES_EXPORTER=console`), and the {@link otelObserver} on it. Loaded by `lib/cli/tracing.ts`
 * only when a variable asks for tracing, so a run without them loads none of it. The SDK
 * packages are imported here, when called, so that their absence is a warning naming them.
 * @module
 */

import process from "node:process";
import type { AgentObserver } from "../lib/conversation/events.ts";

/** The packages the CLI's tracing needs, as `npm install` takes them. */
export const OTEL_PACKAGES: readonly string[] = [
  "@opentelemetry/api",
  "@opentelemetry/sdk-trace-base",
  "@opentelemetry/exporter-trace-otlp-http",
  "@opentelemetry/resources",
];

/** What {@link otelFromEnv} sets up: the observer to pass to `createAgent`, and the flush. */
export interface EnvTracing {
  /** For `createAgent({ observe })`. */
  observe: AgentObserver;
  /** Exports what is left and stops the provider; resolves within about 5 s whatever happens. */
  shutdown(): Promise<void>;
}

/**
 * A tracer provider from `env` (`OTEL_TRACES_EXPORTER`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_SERVICE_NAME`; the exporter reads its own headers and
 * timeout variables) and an {@link otelObserver} on it; `undefined`, after one `warn`, when the
 * packages are missing. Spans go out in batches (a `BatchSpanProcessor`), never on stdout.
 * @param warn receives the one-line warnings (missing packages, mismatched ids)
 */
export async function otelFromEnv(
  env: Record<string, string | undefined>,
  warn: (message: string) => void,
): Promise<EnvTracing | undefined> {
  let api: typeof import("@opentelemetry/api");
  let sdk: typeof import("@opentelemetry/sdk-trace-base");
  let resources: typeof import("@opentelemetry/resources");
  let otel: typeof import("./otel.ts");
  const exporterKind = (env["OTEL_TRACES_EXPORTER"] ?? "otlp").split(",")[0]!.trim().toLowerCase();
  let exporter: import("@opentelemetry/sdk-trace-base").SpanExporter;
  try {
    api = await import("@opentelemetry/api");
    sdk = await import("@opentelemetry/sdk-trace-base");
    resources = await import("@opentelemetry/resources");
    otel = await import("./otel.ts");
    if (exporterKind === "console") exporter = new StderrSpanExporter();
    else {
      const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-http");
      const url = tracesUrl(env);
      exporter = new OTLPTraceExporter(url === undefined ? {} : { url });
    }
  } catch (error) {
    const detail = error instanceof Error ? error.message.split("\n")[0] : String(error);
    warn(
      `Tracing is off: OTEL_* variables ask for it but the OpenTelemetry packages cannot be loaded (${detail}); ` +
        `install them beside sprout-agent: npm install ${OTEL_PACKAGES.join(" ")}`,
    );
    return undefined;
  }
  const provider = new sdk.BasicTracerProvider({
    resource: resources.resourceFromAttributes({
      "service.name": env["OTEL_SERVICE_NAME"]?.trim() || "sprout-agent",
    }),
    idGenerator: otel.otelIdGenerator,
    spanProcessors: [new sdk.BatchSpanProcessor(exporter, { scheduledDelayMillis: 1000 })],
  });
  void api;
  const observe = otel.otelObserver({ tracer: provider.getTracer("sprout-agent"), onWarning: warn });
  return {
    observe,
    shutdown: async () => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, 5000)));
      try {
        await Promise.race([
          provider.shutdown().catch((error: unknown) => {
            warn(`Exporting the trace failed: ${error instanceof Error ? error.message : String(error)}`);
          }),
          late,
        ]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/**
 * The traces URL: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, else `OTEL_EXPORTER_OTLP_ENDPOINT`
 * with `/v1/traces` appended, else `undefined` (the exporter's default, `http://localhost:4318/v1/traces`).
 */
export function tracesUrl(env: Record<string, string | undefined>): string | undefined {
  const traces = env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]?.trim();
  if (traces) return traces;
  const base = env["OTEL_EXPORTER_OTLP_ENDPOINT"]?.trim();
  if (base) return `${base.replace(/\/+$/, "")}/v1/traces`;
  return undefined;
}

/** `OTEL_TRACES_EXPORTER=console`: one JSON line per span on stderr (stdout is the answer, or ACP's). */
class StderrSpanExporter {
  export(
    spans: import("@opentelemetry/sdk-trace-base").ReadableSpan[],
    done: (result: { code: number }) => void,
  ): void {
    for (const span of spans) {
      const context = span.spanContext();
      process.stderr.write(
        `${
          JSON.stringify({
            name: span.name,
            traceId: context.traceId,
            spanId: context.spanId,
            parentSpanId: span.parentSpanContext?.spanId,
            kind: span.kind,
            startTime: span.startTime,
            endTime: span.endTime,
            status: span.status,
            attributes: span.attributes,
          })
        }\n`,
      );
    }
    done({ code: 0 });
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}
