/**
 * `tools/list` paging (SPEC section 10): follows `nextCursor` until the last page, a repeated
 * cursor or {@link MAX_TOOL_PAGES} pages; skips nameless tools and repeated names; reads the
 * freshness of the whole list from the `ttlMs` of its pages (absent on all: fresh until a
 * change notice).
 * @module
 */

import { AgentError } from "../util/errors.ts";
import { toolsTtlMs } from "./list-changes.ts";
import type { McpTool } from "./types.ts";

/** `tools/list` pages followed at most (SPEC section 10). */
export const MAX_TOOL_PAGES = 100;

/** Options of {@link listToolPages}. */
export interface ListToolPagesOptions {
  /** The server's name, for errors and warnings. */
  name: string;
  /** A repeated cursor, the page limit, skipped tools. */
  warn: (message: string) => void;
}

/** Every tool of a server, and until when the list is fresh. */
export interface ToolPages {
  /** The tools in listing order, the first of each name. */
  tools: McpTool[];
  /**
   * When the list stops being fresh (`performance.now()` ms): the earliest expiry of its
   * pages' `ttlMs` hints, each page counted from its own arrival (the 2026-07-28 caching rules
   * for pagination). A page without a hint sets no limit; a list none of whose pages has one is
   * fresh until a change notice (`Infinity`).
   */
  freshUntil: number;
}

/**
 * Lists every page through `requestPage` (one `tools/list` request with `params`, decoded).
 * @throws whatever `requestPage` throws; {@link AgentError} `mcp` when a page has no
 *   `tools` list
 */
export async function listToolPages(
  requestPage: (params: Record<string, unknown>) => Promise<Record<string, unknown>>,
  options: ListToolPagesOptions,
): Promise<ToolPages> {
  const { name, warn } = options;
  const byName = new Map<string, McpTool>();
  const seen = new Set<string>();
  let duplicates = 0;
  let nameless = 0;
  let cursor: string | undefined;
  let freshUntil = Number.POSITIVE_INFINITY;
  for (let page = 0;; page++) {
    if (page === MAX_TOOL_PAGES) {
      warn(`Stopped listing the tools of server "${name}" after ${MAX_TOOL_PAGES} pages`);
      break;
    }
    const result: { tools?: unknown; nextCursor?: unknown; ttlMs?: unknown } = await requestPage(
      cursor === undefined ? {} : { cursor },
    );
    if (!Array.isArray(result.tools)) {
      throw new AgentError("mcp", `Request "tools/list" to server "${name}" failed: the result has no "tools" list`);
    }
    // Each page is fresh for its own ttlMs from its arrival; the list, until the first expires.
    const ttl = toolsTtlMs(result);
    if (ttl !== undefined) freshUntil = Math.min(freshUntil, performance.now() + ttl);
    for (const tool of result.tools) {
      const t = typeof tool === "object" && tool !== null && !Array.isArray(tool)
        ? tool as Record<string, unknown>
        : undefined;
      if (!t || typeof t.name !== "string" || t.name === "") {
        nameless++;
        continue;
      }
      if (byName.has(t.name)) duplicates++;
      else byName.set(t.name, t as McpTool);
    }
    const next = result.nextCursor;
    if (typeof next !== "string" || next === "") break;
    if (seen.has(next)) {
      warn(`Stopped listing the tools of server "${name}": it repeated cursor "${next}"`);
      break;
    }
    seen.add(next);
    cursor = next;
  }
  if (nameless > 0) {
    warn(
      `Skipped ${nameless} tool${nameless === 1 ? "" : "s"} of server "${name}" without a name (a non-empty string)`,
    );
  }
  if (duplicates > 0) warn(`Server "${name}" listed ${duplicates} tool names more than once; kept the first of each`);
  return { tools: [...byName.values()], freshUntil };
}
