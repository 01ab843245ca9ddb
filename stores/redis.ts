/**
 * A session store in Redis (or Valkey), so that agent instances behind a load balancer resume
 * each other's sessions (SPEC section 12.8). Outside the zero-dependency core: it needs the
 * `redis` package (node-redis 6; an optional peer dependency of sprout-agent, installed by those
 * who use this store), imported at the first call of a store made with `url` (a store given a
 * `client` imports nothing). Checked on Node 20, Bun and Deno against a real `redis-server`.
 *
 * Keys, for session `ID` under the prefix `P` (default `sprout-agent:session:`):
 * - `P ID:log`, a list: the transcript, one record's JSON per element, in order (the lines of
 *   the file store's `.jsonl` file, without their newlines);
 * - `P ID:meta`, a hash of the session's own data: `updated` (ISO 8601, the last append) and
 *   `bytes` (the transcript's size as JSON Lines), written in the same step as each append;
 * - `P ID:lock`, a string with a time to live while an agent writes the session: its claim.
 *
 * The list of sessions is a `SCAN` over the `:log` keys, each described by its own first
 * records: there is no index to lose. Each append is one Lua script (Redis runs it as one step):
 * it checks that the claim is still this writer's, then pushes the records and updates the hash,
 * so an append is all there or not at all, and a writer whose claim ran out never writes again.
 * How long transcripts outlive a Redis restart is Redis's own setting (`appendonly yes`).
 * @example
 * ```ts
 * import { createAgent } from "sprout-agent";
 * import { redisSessionStore } from "sprout-agent/stores/redis";
 *
 * const store = redisSessionStore({ url: "redis://sessions.internal:6379" });
 * const agent = await createAgent({ model, sessionStore: store, resume: "0b7e…" });
 * // … prompts …
 * await agent.close();
 * await store.close();
 * ```
 * @module
 */
import process from "node:process";
import { AgentError } from "../lib/util/errors.ts";
import {
  describeSession,
  recordLine,
  SESSION_ID_PATTERN,
  type SessionInfo,
  type SessionRead,
  type SessionRecord,
  type SessionStore,
  type SessionWriter,
} from "../lib/sessions/records.ts";

/**
 * What the store needs of a Redis client: node-redis's `sendCommand` (v6; any client whose
 * replies are node-redis's default types: strings, numbers, arrays, `null`). A client that is
 * not open yet is connected at the first call. The store never closes a client it was given.
 */
export interface RedisCommandClient {
  /** Sends one command, `["SET", key, value, …]`, and resolves with its reply. */
  sendCommand(args: string[]): Promise<unknown>;
  /** False until the client is connected (node-redis's `isOpen`). */
  readonly isOpen?: boolean;
  /** Connects the client (called when {@link RedisCommandClient.isOpen} is false). */
  connect?(): Promise<unknown>;
  /** The client's options; `url` (password hidden) becomes the store's `location`. */
  readonly options?: { url?: string | undefined } | undefined;
}

/** Options of {@link redisSessionStore}: `url` or `client`, exactly one. */
export interface RedisSessionStoreOptions {
  /**
   * `redis://[[user]:password@]host[:port][/db]` or `rediss://…` (TLS): the store makes its own
   * client, connects at the first call, and quits it on {@link RedisSessionStore.close}.
   */
  url?: string;
  /** A node-redis client instead of `url` (see {@link RedisCommandClient}); left open on close. */
  client?: RedisCommandClient;
  /** Prepended to every key: `<prefix><id>:log`, `:meta`, `:lock`. Default `sprout-agent:session:`. */
  prefix?: string;
  /**
   * How long a claim outlives its holder, in ms: the holder renews it every third of this
   * while it runs, so a process that stops (SIGKILL, a lost machine) frees its sessions after
   * at most this long. Default 15000; at least 100.
   */
  lockTtlMs?: number;
  /** How long the first connection may take, in ms (with `url`). Default 5000. */
  connectTimeoutMs?: number;
}

/** The Redis store: a {@link SessionStore} and its `close`. */
export interface RedisSessionStore extends SessionStore {
  /**
   * `redis://host:port…` with the credentials hidden (`redis://***@host:6379`), or `"redis"`
   * when a client was given without a URL.
   */
  readonly location: string;
  /**
   * Releases the claims still held by this store's writers, then quits the client the store
   * made (a client given as `client` is left open). Later calls reject. Idempotent; never rejects.
   */
  close(): Promise<void>;
}

/** Default of {@link RedisSessionStoreOptions.prefix}. */
export const DEFAULT_REDIS_SESSION_PREFIX = "sprout-agent:session:";
/** Default of {@link RedisSessionStoreOptions.lockTtlMs}, in ms. */
export const DEFAULT_REDIS_LOCK_TTL_MS = 15_000;

/** How many first records a list reads to find a session's `session` record, before reading it all. */
const HEAD_RECORDS = 32;

// KEYS: the list, the hash, the lock. ARGV: owner, TTL in ms, `updated`, bytes added, the records.
// Records are pushed 1000 at a time: Lua's unpack has a limit of a few thousand values.
const APPEND = `
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return 0 end
for i = 5, #ARGV, 1000 do
  redis.call('RPUSH', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
redis.call('HSET', KEYS[2], 'updated', ARGV[3])
redis.call('HINCRBY', KEYS[2], 'bytes', ARGV[4])
redis.call('PEXPIRE', KEYS[3], ARGV[2])
return 1`;

// KEYS: the list, the lock. ARGV: owner, TTL in ms, "1" for a resume (the list must exist) or "0".
const CLAIM = `
local present = redis.call('EXISTS', KEYS[1]) == 1
if ARGV[3] == '1' and not present then return 'missing' end
if ARGV[3] == '0' and present then return 'present' end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 'ok' end
return 'busy'`;

// KEYS: the lock. ARGV: owner, TTL in ms. 1 when renewed, 0 when the claim is no longer ours.
const RENEW = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])`;

// KEYS: the lock. ARGV: owner. Deletes the lock only while it is ours.
const RELEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])`;

/**
 * The Redis session store. Nothing connects until the first call; every call then names the
 * server when it fails. Claims: `SET <prefix><id>:lock OWNER NX PX lockTtlMs`, in one script
 * with the new-or-existing check, renewed every `lockTtlMs / 3` (an unref'd timer) while the
 * writer is open and released on its close only while still its own.
 * @throws {AgentError} `config` when neither or both of `url` and `client` are given, or
 *   `lockTtlMs` is below 100
 * @returns the store; its calls reject with `AgentError` `session` as every store's do (a bad
 *   id, an unknown id on resume, an id that already has a transcript for a new session, a
 *   session claimed by a live agent), and with `Error` `Cannot connect to Redis at "URL": …`
 *   or `Redis at "URL" failed: …` (password hidden) when the server cannot be reached:
 *   `createAgent` then runs a new session unsaved with a warning, and refuses a resume
 * @example
 * const store = redisSessionStore({ url: "redis://127.0.0.1:6379", lockTtlMs: 10_000 });
 * const { sessions } = await store.list({ cwd: "/work/project" });
 * await store.close();
 */
export function redisSessionStore(options: RedisSessionStoreOptions): RedisSessionStore {
  if ((options.url === undefined) === (options.client === undefined)) {
    throw new AgentError("config", "Invalid Redis session store options: give either url or client");
  }
  const lockTtlMs = options.lockTtlMs ?? DEFAULT_REDIS_LOCK_TTL_MS;
  if (!Number.isFinite(lockTtlMs) || lockTtlMs < 100) {
    throw new AgentError("config", `Invalid lockTtlMs: ${lockTtlMs} (at least 100 ms)`);
  }
  return new RedisStore(options, Math.round(lockTtlMs));
}

/** The client the store makes for `url`: calls fail at once while disconnected; it reconnects in the background. */
function newClient(redis: typeof import("redis"), url: string) {
  return redis.createClient({
    url,
    disableOfflineQueue: true,
    socket: { reconnectStrategy: (retries: number) => Math.min(100 * 2 ** retries, 2000) },
  });
}

type OwnClient = ReturnType<typeof newClient>;

class RedisStore implements RedisSessionStore {
  readonly location: string;
  readonly #options: RedisSessionStoreOptions;
  readonly #prefix: string;
  readonly #ttl: number;
  readonly #writers = new Set<RedisWriter>();
  #own: OwnClient | undefined;
  #connecting: Promise<RedisCommandClient> | undefined;
  #closed = false;

  constructor(options: RedisSessionStoreOptions, ttl: number) {
    this.#options = options;
    this.#prefix = options.prefix ?? DEFAULT_REDIS_SESSION_PREFIX;
    this.#ttl = ttl;
    const url = options.url ?? options.client?.options?.url;
    this.location = url === undefined ? "redis" : shownUrl(url);
  }

  /** The connected client: the one given, or the store's own, connected once (again after a failed try). */
  #client(): Promise<RedisCommandClient> {
    if (this.#closed) return Promise.reject(new Error(`The Redis session store (${this.location}) is closed`));
    this.#connecting ??= this.#connect().catch((error: unknown) => {
      this.#connecting = undefined;
      throw error;
    });
    return this.#connecting;
  }

  async #connect(): Promise<RedisCommandClient> {
    const given = this.#options.client;
    if (given !== undefined) {
      if (given.isOpen === false && given.connect !== undefined) {
        await this.#reach(given.connect(), `Cannot connect to Redis at "${this.location}"`);
      }
      return given;
    }
    let redis: typeof import("redis");
    try {
      // Loaded at the first call: importing the store costs nothing, and a store given a client needs no package.
      redis = await import("redis");
    } catch (error) {
      throw new Error(
        `Cannot connect to Redis at "${this.location}": the redis package is not installed (npm install redis): ${
          (error as Error).message
        }`,
        { cause: error },
      );
    }
    const client = newClient(redis, this.#options.url!);
    let lastError = "no answer";
    // Without a listener node-redis throws its errors; they are the detail of the next failure.
    client.on("error", (error: Error) => {
      lastError = error.message || error.name;
    });
    const timeoutMs = this.#options.connectTimeoutMs ?? 5000;
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
      const detail = (error as Error).message;
      throw new Error(
        `Cannot connect to Redis at "${this.location}": ${detail}${lastError === detail ? "" : ` (${lastError})`}`,
        { cause: error },
      );
    } finally {
      clearTimeout(timer);
    }
    this.#own = client;
    return client as unknown as RedisCommandClient;
  }

  /** `call`, its failure named after the server: the agent's warning or refusal says where. */
  async #reach<T>(call: Promise<T>, what = `Redis at "${this.location}" failed`): Promise<T> {
    try {
      return await call;
    } catch (error) {
      const detail = error instanceof Error ? error.message || error.name : String(error);
      throw new Error(`${what}: ${detail}`, { cause: error });
    }
  }

  /** Sends one command on the connected client. */
  async command(args: string[]): Promise<unknown> {
    const client = await this.#client();
    return await this.#reach(client.sendCommand(args));
  }

  #key(id: string, part: "log" | "meta" | "lock"): string {
    return `${this.#prefix}${id}:${part}`;
  }

  async claim(id: string, { existing }: { existing: boolean }): Promise<SessionWriter> {
    checkId(id);
    const log = this.#key(id, "log");
    const lock = this.#key(id, "lock");
    const owner = JSON.stringify({
      pid: process.pid,
      host: process.env["HOSTNAME"] ?? "localhost",
      at: new Date().toISOString(),
      token: crypto.randomUUID(),
    });
    const answer = await this.command(["EVAL", CLAIM, "2", log, lock, owner, String(this.#ttl), existing ? "1" : "0"]);
    if (answer === "missing") throw new AgentError("session", `No session ${JSON.stringify(id)} in ${this.location}`);
    if (answer === "present") {
      throw new AgentError(
        "session",
        `Session ${JSON.stringify(id)} already has a transcript in ${this.location}: resume it, or choose another id`,
      );
    }
    if (answer !== "ok") {
      const [holder, left] = await Promise.all([this.command(["GET", lock]), this.command(["PTTL", lock])]);
      throw new AgentError(
        "session",
        `Session ${JSON.stringify(id)} ${busy(holder, left, this.#ttl)} (${lock} in ${this.location})`,
      );
    }
    const writer = new RedisWriter(this, id, {
      keys: [log, this.#key(id, "meta"), lock],
      owner,
      ttl: this.#ttl,
      done: () => this.#writers.delete(writer),
    });
    this.#writers.add(writer);
    return writer;
  }

  async read(id: string): Promise<SessionRead | undefined> {
    checkId(id);
    const entries = await this.command(["LRANGE", this.#key(id, "log"), "0", "-1"]) as string[];
    if (entries.length === 0) return undefined;
    return parseEntries(entries, `session ${JSON.stringify(id)}`);
  }

  async list(options: { cwd?: string } = {}): Promise<{ sessions: SessionInfo[]; warnings: string[] }> {
    const ids = new Set<string>();
    const match = `${escapeGlob(this.#prefix)}*:log`;
    let cursor = "0";
    do {
      const [next, keys] = await this.command(["SCAN", cursor, "MATCH", match, "COUNT", "1000"]) as [string, string[]];
      cursor = String(next);
      for (const key of keys) {
        const id = key.slice(this.#prefix.length, -":log".length);
        if (SESSION_ID_PATTERN.test(id)) ids.add(id);
      }
    } while (cursor !== "0");
    const warnings: string[] = [];
    const sessions = await Promise.all([...ids].map(async (id): Promise<SessionInfo> => {
      try {
        return await this.#describe(id);
      } catch (error) {
        const problem = `cannot be read: ${(error as Error).message}`;
        warnings.push(`session ${JSON.stringify(id)} ${problem}`);
        return { id, cwd: "", title: "", created: "", updated: "", bytes: 0, problem };
      }
    }));
    const kept = options.cwd === undefined ? sessions : sessions.filter((s) => s.cwd === options.cwd);
    kept.sort((a, b) => (a.updated < b.updated ? 1 : a.updated > b.updated ? -1 : a.id < b.id ? -1 : 1));
    return { sessions: kept, warnings };
  }

  /** One session as the list shows it, from its first records and its hash (or, without the hash, its whole list). */
  async #describe(id: string): Promise<SessionInfo> {
    const log = this.#key(id, "log");
    const name = `session ${JSON.stringify(id)}`;
    const [head, meta] = await Promise.all([
      this.command(["LRANGE", log, "0", String(HEAD_RECORDS - 1)]) as Promise<string[]>,
      this.command(["HMGET", this.#key(id, "meta"), "updated", "bytes"]) as Promise<Array<string | null>>,
    ]);
    let entries = head;
    let read = parseEntries(head, name);
    const updated = meta[0] ?? null;
    const bytes = meta[1] ?? null;
    const whole = head.length === HEAD_RECORDS &&
      (!read.records.some((r) => r.type === "session") || updated === null || bytes === null);
    if (whole) {
      entries = await this.command(["LRANGE", log, "0", "-1"]) as string[];
      read = parseEntries(entries, name);
    }
    const file = {
      updated: updated ?? lastAt(read.records),
      bytes: bytes !== null ? Number(bytes) : entries.reduce((n, e) => n + byteLength(e) + 1, 0),
    };
    return describeSession(id, read, file);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    await Promise.all([...this.#writers].map((w) => w.close()));
    this.#closed = true;
    const own = this.#own;
    this.#own = undefined;
    this.#connecting = undefined;
    if (own === undefined) return;
    try {
      await own.close();
    } catch {
      own.destroy();
    }
  }
}

interface WriterSetup {
  /** The list, the hash, the lock. */
  keys: [string, string, string];
  owner: string;
  ttl: number;
  done: () => void;
}

class RedisWriter implements SessionWriter {
  readonly #store: RedisStore;
  readonly #id: string;
  readonly #setup: WriterSetup;
  readonly #timer: ReturnType<typeof setInterval>;
  #closed = false;
  /** Why the claim is no longer ours, once it is not. */
  #lost: string | undefined;

  constructor(store: RedisStore, id: string, setup: WriterSetup) {
    this.#store = store;
    this.#id = id;
    this.#setup = setup;
    this.#timer = setInterval(() => void this.#renew(), Math.max(Math.floor(setup.ttl / 3), 30));
    unrefTimer(this.#timer);
  }

  async #renew(): Promise<void> {
    if (this.#closed || this.#lost !== undefined) return;
    try {
      const renewed = await this.#store.command([
        "EVAL",
        RENEW,
        "1",
        this.#setup.keys[2],
        this.#setup.owner,
        String(this.#setup.ttl),
      ]);
      if (renewed !== 1 && !this.#closed) this.#lose();
    } catch {
      // The server is out of reach: the next tick tries again; the claim lasts its TTL meanwhile.
    }
  }

  #lose(): void {
    this.#lost = `Session ${JSON.stringify(this.#id)} is no longer claimed by this agent in ${this.#store.location} ` +
      `(its claim ran out or was taken over): nothing more is written to its transcript`;
    clearInterval(this.#timer);
  }

  async append(records: readonly SessionRecord[]): Promise<void> {
    if (this.#closed) throw new AgentError("session", "Cannot write the transcript: it is closed");
    if (this.#lost !== undefined) throw new AgentError("session", this.#lost);
    if (records.length === 0) return;
    const lines = records.map((r) => recordLine(r).slice(0, -1));
    const bytes = lines.reduce((n, line) => n + byteLength(line) + 1, 0);
    const [log, meta, lock] = this.#setup.keys;
    const args = ["EVAL", APPEND, "3", log, meta, lock, this.#setup.owner, String(this.#setup.ttl)];
    args.push(new Date().toISOString(), String(bytes), ...lines);
    const written = await this.#store.command(args);
    if (written !== 1) {
      this.#lose();
      throw new AgentError("session", this.#lost!);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    this.#setup.done();
    if (this.#lost !== undefined) return;
    try {
      await this.#store.command(["EVAL", RELEASE, "1", this.#setup.keys[2], this.#setup.owner]);
    } catch {
      // Out of reach: the claim runs out by itself within its TTL.
    }
  }
}

/** The records of a list's elements: an element that is not a JSON record is skipped with a warning naming it. */
function parseEntries(entries: readonly string[], name: string): SessionRead {
  const records: SessionRecord[] = [];
  const warnings: string[] = [];
  entries.forEach((entry, i) => {
    try {
      const value = JSON.parse(entry) as unknown;
      if (typeof value !== "object" || value === null || typeof (value as { type?: unknown }).type !== "string") {
        throw new Error("not a record");
      }
      records.push(value as SessionRecord);
    } catch {
      warnings.push(`${name}: element ${i + 1} of its list is not a JSON record: skipped`);
    }
  });
  return { records, warnings };
}

/** Why a claim was refused, from the lock's value and its time left. */
function busy(holder: unknown, left: unknown, ttl: number): string {
  let who = "another agent";
  try {
    const value = JSON.parse(String(holder)) as { pid?: unknown; host?: unknown; at?: unknown };
    if (typeof value.pid === "number" && typeof value.host === "string") {
      who = `process ${value.pid} on ${value.host}${typeof value.at === "string" ? ` since ${value.at}` : ""}`;
    }
  } catch {
    // Another program's lock value: say no more than that it is held.
  }
  const ms = typeof left === "number" && left > 0 ? left : ttl;
  return `is in use by ${who}: its claim ends when that agent closes the session, or within ${ms} ms of it stopping`;
}

/** The `at` of the last record that has one (a list without its hash), or `""`. */
function lastAt(records: readonly SessionRecord[]): string {
  for (let i = records.length - 1; i >= 0; i--) {
    const at = (records[i] as { at?: unknown }).at;
    if (typeof at === "string") return at;
  }
  return "";
}

function checkId(id: string): void {
  if (typeof id !== "string" || !SESSION_ID_PATTERN.test(id)) {
    throw new AgentError(
      "session",
      `Invalid session id ${JSON.stringify(id)}: 1 to 128 letters, digits, _, - or . (not starting with .)`,
    );
  }
}

/** `text` matched literally by a `SCAN MATCH` pattern. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, "\\$&");
}

function byteLength(text: string): number {
  return new TextEncoder().encode(text).length;
}

/** `url` with the credentials between `//` and `@` hidden. */
function shownUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, "//***@");
}

/** Lets the process exit while `timer` is pending (Node and Bun: `unref`; Deno: `Deno.unrefTimer`). */
function unrefTimer(timer: ReturnType<typeof setInterval>): void {
  if (typeof timer === "object" && timer !== null && "unref" in timer) (timer as { unref(): void }).unref();
  else if (typeof timer === "number") {
    (globalThis as { Deno?: { unrefTimer?(id: number): void } }).Deno?.unrefTimer?.(timer);
  }
}
