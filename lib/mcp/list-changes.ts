/**
 * When a connection's tool list must be listed again (SPEC section 10): a legacy server's
 * unsolicited `notifications/tools/list_changed`; in the modern era, a `subscriptions/listen`
 * stream for `toolsListChanged` (opened, like the official v2 client's, when
 * `server/discover` advertises `tools.listChanged`), its acknowledgement and its end, and the
 * `ttlMs` freshness hint of each `tools/list` result. A modern list is fresh until its hint
 * elapses (at once for `ttlMs: 0`) or, when the server sent no hint, until a change notice or
 * the end of the subscription: the 2026-07-28 caching rules let a client without a hint rely
 * on "its own caching heuristics or notifications" (SPEC section 6.3).
 * @module
 */

import { AgentError, isAbortError } from "../util/errors.ts";
import { formatSeconds, withTimeout } from "../util/time.ts";
import type { JsonRpcId, JsonRpcPeer } from "./jsonrpc.ts";
import { asObject } from "../util/json.ts";

/**
 * Longest `ttlMs` honoured, in ms (24 h, the official v2 client's cap): a server cannot pin
 * its tool list for longer (SPEC section 10).
 */
export const MAX_TOOLS_TTL_MS = 86_400_000;
/**
 * How many times in a row a connection opens `subscriptions/listen` again after the server or
 * the transport ended it (at the next `listTools()`, which lists anyway); a subscription that
 * lasted {@link STABLE_SUBSCRIPTION_MS} resets the count. Past it, the freshness hint alone
 * decides when to list again.
 */
export const MAX_RESUBSCRIBES = 3;
/**
 * After a failed `tools/list`, how long (ms) a modern server's previous list counts as fresh
 * before the registry tries again (the specification lets a client serve a stale list when
 * re-fetching fails).
 */
export const RELIST_AFTER_FAILURE_MS = 60_000;
/** A subscription that lasted this long (ms) before it ended was not a failing one. */
export const STABLE_SUBSCRIPTION_MS = 60_000;
/**
 * Longest wait for the acknowledgement of `subscriptions/listen`, in ms (also bounded by the
 * connect or list timeout): past it the connection goes on without change notices.
 */
export const SUBSCRIBE_ACK_TIMEOUT_MS = 10_000;

const SUBSCRIPTION_ID_META_KEY = "io.modelcontextprotocol/subscriptionId";
const TOOLS_LIST_CHANGED = "notifications/tools/list_changed";

/**
 * The `ttlMs` freshness hint of one `tools/list` page in ms, as the 2026-07-28 caching rules
 * read it (SPEC section 10): a number is the hint, negative counting as 0 (stale at once) and
 * capped at {@link MAX_TOOLS_TTL_MS}; absent (or not a number, as the official v2 client reads
 * it) is `undefined`: no hint, so the client relies on "its own caching heuristics or
 * notifications", which for the agent means change notices alone (see `listToolPages`).
 * @example toolsTtlMs({ ttlMs: 60000 }) // 60000
 * @example toolsTtlMs({}) // undefined
 */
export function toolsTtlMs(result: { ttlMs?: unknown }): number | undefined {
  const ttl = result.ttlMs;
  if (typeof ttl !== "number" || Number.isNaN(ttl)) return undefined;
  return Math.min(Math.max(0, ttl), MAX_TOOLS_TTL_MS);
}

/** What a {@link ToolListChanges} needs from its connection. */
export interface ToolListChangesOptions {
  /** The server's name, for warnings. */
  name: string;
  /** The connection's current JSON-RPC peer (a stdio restart replaces it). */
  peer: () => JsonRpcPeer;
  /** The `_meta` of a request on the connection now. */
  meta: () => Record<string, unknown>;
  /** Whether the connection is closing, closed or dead. */
  closed: () => boolean;
  /** Non-fatal problems. */
  warn: (message: string) => void;
  /** The tool list changed or may have (`McpConnectOptions.onToolsChanged`). */
  changed: () => void;
}

/** A subscription to tool-list changes (`subscriptions/listen`), known by its request id. */
interface Subscription {
  id: JsonRpcId | undefined;
  /** Aborting ends it: `notifications/cancelled` (stdio) and the POST aborted (HTTP). */
  controller: AbortController;
  /** Settles the wait for the acknowledgement: the honoured filter, or why there is none. */
  acknowledged: (honoured: Record<string, unknown> | Error) => void;
  /** Acknowledged with `toolsListChanged`. */
  open: boolean;
  /** When it was acknowledged (`performance.now()` ms). */
  openedAt: number;
}

/**
 * The freshness of one connection's tool list and its subscription to changes. The
 * connection feeds it every server notification and brackets each listing with
 * {@link ToolListChanges.listStarted} and {@link ToolListChanges.listed} (or
 * {@link ToolListChanges.listFailed}).
 */
export class ToolListChanges {
  #o: ToolListChangesOptions;
  /** When the last tool list stops being fresh (`performance.now()` ms); -Infinity = stale. */
  #freshUntil = Number.NEGATIVE_INFINITY;
  /** Counts change notices, so a notice that arrives while listing leaves the new list stale. */
  #notices = 0;
  /** The server advertised `capabilities.tools.listChanged` in `server/discover`. */
  #announcesChanges = false;
  #subscription: Subscription | undefined;
  /** The server ended an acknowledged subscription: open it again at the next listing. */
  #relisten = false;
  #resubscribes = 0;
  #endWarned = false;

  /** Starts stale, with no subscription. */
  constructor(options: ToolListChangesOptions) {
    this.#o = options;
  }

  /** The freshness hint of the last list has elapsed, or a change made it stale. */
  get stale(): boolean {
    return performance.now() >= this.#freshUntil;
  }

  /** Records whether `server/discover` advertised `capabilities.tools.listChanged`. */
  announced(listChanged: boolean): void {
    this.#announcesChanges = listChanged;
  }

  /**
   * Change notices: `notifications/tools/list_changed` (unsolicited from a legacy server, on
   * the `subscriptions/listen` stream from a modern one) makes the list stale at once; the
   * acknowledgement and the server's `notifications/cancelled` drive the subscription.
   */
  notification(method: string, params: unknown): void {
    const p = asObject(params);
    const subscriptionId = asObject(p?._meta)?.[SUBSCRIPTION_ID_META_KEY];
    const sub = this.#subscription;
    if (method === TOOLS_LIST_CHANGED) {
      this.#notices++;
      this.#freshUntil = Number.NEGATIVE_INFINITY;
      this.#o.changed();
    } else if (method === "notifications/subscriptions/acknowledged") {
      if (sub !== undefined && sub.id !== undefined && subscriptionId === sub.id) {
        sub.acknowledged(asObject(p?.notifications) ?? {});
      }
    } else if (method === "notifications/cancelled") {
      if (sub !== undefined && sub.id !== undefined && p?.requestId === sub.id) {
        this.#o.peer().fail(sub.id, () => new AgentError("mcp", "the server cancelled it"), false);
      }
    }
  }

  /**
   * Opens `subscriptions/listen` for `toolsListChanged` (as the official v2 client does for
   * a `listChanged` option on a modern connection) when the server advertised
   * `capabilities.tools.listChanged`, and waits for its acknowledgement until `deadline`
   * (`Date.now()` ms). Over stdio the request shares the channel; over HTTP it is a POST
   * whose SSE answer stays open. Never throws: a refusal, a timeout or an unhonoured filter
   * is a warning, and the freshness hint (`ttlMs`) still applies.
   */
  async subscribe(deadline: number): Promise<void> {
    const o = this.#o;
    if (!this.#announcesChanges || this.#subscription !== undefined || o.closed()) return;
    const controller = new AbortController();
    let acknowledged!: (honoured: Record<string, unknown> | Error) => void;
    const ack = new Promise<Record<string, unknown> | Error>((resolve) => {
      acknowledged = resolve;
    });
    const sub: Subscription = { id: undefined, controller, acknowledged, open: false, openedAt: 0 };
    this.#subscription = sub;
    const listen = o.peer().request(
      "subscriptions/listen",
      { _meta: o.meta(), notifications: { toolsListChanged: true } },
      { signal: controller.signal, background: true, onId: (id) => (sub.id = id) },
    );
    listen.then(
      () => {
        acknowledged(new Error("the server ended it before acknowledging it"));
        this.#ended(sub, "the server ended it");
      },
      (error: unknown) => {
        acknowledged(error instanceof Error ? error : new Error(String(error)));
        this.#ended(sub, isAbortError(error) ? undefined : messageOf(error));
      },
    );
    const waitMs = Math.min(Math.max(1, deadline - Date.now()), SUBSCRIBE_ACK_TIMEOUT_MS);
    const outcome = await withTimeout(ack, waitMs);
    if (outcome === undefined || outcome instanceof Error) {
      const why = outcome === undefined ? `no acknowledgement within ${formatSeconds(waitMs)} s` : outcome.message;
      if (this.#subscription === sub) this.#subscription = undefined;
      controller.abort();
      if (!o.closed()) o.warn(`Cannot subscribe to the tool-list changes of server "${o.name}": ${why}`);
      return;
    }
    if (outcome.toolsListChanged !== true) {
      if (this.#subscription === sub) this.#subscription = undefined;
      this.#announcesChanges = false;
      controller.abort();
      o.warn(
        `Server "${o.name}" did not accept a subscription to its tool-list changes; relying on its freshness hint`,
      );
      return;
    }
    sub.open = true;
    sub.openedAt = performance.now();
  }

  /**
   * Before a listing: opens the subscription again when the server or the transport ended
   * it (at most {@link MAX_RESUBSCRIBES} times in a row), waiting up to `timeoutMs` for the
   * acknowledgement. Never throws.
   */
  async resubscribeIfEnded(timeoutMs: number): Promise<void> {
    if (this.#relisten && this.#subscription === undefined && this.#resubscribes < MAX_RESUBSCRIBES) {
      this.#relisten = false;
      this.#resubscribes++;
      await this.subscribe(Date.now() + timeoutMs);
    }
  }

  /** A listing begins: returns the mark to hand to {@link listed} or {@link listFailed}. */
  listStarted(): number {
    return this.#notices;
  }

  /**
   * A listing failed: the caller keeps the previous list, so let it serve
   * {@link RELIST_AFTER_FAILURE_MS} rather than wait on a failing server every round (a
   * change notice since `mark` still ends the wait).
   */
  listFailed(mark: number): void {
    if (this.#notices === mark) this.#freshUntil = performance.now() + RELIST_AFTER_FAILURE_MS;
  }

  /**
   * A listing succeeded: fresh until `freshUntil` (`performance.now()` ms), unless a change
   * notice arrived since `mark`.
   */
  listed(mark: number, freshUntil: number): void {
    this.#freshUntil = this.#notices === mark ? freshUntil : Number.NEGATIVE_INFINITY;
  }

  /**
   * A subscription ended: by us (nothing to do), or by the server or the transport: changes
   * may have been missed, so the list is stale and the subscription opens again at the next
   * listing (the first such end is a warning).
   */
  #ended(sub: Subscription, why: string | undefined): void {
    if (this.#subscription !== sub) return;
    this.#subscription = undefined;
    if (!sub.open || why === undefined || this.#o.closed()) return;
    if (performance.now() - sub.openedAt >= STABLE_SUBSCRIPTION_MS) this.#resubscribes = 0;
    if (!this.#endWarned) {
      this.#endWarned = true;
      this.#o.warn(
        `Server "${this.#o.name}" ended the subscription to its tool-list changes (${why}); listing its tools again and subscribing again`,
      );
    }
    this.#relisten = true;
    this.#freshUntil = Number.NEGATIVE_INFINITY;
    this.#o.changed();
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
