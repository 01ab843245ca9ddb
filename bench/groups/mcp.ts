/**
 * Group `mcp`: our MCP client (`connectMcp`, lib/mcp/client.ts) against the official v2 SDK
 * client (`@modelcontextprotocol/client`, `versionNegotiation: {mode: "auto"}`, so both speak
 * the 2026-07-28 revision) on the same todo-enforcer server under Bun, over stdio and over
 * Streamable HTTP: connect + `tools/list` + close (alternated), one `tools/call` of `_Stop`
 * (p50 and p99, mitata), 1000 sequential calls and 100 concurrent calls (back to back).
 * @module
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { measure } from "mitata";
import { connectMcp } from "../../lib/mcp/client.ts";
import type { McpServerConfig } from "../../lib/mcp/types.ts";
import { alternate, type Group, median, type Row, row, time } from "../harness.ts";
import { httpConfig, startHttpServer, stdioConfig, TODO_HTTP } from "../servers.ts";

/** The calls both clients answer, so one measurement loop drives either. */
interface Caller {
  call(): Promise<unknown>;
  close(): Promise<void>;
}

async function ours(config: McpServerConfig): Promise<Caller> {
  const conn = await connectMcp(config, { sessionId: "bench", initTimeoutMs: 60_000 });
  await conn.listTools();
  return {
    call: async () => {
      const result = await conn.callTool("_Stop", {});
      if (result.isError === true) throw new Error(`_Stop failed: ${JSON.stringify(result)}`);
    },
    close: () => conn.close(),
  };
}

async function sdk(config: McpServerConfig): Promise<Caller> {
  const client = new Client({ name: "sprout-bench", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
  const t = config.transport;
  const transport = t.type === "stdio"
    ? new StdioClientTransport({ command: t.command, args: t.args, env: t.env })
    : new StreamableHTTPClientTransport(new URL(t.url));
  await client.connect(transport);
  await client.listTools();
  return {
    call: async () => {
      const result = await client.callTool({ name: "_Stop", arguments: {} });
      if (result.isError === true) throw new Error(`_Stop failed: ${JSON.stringify(result)}`);
    },
    close: () => client.close(),
  };
}

async function sequential(caller: Caller, n: number): Promise<number> {
  return await time(async () => {
    for (let i = 0; i < n; i++) await caller.call();
  });
}

async function concurrent(caller: Caller, n: number): Promise<number> {
  return await time(() => Promise.all(Array.from({ length: n }, () => caller.call())));
}

/** The `mcp` group. */
export const mcpGroup: Group = {
  name: "mcp",
  title: "our MCP client vs the official v2 SDK client, same server",
  async run({ quick, log }) {
    const rows: Row[] = [];
    const server = await startHttpServer(TODO_HTTP, "bun");
    try {
      const transports: [string, McpServerConfig][] = [
        ["stdio", stdioConfig("todo", "bun")],
        ["http", httpConfig("todo", server.url)],
      ];
      for (const [label, config] of transports) {
        log(`mcp: ${label}`);
        const connects = await alternate(
          quick ? 2 : label === "stdio" ? 6 : 12,
          async () => await (await ours(config)).close(),
          async () => await (await sdk(config)).close(),
        );
        rows.push(
          row("mcp", `${label}: connect + list + close`, median(connects.subject), median(connects.baseline), "ms"),
        );
        const a = await ours(config);
        const b = await sdk(config);
        try {
          const opts = { min_cpu_time: (quick ? 50 : 400) * 1e6, max_samples: quick ? 200 : 5000 };
          const sa = await measure(() => a.call(), opts);
          const sb = await measure(() => b.call(), opts);
          rows.push(row("mcp", `${label}: call p50`, sa.p50 / 1e6, sb.p50 / 1e6, "ms"));
          rows.push(row("mcp", `${label}: call p99`, sa.p99 / 1e6, sb.p99 / 1e6, "ms"));
          const n = quick ? 100 : 1000;
          const seq = await alternate(1, () => sequential(a, n), () => sequential(b, n), 0);
          rows.push(row("mcp", `${label}: ${n} sequential calls`, seq.subject[0]!, seq.baseline[0]!, "ms"));
          const m = quick ? 20 : 100;
          const con = await alternate(quick ? 2 : 9, () => concurrent(a, m), () => concurrent(b, m));
          rows.push(row("mcp", `${label}: ${m} concurrent calls`, median(con.subject), median(con.baseline), "ms"));
        } finally {
          await a.close();
          await b.close();
        }
      }
    } finally {
      await server.stop();
    }
    return rows;
  },
};
