/**
 * Validation of ACP request params (SPEC section 11, issue 5): prompt content blocks → the
 * user's text, and ACP `mcpServers` → server configurations. Every failure is a JSON-RPC
 * -32602 error that says which field or block is wrong.
 * @module
 */

import { headerProblem, MAX_SERVERS, sanitizeServerNames } from "../mcp/config.ts";
import type { McpServerConfig } from "../mcp/types.ts";

/** JSON-RPC error codes used on the wire. */
export const RPC_ERRORS = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  /** Agent failures: the LLM failed after its retries, a server could not start. */
  agent: -32000,
} as const;

/** A JSON-RPC error to answer a request with. */
export class RpcError extends Error {
  /** The JSON-RPC error code, one of {@link RPC_ERRORS}. */
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.name = "RpcError";
    this.code = code;
  }
}

/**
 * A -32602 error for `method`.
 * @example invalidParams("session/new", "cwd must be an absolute path")
 */
export function invalidParams(method: string, detail: string): RpcError {
  return new RpcError(RPC_ERRORS.invalidParams, `Invalid params for ${method}: ${detail}`);
}

const invalid = invalidParams;

/**
 * A prompt's content blocks → the user text: `text` blocks as they are, `resource_link` blocks
 * as `[resource: <uri>]` lines; every other type is refused (we advertise none of them).
 * @throws {RpcError} -32602 naming the field or the block type
 * @example promptText([{ type: "text", text: "fix" }, { type: "resource_link", uri: "file:///a", name: "a" }]) // "fix\n[resource: file:///a]"
 */
export function promptText(raw: unknown): string {
  const method = "session/prompt";
  if (!Array.isArray(raw)) throw invalid(method, "prompt must be an array of content blocks");
  const parts: string[] = [];
  raw.forEach((block: unknown, i) => {
    if (typeof block !== "object" || block === null) throw invalid(method, `prompt[${i}] must be an object`);
    const b = block as Record<string, unknown>;
    if (b["type"] === "text") {
      if (typeof b["text"] !== "string") throw invalid(method, `prompt[${i}].text must be a string`);
      parts.push(b["text"]);
    } else if (b["type"] === "resource_link") {
      if (typeof b["uri"] !== "string" || b["uri"] === "") {
        throw invalid(method, `prompt[${i}].uri must be a non-empty string`);
      }
      parts.push(`[resource: ${b["uri"]}]`);
    } else {
      throw invalid(
        method,
        `prompt[${i}] has content type ${
          JSON.stringify(b["type"] ?? null)
        }, which is not supported (only text and resource_link)`,
      );
    }
  });
  const text = parts.join("\n");
  if (text.trim() === "") throw invalid(method, "prompt has no text");
  return text;
}

function pairs(method: string, at: string, raw: unknown): Record<string, string> {
  if (raw === undefined || raw === null) return {};
  if (!Array.isArray(raw)) throw invalid(method, `${at} must be an array of {name, value}`);
  const out: Record<string, string> = {};
  raw.forEach((item: unknown, i) => {
    const entry = item as { name?: unknown; value?: unknown } | null;
    if (
      typeof entry !== "object" || entry === null || typeof entry.name !== "string" || typeof entry.value !== "string"
    ) {
      throw invalid(method, `${at}[${i}] must be {name: string, value: string}`);
    }
    out[entry.name] = entry.value;
  });
  return out;
}

/** The `_meta` key of an ACP `mcpServers` entry that pins the server's MCP era (SPEC section 10). */
export const ACP_PROTOCOL_META_KEY = "sprout-agent/protocol";

/**
 * The era an entry pins through `_meta["sprout-agent/protocol"]` (`"modern"` or `"legacy"`),
 * as `{protocol}` to spread into its configuration; `{}` when it pins none.
 * @throws {RpcError} -32602 for a `_meta` that is not an object or another value
 */
function pinnedEra(method: string, at: string, meta: unknown): { protocol?: "modern" | "legacy" } {
  if (meta === undefined || meta === null) return {};
  if (typeof meta !== "object" || Array.isArray(meta)) throw invalid(method, `${at}._meta must be an object`);
  const value = (meta as Record<string, unknown>)[ACP_PROTOCOL_META_KEY];
  if (value === undefined) return {};
  if (value !== "modern" && value !== "legacy") {
    throw invalid(method, `${at}._meta[${JSON.stringify(ACP_PROTOCOL_META_KEY)}] must be "modern" or "legacy"`);
  }
  return { protocol: value };
}

/**
 * ACP `mcpServers` → server configurations: names sanitised (SPEC section 5.2), stdio servers
 * run in the session's `cwd`, `sse` refused (we advertise `mcpCapabilities.sse: false`), an
 * era pinned by `_meta["sprout-agent/protocol"]` (`"modern"` | `"legacy"`, as `protocol` in
 * `.mcp.json`).
 * @param cwd the session's absolute working folder
 * @throws {RpcError} -32602 naming the server and the field
 */
export function acpServers(raw: unknown, cwd: string): McpServerConfig[] {
  const method = "session/new";
  if (!Array.isArray(raw)) throw invalid(method, "mcpServers must be an array");
  if (raw.length > MAX_SERVERS) {
    throw invalid(method, `${raw.length} MCP servers given, at most ${MAX_SERVERS} are allowed`);
  }
  const entries = raw.map((item: unknown, i) => {
    if (typeof item !== "object" || item === null || Array.isArray(item)) {
      throw invalid(method, `mcpServers[${i}] must be an object`);
    }
    const s = item as Record<string, unknown>;
    if (typeof s["name"] !== "string" || s["name"].trim() === "") {
      throw invalid(method, `mcpServers[${i}].name must be a non-empty string`);
    }
    return s as Record<string, unknown> & { name: string };
  });
  const names = sanitizeServerNames(entries.map((s) => s.name));
  return entries.map((s, i): McpServerConfig => {
    const at = `mcpServers[${i}] (${JSON.stringify(s.name)})`;
    const name = names[i]!;
    const display = name === s.name ? {} : { displayName: s.name };
    const era = pinnedEra(method, at, s["_meta"]);
    const type = s["type"] ?? "stdio";
    if (type === "sse") {
      throw invalid(
        method,
        `${at} uses transport "sse", which sprout-agent does not support (mcpCapabilities.sse is false): use "http"`,
      );
    }
    if (type === "http") {
      const url = s["url"];
      if (typeof url !== "string" || !URL.canParse(url)) throw invalid(method, `${at}.url must be a valid URL`);
      const headers = pairs(method, `${at}.headers`, s["headers"]);
      for (const [key, value] of Object.entries(headers)) {
        const problem = headerProblem(key, value);
        if (problem !== undefined) throw invalid(method, `${at}.headers ${JSON.stringify(key)} ${problem}`);
      }
      return { name, ...display, ...era, transport: { type: "http", url, headers } };
    }
    if (type !== "stdio") throw invalid(method, `${at}.type ${JSON.stringify(type)} is not one of stdio, http`);
    const command = s["command"];
    if (typeof command !== "string" || command === "") {
      throw invalid(method, `${at}.command must be a non-empty string`);
    }
    const args = s["args"] ?? [];
    if (!Array.isArray(args) || args.some((a) => typeof a !== "string")) {
      throw invalid(method, `${at}.args must be an array of strings`);
    }
    return {
      name,
      ...display,
      ...era,
      transport: { type: "stdio", command, args: args as string[], env: pairs(method, `${at}.env`, s["env"]), cwd },
    };
  });
}
