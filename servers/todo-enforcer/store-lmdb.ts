/**
 * The embedded durable store: the todo lists in an LMDB database (a folder holding `data.mdb`
 * and `lock.mdb`), through the `lmdb` package. The default store when serving over HTTP.
 *
 * Why LMDB (checked in December 2026 on Node 20, Bun 1.4 and Deno 2.9): it is one package that
 * runs on all three (a Node-API addon with prebuilt binaries on npm for Linux, macOS and
 * Windows; Deno needs `--allow-ffi`), it needs no server, a write is acknowledged only once it
 * is on disk, and its copy-on-write B-tree cannot be left half-written by a crash (a SIGKILL or
 * a power cut loses no acknowledged write and never corrupts the file). It has per-entry
 * versions with conditional writes (`ifVersion`), checked inside the write transaction, which
 * is exactly {@link TodoStore.put}. And concurrent writes in one event-loop turn share one
 * transaction and one disk flush, so 50 agents cost far less than 50 flushes.
 * The options weighed: `node:sqlite` is missing on Node 20, `bun:sqlite` exists only in Bun,
 * `better-sqlite3` does not load in Bun; the WASM SQLite builds were either in-memory with a
 * whole-file export (`sql.js`) or about 40 times slower here (`node-sqlite3-wasm`); a JSON file
 * rewritten per write (`lowdb`) grows slower with every session.
 * @module
 */
import { open, type RootDatabase } from "lmdb";
import type { TodoItem } from "./todo.ts";
import type { TodoStore, VersionedList } from "./store.ts";

/** What one entry holds: the list and when it was last written (ms since the epoch). */
interface Entry {
  items: TodoItem[];
  at: number;
}

/** Options of {@link LmdbStore.open}. */
export interface LmdbStoreOptions {
  /** The database folder, created when missing (with its parents). */
  path: string;
  /** Sessions not written for this long are deleted when the store opens. Default 30 days. */
  maxAgeMs?: number;
  /** The clock, in ms since the epoch, for write times and the age check. Default `Date.now`. */
  now?: () => number;
}

/** Default {@link LmdbStoreOptions.maxAgeMs}: 30 days. */
export const DEFAULT_MAX_AGE_MS = 30 * 24 * 3600_000;

/**
 * The todo lists in an LMDB database. One process at a time is the supported use (one
 * instance per file); run several instances on the Redis store (store-redis.ts) instead.
 */
export class LmdbStore implements TodoStore {
  #db: RootDatabase<Entry, string>;
  #now: () => number;

  private constructor(db: RootDatabase<Entry, string>, now: () => number) {
    this.#db = db;
    this.#now = now;
  }

  /**
   * Opens (or creates) the database at `options.path` and deletes sessions older than
   * `maxAgeMs`.
   * @throws Error naming the path when it cannot be opened (a file in the way, no permission)
   */
  static async open(options: LmdbStoreOptions): Promise<LmdbStore> {
    let db: RootDatabase<Entry, string>;
    try {
      db = open<Entry, string>({ path: options.path, useVersions: true, encoding: "json", compression: false });
    } catch (error) {
      throw new Error(`Cannot open the todo store "${options.path}": ${(error as Error).message}`);
    }
    const now = options.now ?? Date.now;
    const oldest = now() - (options.maxAgeMs ?? DEFAULT_MAX_AGE_MS);
    const stale: Promise<boolean>[] = [];
    for (const { key, value, version } of db.getRange({ versions: true })) {
      if (value.at < oldest && version !== undefined) stale.push(db.remove(key, version));
    }
    await Promise.all(stale);
    return new LmdbStore(db, now);
  }

  get(session: string): Promise<VersionedList> {
    const entry = this.#db.getEntry(session);
    if (entry === undefined) return Promise.resolve({ items: [], version: 0 });
    return Promise.resolve({ items: entry.value.items, version: entry.version ?? 0 });
  }

  put(session: string, items: TodoItem[], expected: number): Promise<boolean> {
    // The version check runs inside the write transaction, so it holds against any writer.
    const entry = { items, at: this.#now() };
    if (expected === 0) return this.#db.ifNoExists(session, () => void this.#db.put(session, entry, 1));
    return this.#db.put(session, entry, expected + 1, expected);
  }

  async close(): Promise<void> {
    await this.#db.close();
  }
}
