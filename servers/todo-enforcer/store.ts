/**
 * Where the todo lists live: the {@link TodoStore} interface, its in-memory implementation, and
 * {@link replaceList}, the one read-modify-write the `todo` tool does.
 *
 * Three stores implement the interface, one file each, so that a copy of this folder needs only
 * the packages of the store it uses:
 * - {@link MemoryStore} (here): one process's memory, gone on restart. Tests and stdio.
 * - `LmdbStore` (store-lmdb.ts): an embedded durable file (LMDB), survives a restart or a
 *   SIGKILL with no other service. The default over HTTP.
 * - `RedisStore` (store-redis.ts): a Redis or Valkey server shared by several instances.
 *
 * Every store keeps a version number per session, starting at 0 for a session never written,
 * plus one per successful write, and writes only through {@link TodoStore.put}'s compare-and-set.
 * That is what makes concurrent writers through different instances safe (see replaceList).
 * @module
 */
import type { TodoItem } from "./todo.ts";

/** A session's list together with its version (0: never written, or forgotten). */
export interface VersionedList {
  items: TodoItem[];
  version: number;
}

/**
 * The state of every agent session, keyed by session id. Implementations must make
 * {@link TodoStore.put} atomic: the version check and the write happen as one step, also
 * against writers in other processes that share the store.
 */
export interface TodoStore {
  /** The session's list and version; `{items: [], version: 0}` for a session never written. */
  get(session: string): Promise<VersionedList>;
  /**
   * Compare-and-set: replaces the session's list and sets its version to `expected + 1`, but
   * only if its version is still `expected`. Resolves `true` once the write is stored (for a
   * durable store: on disk), `false` when another write came first (nothing was written).
   * @throws Error when the store cannot be reached
   */
  put(session: string, items: TodoItem[], expected: number): Promise<boolean>;
  /** Releases files and connections. The store is unusable afterwards. */
  close(): Promise<void>;
}

/** Compare-and-set attempts {@link replaceList} makes before it gives up. */
export const MAX_ATTEMPTS = 50;

/** What {@link replaceList} did: the list it replaced and the version it wrote. */
export interface Replacement {
  /** Exactly the list this write replaced (its removal warning is computed against it). */
  before: TodoItem[];
  /** The version the new list got. */
  version: number;
}

/**
 * Replaces a session's list, atomically: reads the list and its version, then writes with
 * compare-and-set on that version, and starts over when another writer came first.
 *
 * A replacement list does not depend on the list it replaces, so "no lost update" here means
 * linearizability: every acknowledged write is one step in a single serial order per session,
 * and the `before` it returns (from which the `todo` tool warns about dropped open items) is
 * exactly the list of the step just before it. No write is silently overwritten by one that
 * never saw it: two concurrent writers through two instances are ordered, and the second one
 * reports the first one's list as what it replaced.
 * @throws Error after {@link MAX_ATTEMPTS} conflicts in a row, or when the store fails
 */
export async function replaceList(store: TodoStore, session: string, items: TodoItem[]): Promise<Replacement> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const current = await store.get(session);
    if (await store.put(session, items, current.version)) {
      return { before: current.items, version: current.version + 1 };
    }
  }
  throw new Error(`Cannot update the todo list: ${MAX_ATTEMPTS} other writes to it came first`);
}

/**
 * The lists in this process's memory. Bounded: beyond `maxSessions` (default 1000) the least
 * recently used session is forgotten (its version starts over at 0), so a server shared by many
 * short agent runs does not grow without limit. Lost on restart; one process only.
 */
export class MemoryStore implements TodoStore {
  #lists = new Map<string, VersionedList>();
  #maxSessions: number;

  constructor(options: { maxSessions?: number } = {}) {
    this.#maxSessions = options.maxSessions ?? 1000;
  }

  get(session: string): Promise<VersionedList> {
    const entry = this.#lists.get(session);
    if (entry === undefined) return Promise.resolve({ items: [], version: 0 });
    this.#lists.delete(session); // re-insert: Map order is our recency order
    this.#lists.set(session, entry);
    return Promise.resolve(entry);
  }

  put(session: string, items: TodoItem[], expected: number): Promise<boolean> {
    // Single-threaded: the check and the write below cannot interleave with another call.
    if ((this.#lists.get(session)?.version ?? 0) !== expected) return Promise.resolve(false);
    this.#lists.delete(session);
    this.#lists.set(session, { items, version: expected + 1 });
    while (this.#lists.size > this.#maxSessions) {
      const oldest = this.#lists.keys().next().value;
      if (oldest === undefined) break;
      this.#lists.delete(oldest);
    }
    return Promise.resolve(true);
  }

  close(): Promise<void> {
    this.#lists.clear();
    return Promise.resolve();
  }

  /** How many sessions hold a list. */
  get size(): number {
    return this.#lists.size;
  }
}
