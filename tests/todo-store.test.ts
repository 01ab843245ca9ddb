/**
 * servers/todo-enforcer's stores (issue 13): the same contract for the memory, LMDB and Redis
 * stores; concurrent writers to one session lose no update, in-process and through two
 * instances sharing a real Redis server; the LMDB file and Redis keep every acknowledged write
 * when an instance is killed with SIGKILL. Redis is a real `redis-server` (tests/helpers/redis.ts);
 * its tests skip, saying why, only where it cannot start.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { createClient } from "redis";
import { createApp } from "../servers/todo-enforcer/app.ts";
import { MemoryStore, replaceList, type TodoStore } from "../servers/todo-enforcer/store.ts";
import { LmdbStore } from "../servers/todo-enforcer/store-lmdb.ts";
import { RedisStore } from "../servers/todo-enforcer/store-redis.ts";
import { describeStore, storeChoice } from "../servers/todo-enforcer/store-options.ts";
import type { TodoItem } from "../servers/todo-enforcer/todo.ts";
import {
  appFetch,
  httpClient,
  resultText,
  sessionMeta,
  type StartedServer,
  startServer,
} from "./helpers/hook-servers.ts";
import { startRedis } from "./helpers/redis.ts";
import { repoRoot, runtime } from "./helpers/runtime.ts";

const MAIN = `${repoRoot}servers/todo-enforcer/main.ts`;
const started = await startRedis();
const redis = "redis" in started ? started.redis : undefined;
const redisSkip = "reason" in started ? `Redis cannot start here: ${started.reason}` : false;
if (redisSkip !== false) console.log(`skipping the Redis store tests: ${redisSkip}`);

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "sprout-store-"));
  dirs.push(dir);
  return dir;
}
after(async () => {
  await redis?.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

let prefixes = 0;
/** Two handles on one store, as two instances would hold: the same object, or two connections. */
interface Kind {
  name: string;
  skip: string | false;
  open(): Promise<[TodoStore, TodoStore]>;
}
const kinds: Kind[] = [
  {
    name: "memory",
    skip: false,
    open: () => {
      const store = new MemoryStore();
      return Promise.resolve([store, store]);
    },
  },
  {
    name: "lmdb",
    skip: false,
    open: async () => {
      const store = await LmdbStore.open({ path: tempDir() });
      return [store, store];
    },
  },
  {
    name: "redis",
    skip: redisSkip,
    open: async () => {
      const prefix = `test-${prefixes++}-${Math.random().toString(16).slice(2)}:`;
      const url = redis?.url ?? "";
      return [await RedisStore.connect({ url, prefix }), await RedisStore.connect({ url, prefix })];
    },
  },
];

const item = (id: number, title: string, done = false): TodoItem => ({ id, title, done });

/**
 * Checks that concurrent replacements of one session's list form one serial order: each write
 * of `[item(w, "writer w")]` reports the list it replaced in its removal warning, so the
 * "replaced" links must chain all writes from the one that replaced the empty list to the one
 * whose list is final. A lost update shows as two writes naming the same predecessor.
 */
function assertOneChain(texts: Map<number, string>, finalText: string): void {
  const predecessor = new Map<number, number | undefined>();
  for (const [writer, text] of texts) {
    const named = /removed from the list without being marked done: (\d+)\. writer \d+\n/.exec(text);
    predecessor.set(writer, named === null ? undefined : Number(named[1]));
  }
  const roots = [...predecessor].filter(([, p]) => p === undefined).map(([w]) => w);
  assert.equal(roots.length, 1, `exactly one write replaced the empty list: ${roots.join(", ")}`);
  const successor = new Map<number, number>();
  for (const [writer, p] of predecessor) {
    if (p === undefined) continue;
    assert.ok(!successor.has(p), `writes ${successor.get(p)} and ${writer} both replaced writer ${p}'s list`);
    successor.set(p, writer);
  }
  let at = roots[0];
  const order: number[] = [];
  while (at !== undefined) {
    order.push(at);
    at = successor.get(at);
  }
  assert.equal(order.length, texts.size, `one chain through every write: ${order.join(" → ")}`);
  assert.match(finalText, new RegExp(`^\\[ \\] ${order.at(-1)}\\. writer ${order.at(-1)}  ← next$`));
}

for (const kind of kinds) {
  describe(`the ${kind.name} store`, { skip: kind.skip }, () => {
    test("a session never written is empty at version 0; a write at the current version lands, a stale one is refused", async () => {
      const [store, other] = await kind.open();
      try {
        assert.deepEqual(await store.get("s"), { items: [], version: 0 });
        assert.equal(await store.put("s", [item(1, "first")], 0), true);
        assert.deepEqual(await other.get("s"), { items: [item(1, "first")], version: 1 });
        assert.equal(await other.put("s", [item(2, "stale")], 0), false, "version 0 is gone");
        assert.equal(await other.put("s", [item(2, "second", true)], 1), true);
        assert.equal(await store.put("s", [item(3, "late")], 1), false, "the other handle wrote version 2");
        assert.deepEqual(await store.get("s"), { items: [item(2, "second", true)], version: 2 });
        assert.deepEqual(await store.get("t"), { items: [], version: 0 }, "sessions are separate");
      } finally {
        await store.close();
        if (other !== store) await other.close();
      }
    });

    test("100 concurrent read-modify-writes through two handles lose no update", async () => {
      const [store, other] = await kind.open();
      try {
        // Each writer appends its own item with compare-and-set, retrying on conflict.
        const append = async (handle: TodoStore, id: number) => {
          for (;;) {
            const { items, version } = await handle.get("shared");
            if (await handle.put("shared", [...items, item(id, `item ${id}`)], version)) return;
          }
        };
        await Promise.all(Array.from({ length: 100 }, (_, i) => append(i % 2 === 0 ? store : other, i + 1)));
        const { items, version } = await store.get("shared");
        assert.equal(version, 100);
        assert.deepEqual(items.map((i) => i.id).sort((a, b) => a - b), Array.from({ length: 100 }, (_, i) => i + 1));
      } finally {
        await store.close();
        if (other !== store) await other.close();
      }
    });

    test("30 concurrent todo calls on one session through two apps form one serial order", async () => {
      const [store, other] = await kind.open();
      const clients = await Promise.all(
        [store, other].map((s) => httpClient("http://127.0.0.1/mcp", { fetch: appFetch(createApp({ store: s })) })),
      );
      try {
        const meta = sessionMeta("contended");
        const texts = new Map<number, string>();
        await Promise.all(
          Array.from({ length: 30 }, async (_, i) => {
            const writer = i + 1;
            const client = clients[i % 2];
            assert.ok(client);
            const result = await client.callTool({
              name: "todo",
              arguments: { todos: [{ id: writer, title: `writer ${writer}` }] },
              ...meta,
            });
            assert.notEqual(result.isError, true, resultText(result));
            texts.set(writer, resultText(result));
          }),
        );
        const final = resultText(await clients[0]?.callTool({ name: "todo", arguments: {}, ...meta }));
        assertOneChain(texts, final);
        assert.equal((await store.get("contended")).version, 30, "every acknowledged write is one version");
      } finally {
        await Promise.all(clients.map((c) => c.close()));
        await store.close();
        if (other !== store) await other.close();
      }
    });

    test("replaceList returns exactly the list it replaced", async () => {
      const [store, other] = await kind.open();
      try {
        assert.deepEqual(await replaceList(store, "r", [item(1, "a")]), { before: [], version: 1 });
        assert.deepEqual(await replaceList(other, "r", [item(2, "b")]), { before: [item(1, "a")], version: 2 });
      } finally {
        await store.close();
        if (other !== store) await other.close();
      }
    });
  });
}

describe("store upkeep", () => {
  test("replaceList gives up, saying why, when other writers always come first", async () => {
    const busy: TodoStore = {
      get: () => Promise.resolve({ items: [], version: 0 }),
      put: () => Promise.resolve(false),
      close: () => Promise.resolve(),
    };
    await assert.rejects(
      replaceList(busy, "s", []),
      /^Error: Cannot update the todo list: 50 other writes to it came first$/,
    );
  });

  test("the LMDB store deletes sessions older than maxAgeMs when it opens, and keeps the others", async () => {
    const path = tempDir();
    let clock = 1_000_000;
    const now = () => clock;
    const store = await LmdbStore.open({ path, now });
    assert.ok(await store.put("old", [item(1, "old")], 0));
    clock += 5000;
    assert.ok(await store.put("new", [item(1, "new")], 0));
    await store.close();
    clock += 1000;
    const pruned = await LmdbStore.open({ path, now, maxAgeMs: 3000 });
    try {
      assert.deepEqual(await pruned.get("old"), { items: [], version: 0 }, "6 s old: deleted");
      assert.deepEqual(await pruned.get("new"), { items: [item(1, "new")], version: 1 }, "1 s old: kept");
    } finally {
      await pruned.close();
    }
  });

  test("a Redis session's hash expires maxAgeMs after its last write", { skip: redisSkip }, async () => {
    const store = await RedisStore.connect({ url: redis?.url ?? "", prefix: "ttl:", maxAgeMs: 60_000 });
    const client = createClient({ url: redis?.url ?? "" });
    await client.connect();
    try {
      assert.ok(await store.put("s", [item(1, "a")], 0));
      const ttl = await client.pTTL("ttl:s");
      assert.ok(ttl > 50_000 && ttl <= 60_000, `PTTL ${ttl}`);
      assert.deepEqual(await client.hGetAll("ttl:s"), { version: "1", items: JSON.stringify([item(1, "a")]) });
    } finally {
      await client.close();
      await store.close();
    }
  });
});

describe("choosing the store", () => {
  test("over HTTP the default is the LMDB folder under XDG_STATE_HOME, else ~/.local/state", () => {
    assert.deepEqual(storeChoice({}, { XDG_STATE_HOME: "/state" }), { kind: "lmdb", path: "/state/todo-enforcer" });
    assert.deepEqual(storeChoice({}, { HOME: "/home/u" }), {
      kind: "lmdb",
      path: "/home/u/.local/state/todo-enforcer",
    });
    assert.deepEqual(storeChoice({ "store-path": "/x" }, { TODO_STORE_PATH: "/y" }), { kind: "lmdb", path: "/x" });
    assert.deepEqual(storeChoice({}, { TODO_STORE: "memory" }), { kind: "memory" });
    assert.deepEqual(storeChoice({ store: "redis" }, {}), { kind: "redis", url: "redis://127.0.0.1:6379" });
    assert.deepEqual(storeChoice({}, { TODO_STORE: "redis", REDIS_URL: "redis://r:1" }), {
      kind: "redis",
      url: "redis://r:1",
    });
    assert.throws(() => storeChoice({ store: "sqlite" }, {}), /^Error: Invalid store "sqlite": expected lmdb, redis/);
    assert.equal(describeStore({ kind: "redis", url: "redis://u:pw@h:1" }), 'todo lists in Redis at "redis://***@h:1"');
  });

  test("an unreachable Redis is named in the error, password hidden", async () => {
    await assert.rejects(
      RedisStore.connect({ url: "redis://user:secret@127.0.0.1:1", connectTimeoutMs: 1000 }),
      (error: Error) => error.message.startsWith('Cannot connect to Redis at "redis://***@127.0.0.1:1"'),
    );
  });
});

describe("Redis going away", { skip: redisSkip }, () => {
  test('with the server stopped, reads and writes fail at once naming Redis and its URL, not just "offline"', async () => {
    const own = await startRedis();
    assert.ok("redis" in own, "a second redis-server starts");
    const store = await RedisStore.connect({ url: own.redis.url, prefix: "gone:" });
    try {
      assert.equal(await store.put("s", [], 0), true);
      await own.redis.stop();
      const named = (error: Error) => {
        assert.match(error.message, new RegExp(`^Redis at "${own.redis.url}" failed: `));
        return true;
      };
      await assert.rejects(store.get("s"), named);
      await assert.rejects(store.put("s", [], 1), named);
    } finally {
      await store.close().catch(() => {});
      await own.redis.stop();
    }
  });
});

/** Writes `title` as session `id`'s one open item through `url`, and returns what `_Stop` says there. */
async function writeAndStop(url: string, id: string, title: string): Promise<string> {
  const client = await httpClient(url);
  try {
    const result = await client.callTool({
      name: "todo",
      arguments: { todos: [{ id: 1, title }] },
      ...sessionMeta(id),
    });
    assert.notEqual(result.isError, true, resultText(result));
    return resultText(await client.callTool({ name: "_Stop", arguments: {}, ...sessionMeta(id) }));
  } finally {
    await client.close();
  }
}

async function stopText(url: string, id: string): Promise<string> {
  const client = await httpClient(url);
  try {
    return resultText(await client.callTool({ name: "_Stop", arguments: {}, ...sessionMeta(id) }));
  } finally {
    await client.close();
  }
}

function kill9(server: StartedServer): Promise<void> {
  return new Promise((resolve) => {
    server.child.once("exit", () => resolve());
    server.child.kill("SIGKILL");
  });
}

describe(`todo-enforcer instances under ${runtime()} killed with SIGKILL`, () => {
  test("with the default LMDB store, a restarted instance still objects with every acknowledged list", async () => {
    const stateHome = tempDir();
    const env = { XDG_STATE_HOME: stateHome };
    const first = await startServer(MAIN, ["--port", "0"], runtime(), env);
    try {
      for (let i = 0; i < 5; i++) {
        assert.match(await writeAndStop(first.url, `agent-${i}`, `Task of agent ${i}`), /open todo items/);
      }
      assert.ok(first.stderr().includes(`todo lists in "${join(stateHome, "todo-enforcer")}" (lmdb)`), first.stderr());
      await kill9(first);
    } finally {
      await first.stop();
    }
    const second = await startServer(MAIN, ["--port", "0"], runtime(), env);
    try {
      for (let i = 0; i < 5; i++) {
        assert.match(await stopText(second.url, `agent-${i}`), new RegExp(`1\\. Task of agent ${i}  ← next$`));
      }
      const client = await httpClient(second.url);
      try {
        const start = await client.callTool({ name: "_SessionStart", arguments: {}, ...sessionMeta("agent-0") });
        assert.match(resultText(start), /restored from an earlier run of this session\)\n\[ \] 1\. Task of agent 0/);
      } finally {
        await client.close();
      }
    } finally {
      await second.stop();
    }
  });

  test("two instances on one Redis serve the same lists; one killed, the other and its restart keep serving", {
    skip: redisSkip,
  }, async () => {
    const args = ["--port", "0", "--store", "redis", "--redis-url", redis?.url ?? ""];
    const a = await startServer(MAIN, args, runtime());
    let b = await startServer(MAIN, args, runtime());
    try {
      const id = `shared-${Math.random().toString(16).slice(2)}`;
      assert.match(await writeAndStop(a.url, id, "Written through A"), /Written through A/);
      assert.match(await stopText(b.url, id), /1\. Written through A {2}← next$/, "B sees A's write");
      await kill9(a);
      assert.match(await writeAndStop(b.url, id, "Written through B"), /Written through B/);
      await b.stop();
      b = await startServer(MAIN, args, runtime());
      assert.match(await stopText(b.url, id), /1\. Written through B {2}← next$/, "a restarted instance finds it");
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});
