/**
 * The shared store: the todo lists in a Redis (or Valkey) server, so that several instances of
 * the todo-enforcer behind a load balancer serve the same lists, and a restarted instance finds
 * them. Through `redis` (node-redis, Redis's own client; checked on Node 20, Bun 1.4 and Deno 2.9).
 *
 * Each session is one hash, `<prefix><session>` with fields `version` and `items` (JSON), that
 * expires `maxAgeMs` after its last write. The compare-and-set of {@link TodoStore.put} is a Lua
 * script: Redis runs a script as one step, so no other client's command lands between the
 * version check and the write, whichever instance sent it.
 *
 * How long the lists outlive a Redis restart is Redis's own setting (`appendonly yes` keeps
 * every acknowledged write up to the last `appendfsync`); this store does not change it.
 * @module
 */
import { createClient } from "redis";
import type { TodoItem } from "./todo.ts";
import type { TodoStore, VersionedList } from "./store.ts";

/** Options of {@link RedisStore.connect}. */
export interface RedisStoreOptions {
  /** `redis://[[user]:password@]host[:port][/db]` or `rediss://…` (TLS). */
  url: string;
  /** Prepended to every session id to make the key. Default `todo-enforcer:`. */
  prefix?: string;
  /** A session's list expires this long after its last write. Default 30 days. */
  maxAgeMs?: number;
  /** How long {@link RedisStore.connect} waits for the first connection. Default 5000 ms. */
  connectTimeoutMs?: number;
}

// KEYS[1]: the session's hash. ARGV: the expected version, the items as JSON, the TTL in ms.
// HGET of a missing field gives false in Lua, hence `or 0`.
const COMPARE_AND_SET = `
local current = tonumber(redis.call('HGET', KEYS[1], 'version') or 0)
if current ~= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'version', current + 1, 'items', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`;

/** A client that fails calls at once while disconnected, and reconnects in the background. */
function newClient(url: string) {
  return createClient({
    url,
    disableOfflineQueue: true,
    socket: { reconnectStrategy: (retries: number) => Math.min(100 * 2 ** retries, 2000) },
  });
}

type Client = ReturnType<typeof newClient>;

/** The todo lists in Redis or Valkey, shared by every instance connected to the same server. */
export class RedisStore implements TodoStore {
  #client: Client;
  #prefix: string;
  #maxAgeMs: number;
  /** The URL with its password hidden, for messages. */
  #shown: string;

  private constructor(client: Client, options: RedisStoreOptions) {
    this.#client = client;
    this.#shown = shownUrl(options.url);
    this.#prefix = options.prefix ?? "todo-enforcer:";
    this.#maxAgeMs = options.maxAgeMs ?? 30 * 24 * 3600_000;
  }

  /**
   * Connects to the server at `options.url`. While the connection is down later on, calls fail
   * at once (no queue that would hold an agent's hook call) and the client reconnects in the
   * background, backing off up to 2 s between attempts.
   * @throws Error naming the URL (password hidden) when no connection is made in `connectTimeoutMs`
   */
  static async connect(options: RedisStoreOptions): Promise<RedisStore> {
    const shown = shownUrl(options.url);
    const client = newClient(options.url);
    let lastError = "no answer";
    client.on("error", (error: Error) => {
      lastError = error.message || error.name;
    });
    const timeoutMs = options.connectTimeoutMs ?? 5000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        client.connect(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no connection in ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } catch (error) {
      client.destroy();
      throw new Error(`Cannot connect to Redis at "${shown}": ${(error as Error).message} (${lastError})`);
    } finally {
      clearTimeout(timer);
    }
    return new RedisStore(client, options);
  }

  /**
   * @throws Error `Redis at "URL" failed: …` when the call fails; while the connection is down
   *   that is at once, with node-redis's "The client is offline" as the detail
   */
  async get(session: string): Promise<VersionedList> {
    const [version, items] = await this.#reach(this.#client.hmGet(this.#prefix + session, ["version", "items"]));
    if (version === null || version === undefined || items === null || items === undefined) {
      return { items: [], version: 0 };
    }
    return { items: JSON.parse(items) as TodoItem[], version: Number(version) };
  }

  /** @throws Error `Redis at "URL" failed: …`, as {@link RedisStore.get} */
  async put(session: string, items: TodoItem[], expected: number): Promise<boolean> {
    const done = await this.#reach(this.#client.eval(COMPARE_AND_SET, {
      keys: [this.#prefix + session],
      arguments: [String(expected), JSON.stringify(items), String(this.#maxAgeMs)],
    }));
    return done === 1;
  }

  /** `call`, its failure named after the server: the hook's error (and the agent's warning) says where. */
  async #reach<T>(call: Promise<T>): Promise<T> {
    try {
      return await call;
    } catch (error) {
      const detail = error instanceof Error ? error.message || error.name : String(error);
      throw new Error(`Redis at "${this.#shown}" failed: ${detail}`, { cause: error });
    }
  }

  async close(): Promise<void> {
    await this.#client.close();
  }
}

/** `url` with the credentials between `//` and `@` hidden. */
function shownUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, "//***@");
}
