/**
 * Choosing the store from the command line: `--store` (`TODO_STORE`: `lmdb`, `redis` or
 * `memory`, default `lmdb`), `--store-path` (`TODO_STORE_PATH`, the LMDB folder) and
 * `--redis-url` (`REDIS_URL`). Each store's module is imported only when chosen, so a copy of
 * this folder needs only the package of the store it runs on.
 * @module
 */
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { MemoryStore, type TodoStore } from "./store.ts";

/** The `parseArgs` option table for the store flags. */
export const STORE_FLAGS = {
  store: { type: "string" },
  "store-path": { type: "string" },
  "redis-url": { type: "string" },
} as const;

/** Help lines for the store flags. */
export const STORE_USAGE = `  --store  where the lists live (env TODO_STORE, default lmdb):
           lmdb    a durable file, one instance (needs the lmdb package)
           redis   a Redis or Valkey server shared by several instances (needs redis)
           memory  this process only, lost on restart
  --store-path  the lmdb folder (env TODO_STORE_PATH, default $XDG_STATE_HOME/todo-enforcer,
           else ~/.local/state/todo-enforcer)
  --redis-url   the Redis server (env REDIS_URL, default redis://127.0.0.1:6379)`;

/** Which store to open, and where. */
export type StoreChoice =
  | { kind: "memory" }
  | { kind: "lmdb"; path: string }
  | { kind: "redis"; url: string };

/**
 * The store choice from parsed flags, then the environment, then the defaults.
 * @throws Error naming the value when `--store` is not one of the three kinds
 */
export function storeChoice(
  values: { store?: string | undefined; "store-path"?: string | undefined; "redis-url"?: string | undefined },
  env: Record<string, string | undefined>,
): StoreChoice {
  const kind = values.store ?? (env.TODO_STORE || "lmdb");
  if (kind === "memory") return { kind };
  if (kind === "redis") return { kind, url: values["redis-url"] ?? (env.REDIS_URL || "redis://127.0.0.1:6379") };
  if (kind === "lmdb") {
    const stateHome = env.XDG_STATE_HOME || join(env.HOME || homedir(), ".local", "state");
    return { kind, path: resolve(values["store-path"] ?? (env.TODO_STORE_PATH || join(stateHome, "todo-enforcer"))) };
  }
  throw new Error(`Invalid store "${kind}": expected lmdb, redis or memory`);
}

/**
 * Opens the chosen store.
 * @throws Error when the store's package cannot be loaded (saying how to install it or which
 *   `--store` needs none), the LMDB folder cannot be opened or Redis cannot be reached
 */
export async function openStore(choice: StoreChoice): Promise<TodoStore> {
  if (choice.kind === "memory") return new MemoryStore();
  if (choice.kind === "lmdb") {
    const { LmdbStore } = await load("lmdb", () => import("./store-lmdb.ts"));
    return await LmdbStore.open({ path: choice.path });
  }
  const { RedisStore } = await load("redis", () => import("./store-redis.ts"));
  return await RedisStore.connect({ url: choice.url });
}

/**
 * Imports a store's module, which imports its package. Each package is optional (only the
 * chosen store's is loaded), so a copy of this folder may well lack it: the runtime's own
 * "Cannot find package" then gets what to do about it.
 */
async function load<T>(pkg: "lmdb" | "redis", importer: () => Promise<T>): Promise<T> {
  try {
    return await importer();
  } catch (error) {
    const others = pkg === "lmdb" ? "--store memory (lists lost on restart)" : "--store lmdb or --store memory";
    throw new Error(
      `Cannot load the ${pkg} store: ${(error as Error).message.split("\n")[0]}\n` +
        `Install the package where this server runs (npm install ${pkg}, bun add ${pkg}, deno add npm:${pkg}), or run with ${others}`,
    );
  }
}

/** One line saying where the lists live, for stderr at start-up (the Redis password hidden). */
export function describeStore(choice: StoreChoice): string {
  if (choice.kind === "memory") return "todo lists in memory (lost on restart)";
  if (choice.kind === "lmdb") return `todo lists in "${choice.path}" (lmdb)`;
  return `todo lists in Redis at "${choice.url.replace(/\/\/[^@/]*@/, "//***@")}"`;
}
