/**
 * The shared-store load test's parts (issue 13), used by tests/store-load.test.ts and
 * bench/store-load.ts: a round-robin balancer on loopback, and simulated agents that drive the
 * todo-enforcer as sprout-agent does and check every answer against their own list.
 * @module
 */
import { Agent, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { connectMcp } from "../../lib/mcp/client.ts";
import type { McpConnection } from "../../lib/mcp/types.ts";
import { removalWarning, renderTodos, stopText, type TodoItem } from "../../servers/todo-enforcer/todo.ts";
import { resultText } from "./hook-servers.ts";

/** What the balancer did. */
export interface BalancerStats {
  /** Requests forwarded and answered by a backend. */
  forwarded: number;
  /** Attempts that failed to connect or lost their connection before any response, then went to the next backend. */
  retried: number;
  /** Requests no backend could answer (502). */
  failed: number;
}

/** A running balancer. */
export interface Balancer {
  /** `http://127.0.0.1:PORT/mcp`. */
  url: string;
  stats: BalancerStats;
  close(): Promise<void>;
}

/** How long a backend that failed is skipped before it is tried again (a passive health check). */
export const BACKEND_PAUSE_MS = 1000;

/**
 * A round-robin HTTP balancer on 127.0.0.1 in front of `backends` (their `/mcp` URLs). Each
 * request goes to the next backend that is not paused. When the connection is refused, or is
 * lost before the response starts (a backend killed mid-request), the backend is paused for
 * {@link BACKEND_PAUSE_MS} and the request is sent to the next one: what nginx does with
 * `proxy_next_upstream error non_idempotent`. That replay is safe for this server because every
 * call is idempotent in its effect (reads, hooks, and full-list replacements: writing the same
 * list twice leaves the same list). A request that reached no backend gets a 502.
 */
export async function startBalancer(backends: string[]): Promise<Balancer> {
  const targets = backends.map((url) => ({
    url: new URL(url),
    agent: new Agent({ keepAlive: true, maxSockets: 64 }),
    pausedUntil: 0,
  }));
  const stats: BalancerStats = { forwarded: 0, retried: 0, failed: 0 };
  let next = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const attempt = (left: number) => {
        const now = Date.now();
        let target = targets[next++ % targets.length];
        for (let i = 0; i < targets.length && target !== undefined && target.pausedUntil > now; i++) {
          target = targets[next++ % targets.length];
        }
        if (target === undefined || left === 0) {
          stats.failed++;
          res.writeHead(502, { "content-type": "application/json" });
          res.end(
            JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32603, message: "No backend answered" } }),
          );
          return;
        }
        const chosen = target;
        const headers = { ...req.headers, host: chosen.url.host };
        const upstream = request(
          {
            host: chosen.url.hostname,
            port: chosen.url.port,
            path: req.url,
            method: req.method,
            headers,
            agent: chosen.agent,
          },
          (response) => {
            stats.forwarded++;
            res.writeHead(response.statusCode ?? 502, response.headers);
            response.pipe(res);
          },
        );
        upstream.on("error", () => {
          if (res.headersSent) {
            res.destroy(); // the response had started: nothing safe to do but cut it
            return;
          }
          chosen.pausedUntil = Date.now() + BACKEND_PAUSE_MS;
          stats.retried++;
          attempt(left - 1);
        });
        upstream.end(body);
      };
      attempt(targets.length + 1);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    stats,
    close: () =>
      new Promise((resolve) => {
        for (const target of targets) target.agent.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The list agent `a` writes in its `k`th cycle: 1–4 items whose titles name both, some done. */
export function listFor(a: number, k: number): TodoItem[] {
  const count = 1 + ((a + k) % 4);
  return Array.from({ length: count }, (_, j) => ({
    id: j + 1 + (k % 7),
    title: `agent ${a} cycle ${k} item ${j}`,
    done: (a + k + j) % 3 === 0,
  }));
}

/** What {@link runAgents} saw. */
export interface LoadResult {
  /** MCP tool calls made (each one HTTP request). */
  requests: number;
  /** Write–read–_Stop cycles completed. */
  cycles: number;
  elapsedMs: number;
  /** Calls that failed or returned an error result. */
  errors: string[];
  /** Answers showing a list other than the agent's own last write (another agent's, an older one). */
  mixed: string[];
  /** Agents whose list, read at the end, is not their last acknowledged write. */
  lost: string[];
}

/**
 * Runs `agents` simulated agents against `url` for `durationMs`, each with sprout-agent's own
 * MCP client (`connectMcp`, one `sessionId` each). A cycle replaces the agent's list, reads it
 * back and calls `_Stop`; every answer must show exactly the agent's last write. A write's
 * echo may lack the removal warning when the balancer replayed it after the first attempt had
 * landed (then the replaced list was the same one): the list itself must still be exact.
 * At the end each agent reads its list once more.
 */
export async function runAgents(
  url: string,
  options: { agents: number; durationMs: number; runId: string },
): Promise<LoadResult> {
  const errors: string[] = [];
  const mixed: string[] = [];
  const lost: string[] = [];
  let requests = 0;
  let cycles = 0;
  const connections: McpConnection[] = [];
  try {
    for (let a = 0; a < options.agents; a++) {
      connections.push(
        await connectMcp(
          { name: "todo", transport: { type: "http", url, headers: {} } },
          { sessionId: `${options.runId}-agent-${a}`, onWarning: (m) => errors.push(`agent ${a} warning: ${m}`) },
        ),
      );
    }
    const call = async (c: McpConnection, name: string, args: Record<string, unknown>): Promise<string> => {
      requests++;
      const result = await c.callTool(name, args, { timeoutMs: 10_000 });
      if (result.isError === true) throw new Error(`${name} returned an error: ${resultText(result)}`);
      return resultText(result);
    };
    const lastWrite: TodoItem[][] = connections.map(() => []);
    const started = performance.now();
    const deadline = started + options.durationMs;
    const agent = async (a: number, c: McpConnection) => {
      for (let k = 0; performance.now() < deadline; k++) {
        const list = listFor(a, k);
        const previous = lastWrite[a] ?? [];
        try {
          const echo = await call(c, "todo", { todos: list });
          const warning = removalWarning(previous, list);
          const exact = warning === "" ? renderTodos(list) : `${warning}\n\n${renderTodos(list)}`;
          lastWrite[a] = list;
          if (echo !== exact && echo !== renderTodos(list)) mixed.push(`agent ${a} cycle ${k} write: ${echo}`);
          const read = await call(c, "todo", {});
          if (read !== renderTodos(list)) mixed.push(`agent ${a} cycle ${k} read: ${read}`);
          const stop = await call(c, "_Stop", {});
          if (stop !== stopText(list)) mixed.push(`agent ${a} cycle ${k} _Stop: ${stop}`);
          cycles++;
        } catch (error) {
          errors.push(`agent ${a} cycle ${k}: ${(error as Error).message}`);
        }
      }
    };
    await Promise.all(connections.map((c, a) => agent(a, c)));
    const elapsedMs = performance.now() - started;
    await Promise.all(connections.map(async (c, a) => {
      try {
        const read = await call(c, "todo", {});
        if (read !== renderTodos(lastWrite[a] ?? [])) lost.push(`agent ${a}: ${read}`);
      } catch (error) {
        errors.push(`agent ${a} final read: ${(error as Error).message}`);
      }
    }));
    return { requests, cycles, elapsedMs, errors, mixed, lost };
  } finally {
    await Promise.all(connections.map((c) => c.close()));
  }
}
