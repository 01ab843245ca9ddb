/**
 * The Redis session store (stores/redis.ts, SPEC section 12.8, issue 23) on a real
 * `redis-server` (tests/helpers/redis.ts): the store contract every store keeps (claims, a
 * session in use, new against existing, bad ids, the index-free list, damaged entries), two
 * agent instances on one Redis resuming each other's sessions, a claim renewed while its holder
 * lives and freed when the holder is killed with SIGKILL mid-turn (the child process of
 * tests/helpers/redis-session-agent.ts, under the runner's own runtime), and an unreachable
 * server named, password hidden. Skips, saying why, only where Redis cannot start.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { after, describe, test } from "node:test";
import { createAgent } from "../lib/agent/agent.ts";
import type { HistoryItem } from "../lib/conversation/types.ts";
import { INTERRUPTED_RESULT, type SessionRecord } from "../lib/sessions/records.ts";
import { AgentError } from "../lib/util/errors.ts";
import { type RedisSessionStore, redisSessionStore } from "../stores/redis.ts";
import { historyProblems } from "./helpers/history.ts";
import { startRedis } from "./helpers/redis.ts";
import { recordingModel } from "./helpers/recording-model.ts";
import { repoRoot, tsCommand } from "./helpers/runtime.ts";

const started = await startRedis();
const redis = "redis" in started ? started.redis : undefined;
const skip = "reason" in started ? `Redis cannot start here: ${started.reason}` : false;
if (skip !== false) console.log(`skipping the Redis session store tests: ${skip}`);
const url = redis?.url ?? "";

const stores: RedisSessionStore[] = [];
after(async () => {
  for (const store of stores) await store.close();
  await redis?.stop();
});

let prefixes = 0;
/** A prefix no other test uses: each test sees only its own sessions. */
function freshPrefix(): string {
  return `test-${prefixes++}-${Math.random().toString(16).slice(2)}:`;
}
/** A store (its own client) closed after the tests. */
function open(prefix: string, lockTtlMs?: number): RedisSessionStore {
  const store = redisSessionStore({ url, prefix, ...(lockTtlMs === undefined ? {} : { lockTtlMs }) });
  stores.push(store);
  return store;
}
/** Raw commands on the test's Redis, through a store's client. */
let rawStore: RedisSessionStore | undefined;
async function raw(args: string[]): Promise<unknown> {
  const store = rawStore ??= open("raw:");
  // The store sends its commands through this one method; the tests use it to plant damage.
  return await (store as unknown as { command(a: string[]): Promise<unknown> }).command(args);
}

const at = "2026-12-03T00:00:00.000Z";
const header = (id: string, cwd: string, title: string): SessionRecord => ({
  type: "session",
  at,
  version: 1,
  id,
  cwd,
  title,
  agent: "sprout-agent/test",
});
const userItems = (text: string): SessionRecord => ({ type: "items", at, items: [{ role: "user", text }] });
const isSession = (pattern: RegExp) => (e: unknown) =>
  e instanceof AgentError && e.code === "session" && pattern.test(e.message);

async function drain(run: AsyncIterable<unknown> & { result: Promise<unknown> }) {
  for await (const _ of run) { /* events */ }
  return await run.result;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("stores/ stays outside the core", () => {
  test("stores/redis.ts imports lib/ files, node: builtins and redis only; nothing in lib/ or mod.ts imports stores/", () => {
    const specifiers = (file: string) =>
      [...readFileSync(`${repoRoot}${file}`, "utf8").matchAll(/(?:^\s*import[^"']*|\bimport\(\s*)["']([^"']+)["']/gm)]
        .map((m) => m[1]!);
    const bad = specifiers("stores/redis.ts").filter((s) =>
      !(s.startsWith("node:") || s === "redis" || /^\.\.\/lib\/[\w/-]+\.ts$/.test(s))
    );
    assert.deepEqual(bad, []);
    assert.ok(specifiers("stores/redis.ts").includes("redis"));
    const core = [
      "mod.ts",
      "testing.ts",
      "cli.ts",
      ...readdirSync(`${repoRoot}lib`, { recursive: true }).map(String)
        .filter((f) => f.endsWith(".ts")).map((f) => `lib/${f}`),
    ];
    assert.deepEqual(core.filter((f) => specifiers(f).some((s) => s.includes("stores/"))), []);
  });
});

describe("redisSessionStore: the store contract (SPEC 12.1, 12.8)", { skip }, () => {
  test("one writer per session: a second claim is refused naming the session and its holder; close frees it", async () => {
    const prefix = freshPrefix();
    const [a, b] = [open(prefix), open(prefix)];
    const writer = await a.claim("s1", { existing: false });
    await assert.rejects(b.claim("s1", { existing: false }), isSession(/^Session "s1" is in use by process \d+ on /));
    await assert.rejects(a.claim("s1", { existing: false }), isSession(/is in use by process/));
    await writer.append([header("s1", "/p", "hello"), userItems("hello")]);
    await assert.rejects(b.claim("s1", { existing: true }), isSession(/^Session "s1" is in use by process/));
    await writer.close();
    await writer.close();
    await assert.rejects(writer.append([userItems("late")]), isSession(/it is closed/));
    const again = await b.claim("s1", { existing: true });
    await again.append([userItems("from b")]);
    await again.close();
    const read = await a.read("s1");
    assert.deepEqual(read?.records.map((r) => r.type), ["session", "items", "items"]);
    assert.deepEqual(read?.warnings, []);
    assert.equal(await raw(["EXISTS", `${prefix}s1:lock`]), 0, "the lock is gone once its writer closes");
  });

  test("bad ids, unknown ids and an id that has a transcript are refused with code session", async () => {
    const store = open(freshPrefix());
    await assert.rejects(store.claim("../etc/passwd", { existing: true }), isSession(/^Invalid session id/));
    await assert.rejects(store.claim("a:b", { existing: false }), isSession(/^Invalid session id/));
    await assert.rejects(store.read("a*"), isSession(/^Invalid session id/));
    await assert.rejects(
      store.claim("nope", { existing: true }),
      isSession(new RegExp(`^No session "nope" in ${url.replace(/[.]/g, "\\.")}$`)),
    );
    assert.equal(await store.read("nope"), undefined);
    const w = await store.claim("x", { existing: false });
    await w.close();
    await assert.rejects(store.claim("x", { existing: true }), /No session "x"/, "a claim alone writes nothing");
    const w2 = await store.claim("x", { existing: false });
    await w2.append([userItems("hi")]);
    await w2.close();
    await assert.rejects(store.claim("x", { existing: false }), isSession(/already has a transcript in redis:/));
  });

  test("the list: derived from the data, newest first, by cwd; a damaged entry or key is listed with its problem, hiding nothing", async () => {
    const prefix = freshPrefix();
    const store = open(prefix);
    for (const [id, cwd] of [["old", "/a"], ["mid", "/b"], ["new", "/a"]] as const) {
      const w = await store.claim(id, { existing: false });
      await w.append([header(id, cwd, `task ${id}`), userItems(`task ${id}`)]);
      await w.close();
      await sleep(5);
    }
    // Damage of every kind beside them: a list of garbage, a session whose first element is
    // damaged, a key of the wrong type, another prefix's session, a stray key.
    await raw(["RPUSH", `${prefix}garbage:log`, "\u0000 not json", '{"type":']);
    await raw(["RPUSH", `${prefix}bent:log`, "[1,2]", JSON.stringify(header("bent", "/a", "bent task"))]);
    await raw(["SET", `${prefix}wrong:log`, "a string"]);
    await raw(["RPUSH", `other-${prefix}elsewhere:log`, JSON.stringify(userItems("x"))]);
    await raw(["SET", `${prefix}index`, "{broken"]);
    const { sessions, warnings } = await store.list();
    const byId = new Map(sessions.map((s) => [s.id, s]));
    assert.deepEqual([...byId.keys()].sort(), ["bent", "garbage", "mid", "new", "old", "wrong"]);
    assert.deepEqual(
      sessions.filter((s) => ["old", "mid", "new"].includes(s.id)).map((s) => s.id),
      ["new", "mid", "old"],
      "newest update first",
    );
    const bytes = [header("new", "/a", "task new"), userItems("task new")].reduce(
      (n, r) => n + new TextEncoder().encode(`${JSON.stringify(r)}\n`).length,
      0,
    );
    assert.deepEqual({ ...byId.get("new"), updated: "" }, {
      id: "new",
      cwd: "/a",
      title: "task new",
      created: at,
      updated: "",
      bytes,
    });
    assert.match(byId.get("new")!.updated, /^\d{4}-\d\d-\d\dT/);
    assert.match(byId.get("garbage")?.problem ?? "", /element 1 of its list is not a JSON record/);
    assert.equal(byId.get("bent")?.problem, undefined, "a damaged first element is skipped, not a refusal");
    assert.equal(byId.get("bent")?.title, "bent task");
    assert.match(byId.get("wrong")?.problem ?? "", /^cannot be read: Redis at "redis:\/\/[^"]+" failed: WRONGTYPE/);
    assert.match(warnings.join("\n"), /session "wrong" cannot be read/);
    assert.deepEqual(
      new Set((await store.list({ cwd: "/a" })).sessions.map((s) => s.id)),
      new Set(["new", "old", "bent"]),
    );
    const bent = await store.read("bent");
    assert.deepEqual(bent?.warnings, ['session "bent": element 1 of its list is not a JSON record: skipped']);
    // The hash is the session's own data: without it the list computes size and time from the list.
    await raw(["DEL", `${prefix}old:meta`]);
    const old = (await store.list()).sessions.find((s) => s.id === "old");
    assert.equal(old?.bytes, byId.get("old")?.bytes);
    assert.equal(old?.updated, at);
  });

  test("a claim is renewed while its holder lives, and a writer whose claim was taken writes nothing more", async () => {
    const prefix = freshPrefix();
    const [a, b] = [open(prefix, 300), open(prefix, 300)];
    const writer = await a.claim("r", { existing: false });
    await writer.append([header("r", "/p", "r"), userItems("r")]);
    await sleep(1200); // four TTLs: only renewal keeps it
    await assert.rejects(b.claim("r", { existing: true }), isSession(/is in use by process/));
    // The claim is lost (as after a pause longer than the TTL) and another agent takes it.
    await raw(["SET", `${prefix}r:lock`, "another agent's claim"]);
    await assert.rejects(
      writer.append([userItems("after")]),
      isSession(/^Session "r" is no longer claimed by this agent in redis:/),
    );
    await assert.rejects(b.claim("r", { existing: true }), isSession(/^Session "r" is in use by another agent/));
    await writer.close();
    assert.equal(await raw(["GET", `${prefix}r:lock`]), "another agent's claim", "close leaves another's claim");
    assert.equal((await a.read("r"))?.records.length, 2);
  });

  test("location hides the password; an unreachable server is named; options are checked", async () => {
    const store = redisSessionStore({ url: "redis://user:secret@127.0.0.1:1", connectTimeoutMs: 1000 });
    assert.equal(store.location, "redis://***@127.0.0.1:1");
    await assert.rejects(store.list(), (e: Error) => {
      assert.ok(!(e instanceof AgentError) || e.code !== "session");
      assert.match(e.message, /^Cannot connect to Redis at "redis:\/\/\*\*\*@127\.0\.0\.1:1": /);
      assert.ok(!e.message.includes("secret"), e.message);
      return true;
    });
    await store.close();
    await assert.rejects(store.list(), /is closed/);
    assert.throws(() => redisSessionStore({}), /give either url or client/);
    assert.throws(() => redisSessionStore({ url, lockTtlMs: 10 }), /Invalid lockTtlMs: 10/);
  });
});

describe("createAgent on the Redis store: instances resume each other's sessions (SPEC 12.8)", { skip }, () => {
  test("two instances on one Redis: each resumes what the other wrote; while one holds it the other is refused", async () => {
    const prefix = freshPrefix();
    const first = await createAgent({
      model: recordingModel([{ text: "answer 1" }]),
      sessionStore: open(prefix),
      cwd: "/work/p",
    });
    const id = first.sessionId;
    await drain(first.prompt("prompt 1"));
    // Instance B, its own store and client, while A still holds the session.
    await assert.rejects(
      createAgent({ model: recordingModel([]), sessionStore: open(prefix), resume: id }),
      isSession(new RegExp(`^Session "${id}" is in use by process ${process.pid} on `)),
    );
    await first.close();
    const model = recordingModel([{ text: "answer 2" }]);
    const second = await createAgent({ model, sessionStore: open(prefix), resume: id });
    assert.equal(second.sessionId, id);
    await drain(second.prompt("prompt 2"));
    await second.close();
    const model3 = recordingModel([{ text: "answer 3" }]);
    const third = await createAgent({ model: model3, sessionStore: open(prefix), resume: id });
    await drain(third.prompt("prompt 3"));
    await third.close();
    const texts = model3.seen[0]!.map((h) =>
      h.role === "user" ? `u:${h.text}` : h.role === "assistant" ? `a:${h.text}` : h.role
    );
    assert.deepEqual(texts, ["u:prompt 1", "a:answer 1", "u:prompt 2", "a:answer 2", "u:prompt 3"]);
    const { sessions } = await open(prefix).list({ cwd: "/work/p" });
    assert.deepEqual(sessions.map((s) => [s.id, s.title]), [[id, "prompt 1"]], "one session is one transcript");
  });

  test("an unreachable Redis: a new session runs unsaved with a warning naming it; a resume is refused", async () => {
    const store = redisSessionStore({ url: "redis://:pw@127.0.0.1:1", connectTimeoutMs: 500 });
    const warnings: string[] = [];
    const agent = await createAgent({
      model: recordingModel([{ text: "hi" }]),
      sessionStore: store,
      onWarning: (m) => warnings.push(m),
    });
    await drain(agent.prompt("hello"));
    await agent.close();
    assert.match(
      warnings.join("\n"),
      /^Cannot connect to Redis at "redis:\/\/\*\*\*@127\.0\.0\.1:1": .*: this session is not saved$/m,
    );
    await assert.rejects(
      createAgent({ model: recordingModel([]), sessionStore: store, resume: "abc" }),
      /^Error: Cannot connect to Redis at "redis:\/\/\*\*\*@127\.0\.0\.1:1"/,
    );
    await store.close();
  });

  test("an instance killed with SIGKILL mid-turn: its claim runs out, another resumes a valid history and prompts on", {
    timeout: 60_000,
  }, async () => {
    const prefix = freshPrefix();
    const id = `killed-${Math.random().toString(16).slice(2)}`;
    const ttl = 2000;
    const [cmd, ...args] = tsCommand(`${repoRoot}tests/helpers/redis-session-agent.ts`);
    const child = spawn(cmd!, [...args, url, prefix, id, String(ttl)], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    const store = open(prefix, 1000);
    try {
      // Mid-turn: fs__hang runs and fs__read's result is written.
      const deadline = Date.now() + 45_000;
      const results = async () =>
        ((await store.read(id))?.records ?? []).filter((r) => r.type === "result").map((r) =>
          r.type === "result" ? r.item.toolCallId : ""
        );
      while (!(stdout.includes("hanging") && (await results()).includes("toolu_read"))) {
        assert.ok(child.exitCode === null, `the agent exited early: ${stderr}`);
        assert.ok(Date.now() < deadline, `the agent never reached fs__hang: ${stdout} ${stderr}`);
        await sleep(50);
      }
      child.kill("SIGKILL");
      await exited;
      const left = await raw(["PTTL", `${prefix}${id}:lock`]) as number;
      assert.ok(left > 0 && left <= ttl, `the dead holder's claim is still there, for at most its TTL (${left} ms)`);
      if (left > 500) {
        await assert.rejects(
          createAgent({ model: recordingModel([]), sessionStore: store, resume: id }),
          isSession(/is in use by process/),
        );
      }
      // Nothing renews it: within a few seconds a resume succeeds.
      const model = recordingModel([{ text: "carried on" }]);
      const warnings: string[] = [];
      let agent: Awaited<ReturnType<typeof createAgent>> | undefined;
      const until = Date.now() + 10_000;
      while (agent === undefined) {
        try {
          agent = await createAgent({ model, sessionStore: store, resume: id, onWarning: (m) => warnings.push(m) });
        } catch (error) {
          if (!isSession(/is in use by/)(error) || Date.now() > until) throw error;
          await sleep(100);
        }
      }
      try {
        assert.deepEqual(historyProblems(agent.history), []);
        const tool = (callId: string) =>
          agent!.history.find((h): h is Extract<HistoryItem, { role: "tool" }> =>
            h.role === "tool" && h.toolCallId === callId
          );
        assert.deepEqual(tool("toolu_read")?.content, [{ type: "text", text: "contents of a.txt" }]);
        assert.deepEqual(tool("toolu_hang")?.content, [{ type: "text", text: INTERRUPTED_RESULT }]);
        assert.equal(tool("toolu_hang")?.isError, true);
        assert.match(warnings.join("\n"), /1 tool call had no result: answered as interrupted/);
        await drain(agent.prompt("go on"));
        const sent = model.seen[0]!;
        assert.deepEqual(historyProblems(sent), []);
        assert.deepEqual(sent.filter((h) => h.role === "user").map((h) => (h as { text: string }).text), [
          "read a.txt, then wait",
          "go on",
        ]);
        assert.ok(sent.some((h) => h.role === "tool" && h.toolCallId === "toolu_hang"));
      } finally {
        await agent.close();
      }
      const records = (await store.read(id))!.records;
      assert.equal(records.filter((r) => r.type === "session").length, 1, "the same transcript goes on");
      assert.equal(records.at(-1)?.type, "end");
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
  });
});
