/**
 * Group `http`: hook-server throughput. autocannon (10 connections) POSTs the `tools/call` of
 * `_Stop` that our MCP client sends in the 2026-07-28 era (headers and body recorded from a
 * real `connectMcp` call) to the todo-enforcer's `main.ts`, and the same request to a minimal
 * Hono app that answers with the bytes the todo-enforcer answered (bench/fixtures/floor-server.ts),
 * both served the same way under each runtime. Requests per second; back to back after a
 * warm-up of each.
 * @module
 */
import autocannon from "autocannon";
import { connectMcp } from "../../lib/mcp/client.ts";
import { type Group, root, type Row, row } from "../harness.ts";
import { httpConfig, startHttpServer, TODO_HTTP } from "../servers.ts";

/** One recorded exchange: what our client sent for `tools/call`, and what came back. */
interface Exchange {
  headers: Record<string, string>;
  body: string;
  responseType: string;
  responseBody: string;
}

async function record(url: string): Promise<Exchange> {
  let exchange: Exchange | undefined;
  const recording = (async (input: string | URL | Request, init?: RequestInit) => {
    const response = await fetch(input, init);
    const body = typeof init?.body === "string" ? init.body : "";
    if (body.includes('"tools/call"')) {
      const headers: Record<string, string> = {};
      new Headers(init?.headers).forEach((value, key) => (headers[key] = value));
      const copy = response.clone();
      exchange = {
        headers,
        body,
        responseType: copy.headers.get("content-type") ?? "",
        responseBody: await copy.text(),
      };
    }
    return response;
  }) as typeof fetch;
  const conn = await connectMcp(httpConfig("todo", url), { sessionId: "bench", fetch: recording });
  try {
    await conn.callTool("_Stop", {});
  } finally {
    await conn.close();
  }
  if (exchange === undefined) throw new Error("Cannot record the tools/call request: none was sent");
  return exchange;
}

async function throughput(url: string, exchange: Exchange, seconds: number): Promise<number> {
  const result = await autocannon({
    url,
    method: "POST",
    headers: exchange.headers,
    body: exchange.body,
    connections: 10,
    duration: seconds,
  });
  // A stray reset at the end of a run is tolerated; more means the numbers are wrong.
  if (result.errors > result.requests.total / 100 || result.non2xx > 0) {
    throw new Error(
      `autocannon against ${url}: ${result.errors} errors (${result.timeouts} timeouts), ${result.non2xx} non-2xx answers`,
    );
  }
  return result.requests.average;
}

/** The `http` group. */
export const httpGroup: Group = {
  name: "http",
  title: "hook-server throughput (autocannon) vs a minimal Hono floor",
  async run({ quick, runtimes, log }) {
    const seconds = quick ? 1 : 4;
    const rows: Row[] = [];
    for (const which of runtimes) {
      log(`http: ${which}`);
      const server = await startHttpServer(TODO_HTTP, which);
      try {
        const exchange = await record(server.url);
        const floor = await startHttpServer(`${root}bench/fixtures/floor-server.ts`, which, {
          FLOOR_BODY: exchange.responseBody,
          FLOOR_TYPE: exchange.responseType,
        });
        try {
          await throughput(server.url, exchange, 1); // warm-up (JIT)
          await throughput(floor.url, exchange, 1);
          const subject = await throughput(server.url, exchange, seconds);
          const baseline = await throughput(floor.url, exchange, seconds);
          rows.push(row("http", `${which}: todo-enforcer _Stop vs minimal Hono`, subject, baseline, "req/s", true));
        } finally {
          await floor.stop();
        }
      } finally {
        await server.stop();
      }
    }
    return rows;
  },
};
