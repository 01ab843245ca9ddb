/**
 * The `_Stop` request sprout-agent sends to a hook server over Streamable HTTP (lib/mcp/http.ts,
 * lib/mcp/era.ts), for bench/throughput.ts: modern (2026-07-28: the `_meta` envelope plus the
 * `Mcp-Method`/`Mcp-Name` headers) or legacy (2025-11-25: `MCP-Protocol-Version` negotiated by
 * `initialize`, no envelope). Both carry `_meta["sprout-agent/session"]` and the hook name.
 * @module
 */

/** The MCP era of a bench request. */
export type Era = "modern" | "legacy";

/** A request as plain data, for `fetch` and for autocannon alike. */
export interface BenchRequest {
  url: string;
  method: "POST";
  headers: Record<string, string>;
  body: string;
}

/** The `_Stop` call of agent session `sessionId` (default `"bench-session"`). */
export function benchRequest(era: Era, url: string, sessionId = "bench-session"): BenchRequest {
  const meta: Record<string, unknown> = { "sprout-agent/session": sessionId, "sprout-agent/hook": "_Stop" };
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
  };
  if (era === "modern") {
    meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28";
    meta["io.modelcontextprotocol/clientInfo"] = { name: "sprout-agent", version: "0.1.0" };
    meta["io.modelcontextprotocol/clientCapabilities"] = {};
    headers["mcp-protocol-version"] = "2026-07-28";
    headers["mcp-method"] = "tools/call";
    headers["mcp-name"] = "_Stop";
  } else {
    headers["mcp-protocol-version"] = "2025-11-25";
  }
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 7,
    method: "tools/call",
    params: { name: "_Stop", arguments: {}, _meta: meta },
  });
  return { url, method: "POST", headers, body };
}

/** The legacy `initialize` request the agent sends before any legacy call. */
export function initializeRequest(url: string): BenchRequest {
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "sprout-agent", version: "0.1.0" },
      _meta: { "sprout-agent/session": "bench-session" },
    },
  });
  return {
    url,
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body,
  };
}
