/**
 * The MCP conformance suite's client under test, built on lib/mcp/: the suite runs
 * `<runtime> tests/conformance/client.ts <server URL>` with `MCP_CONFORMANCE_SCENARIO` set.
 * Connects (era detected), lists the tools and calls the scenario's tool, then closes.
 * Exit code 0 on success, 1 with the error on stderr otherwise. In `sse-retry` it also reports,
 * by its own clock, how long the client waited before resuming (see {@link observedFetch}).
 */
import process from "node:process";
import { connectMcp } from "../../lib/mcp/client.ts";

const url = process.argv[process.argv.length - 1] ?? "";
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";

/** The tool each scenario expects to be called, with its arguments. */
const calls: Record<string, { name: string; arguments: Record<string, unknown> }> = {
  tools_call: { name: "add_numbers", arguments: { a: 5, b: 3 } },
  "sse-retry": { name: "test_reconnection", arguments: {} },
  "elicitation-sep1034-client-defaults": { name: "test_client_elicitation_defaults", arguments: {} },
};

/** What {@link observedFetch} saw, in `performance.now()` milliseconds. */
const seen: { retryMs?: number; endedAt?: number; timerAt?: number; resumedAt?: number } = {};

/**
 * The client's `fetch`, watched from outside lib/mcp/ (sse-retry): notes when a POST's event
 * stream ended and the `retry:` it carried, starts a plain timer of that length at that moment
 * (how late this process fires a timer just now: the baseline the test compares with), and notes
 * when the resuming GET (with `Last-Event-ID`) is sent. The conformance server measures the same
 * wait from its side, with both processes' scheduling delays in it.
 */
function observedFetch(): typeof fetch {
  return async (input, init) => {
    const method = init?.method ?? "GET";
    if (method === "GET" && new Headers(init?.headers).has("last-event-id")) seen.resumedAt ??= performance.now();
    const response = await fetch(input, init);
    const type = response.headers.get("content-type") ?? "";
    if (method !== "POST" || response.body === null || !type.startsWith("text/event-stream")) return response;
    const decoder = new TextDecoder();
    let text = "";
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          text += decoder.decode(chunk, { stream: true });
          controller.enqueue(chunk);
        },
        flush() {
          const retry = /^retry: ?(\d+)\r?$/m.exec(text)?.[1];
          if (retry === undefined || seen.endedAt !== undefined) return;
          const endedAt = performance.now();
          Object.assign(seen, { retryMs: Number(retry), endedAt });
          setTimeout(() => (seen.timerAt = performance.now()), Number(retry));
        },
      }),
    );
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/** The sse-retry timing line the test reads: waits in ms from the end of the stream, or null. */
function timingLine(): string {
  const since = (at: number | undefined) =>
    at === undefined || seen.endedAt === undefined ? null : Math.round((at - seen.endedAt) * 10) / 10;
  const timing = { retryMs: seen.retryMs ?? null, resumedMs: since(seen.resumedAt), timerMs: since(seen.timerAt) };
  return `sse-retry timing: ${JSON.stringify(timing)}\n`;
}

try {
  const connection = await connectMcp(
    { name: "conformance", transport: { type: "http", url, headers: {} } },
    {
      sessionId: "conformance",
      // A person who accepts every form as offered: each property at its default (SEP-1034).
      input: {
        elicit: (request) => {
          if (request.mode !== "form") return Promise.resolve({ action: "decline" });
          const properties = (request.requestedSchema.properties ?? {}) as Record<string, { default?: unknown }>;
          const content = Object.fromEntries(
            Object.entries(properties).filter(([, p]) => p.default !== undefined).map(([k, p]) => [k, p.default]),
          );
          return Promise.resolve({ action: "accept", content: content as Record<string, string> });
        },
      },
      onWarning: (m) => process.stderr.write(`warning: ${m}\n`),
      ...(scenario === "sse-retry" ? { fetch: observedFetch() } : {}),
    },
  );
  try {
    const tools = await connection.listTools();
    process.stderr.write(
      `era ${connection.era} ${connection.protocolVersion}; tools: ${tools.map((t) => t.name).join(", ")}\n`,
    );
    const call = calls[scenario];
    if (call && tools.some((t) => t.name === call.name)) {
      const result = await connection.callTool(call.name, call.arguments, { timeoutMs: 20_000 });
      process.stderr.write(`${call.name}: ${JSON.stringify(result)}\n`);
    }
    if (scenario === "sse-retry") process.stderr.write(timingLine());
  } finally {
    await connection.close();
  }
  process.exit(0);
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
