/**
 * servers/todo-enforcer: the list logic, the app in-process (an MCP client whose fetch is
 * `app.request`), and the server over a real port and over stdio under each runtime.
 */
import assert from "node:assert/strict";
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { createAgent } from "../mod.ts";
import { createApp } from "../servers/todo-enforcer/app.ts";
import {
  postCompactText,
  removalWarning,
  renderTodos,
  stopText,
  validateTodos,
} from "../servers/todo-enforcer/todo.ts";
import { MemoryStore } from "../servers/todo-enforcer/store.ts";
import {
  appFetch,
  httpClient,
  postJsonRpc,
  resultText,
  runServerToExit,
  serverRuntimes,
  sessionMeta,
  startServer,
  stdioClient,
} from "./helpers/hook-servers.ts";
import { repoRoot, runtime } from "./helpers/runtime.ts";

const MAIN = `${repoRoot}servers/todo-enforcer/main.ts`;
const STDIO = `${repoRoot}servers/todo-enforcer/stdio.ts`;

describe("todo list logic", () => {
  test("a valid list is normalised: titles trimmed, done defaults to false", () => {
    const checked = validateTodos([{ id: 2, title: "  Write the test " }, { id: 7, title: "Ship", done: true }]);
    assert.deepEqual(checked, {
      ok: true,
      items: [
        { id: 2, title: "Write the test", done: false },
        { id: 7, title: "Ship", done: true },
      ],
    });
  });

  test("invalid lists are rejected with a message saying what is wrong", () => {
    const error = (input: unknown) => {
      const checked = validateTodos(input);
      assert.equal(checked.ok, false);
      return checked.ok ? "" : checked.error;
    };
    assert.equal(error([{ id: 1, title: "a" }, { id: 1, title: "b" }]), "duplicate id 1");
    assert.equal(error([{ id: 3, title: "   " }]), "item 3: title is empty");
    assert.equal(error([{ id: 3, title: "x".repeat(201) }]), "item 3: title exceeds 200 characters");
    assert.match(error([{ id: 0, title: "a" }]), /id must be a whole number from 1 to 9999/);
    assert.match(error([{ id: 10000, title: "a" }]), /id must be a whole number from 1 to 9999/);
    assert.match(error([{ id: 1.5, title: "a" }]), /id must be a whole number/);
    assert.match(
      error(Array.from({ length: 51 }, (_, i) => ({ id: i + 1, title: "t" }))),
      /too many items: 51 \(max 50\)/,
    );
    assert.match(error([{ id: 1, title: "a\nb" }]), /control, bidi or zero-width/);
    assert.match(error([{ id: 1, title: "evil\u202Etxt.exe" }]), /control, bidi or zero-width/);
    assert.match(error([{ id: 1, title: "zero\u200Bwidth" }]), /control, bidi or zero-width/);
    assert.match(error([{ id: 1, title: "b\uFEFFom" }]), /control, bidi or zero-width/);
    assert.match(error([{ id: 1, title: "a", done: "yes" }]), /done must be true or false/);
    assert.match(error("nope"), /must be an array/);
  });

  test("200 characters are counted as characters, not UTF-16 units", () => {
    assert.equal(validateTodos([{ id: 1, title: "🙂".repeat(200) }]).ok, true);
  });

  test("renders one line per item and marks the first open item as next", () => {
    const items = [
      { id: 1, title: "Read the code", done: true },
      { id: 3, title: "Fix the bug", done: false },
      { id: 4, title: "Run the tests", done: false },
    ];
    assert.equal(renderTodos(items), "[x] 1. Read the code\n[ ] 3. Fix the bug  ← next\n[ ] 4. Run the tests");
    assert.equal(renderTodos([]), "(todo list is empty)");
  });

  test("_Stop objects while items are open and allows the stop otherwise", () => {
    assert.equal(
      stopText([{ id: 1, title: "a", done: false }]),
      "You have open todo items. Keep working.\n\n[ ] 1. a  ← next",
    );
    assert.equal(stopText([{ id: 1, title: "a", done: true }]), "");
    assert.equal(stopText([]), "");
  });

  test("_PostCompact returns the list under a heading while it is not empty", () => {
    assert.equal(postCompactText([{ id: 1, title: "a", done: true }]), "# Todo List\n[x] 1. a");
    assert.equal(postCompactText([]), "");
  });

  test("a replacement that silently drops open items is warned about by name", () => {
    const before = [
      { id: 1, title: "Keep", done: false },
      { id: 2, title: "Dropped open", done: false },
      { id: 3, title: "Dropped done", done: true },
    ];
    assert.equal(
      removalWarning(before, [{ id: 1, title: "Keep", done: false }]),
      "⚠️ 1 open item was removed from the list without being marked done: 2. Dropped open",
    );
    assert.equal(removalWarning(before, before), "");
  });

  test("the memory store forgets the least recently used session beyond its bound", async () => {
    const store = new MemoryStore({ maxSessions: 2 });
    assert.ok(await store.put("a", [{ id: 1, title: "a", done: false }], 0));
    assert.ok(await store.put("b", [{ id: 1, title: "b", done: false }], 0));
    await store.get("a");
    assert.ok(await store.put("c", [{ id: 1, title: "c", done: false }], 0));
    assert.equal(store.size, 2);
    assert.deepEqual(await store.get("b"), { items: [], version: 0 });
    assert.equal((await store.get("a")).items[0]?.title, "a");
  });
});

describe("todo-enforcer app in-process", () => {
  for (const mode of ["auto", "legacy"] as const) {
    test(`tools, hooks and validation work over the ${mode === "auto" ? "modern" : "legacy"} protocol`, async () => {
      const app = createApp();
      const client = await httpClient("http://127.0.0.1/mcp", { fetch: appFetch(app), mode });
      try {
        const names = (await client.listTools()).tools.map((tool) => tool.name).sort();
        assert.deepEqual(names, ["_PostCompact", "_SessionEnd", "_SessionStart", "_Stop", "todo"]);
        const meta = sessionMeta(`s-${mode}`);
        assert.equal(resultText(await client.callTool({ name: "_Stop", arguments: {}, ...meta })), "");
        assert.equal(resultText(await client.callTool({ name: "_PostCompact", arguments: {}, ...meta })), "");
        const todos = [{ id: 1, title: "Fix the bug" }, { id: 2, title: "Run the tests" }];
        assert.equal(
          resultText(await client.callTool({ name: "todo", arguments: { todos }, ...meta })),
          "[ ] 1. Fix the bug  ← next\n[ ] 2. Run the tests",
        );
        const stop = resultText(await client.callTool({ name: "_Stop", arguments: {}, ...meta }));
        assert.equal(
          stop,
          "You have open todo items. Keep working.\n\n[ ] 1. Fix the bug  ← next\n[ ] 2. Run the tests",
        );

        const bad = await client.callTool({
          name: "todo",
          arguments: { todos: [{ id: 1, title: "a" }, { id: 1, title: "b" }] },
          ...meta,
        });
        assert.equal(bad.isError, true);
        assert.match(resultText(bad), /duplicate id 1/);
        const tooMany = await client.callTool({
          name: "todo",
          arguments: { todos: Array.from({ length: 51 }, (_, i) => ({ id: i + 1, title: "t" })) },
          ...meta,
        });
        assert.equal(tooMany.isError, true);
        assert.equal(
          resultText(await client.callTool({ name: "todo", arguments: {}, ...meta })),
          "[ ] 1. Fix the bug  ← next\n[ ] 2. Run the tests",
          "the old list is kept",
        );

        const dropped = resultText(
          await client.callTool({
            name: "todo",
            arguments: { todos: [{ id: 1, title: "Fix the bug", done: true }] },
            ...meta,
          }),
        );
        assert.match(dropped, /1 open item was removed.*2\. Run the tests/);
        assert.equal(resultText(await client.callTool({ name: "_Stop", arguments: {}, ...meta })), "");
        assert.equal(
          resultText(await client.callTool({ name: "_PostCompact", arguments: {}, ...meta })),
          "# Todo List\n[x] 1. Fix the bug",
        );
      } finally {
        await client.close();
      }
    });
  }

  test("concurrent sessions keyed by sprout-agent/session never see each other's list", async () => {
    const app = createApp();
    const client = await httpClient("http://127.0.0.1/mcp", { fetch: appFetch(app) });
    try {
      const sessions = Array.from({ length: 12 }, (_, i) => `agent-${i}`);
      await Promise.all(
        sessions.map((id) =>
          client.callTool({
            name: "todo",
            arguments: { todos: [{ id: 1, title: `Task of ${id}` }] },
            ...sessionMeta(id),
          })
        ),
      );
      const stops = await Promise.all(
        sessions.map((id) => client.callTool({ name: "_Stop", arguments: {}, ...sessionMeta(id) })),
      );
      for (const [index, id] of sessions.entries()) {
        const text = resultText(stops[index]);
        assert.match(text, new RegExp(`Task of ${id}  ← next$`));
        assert.equal(text.split("\n").length, 3, "only this session's one item");
      }
      assert.equal(
        resultText(await client.callTool({ name: "_Stop", arguments: {} })),
        "",
        "a request without a session uses the shared default list",
      );
      await client.callTool({ name: "todo", arguments: { todos: [{ id: 9, title: "Shared" }] } });
      assert.match(resultText(await client.callTool({ name: "_Stop", arguments: {} })), /9\. Shared/);
      assert.doesNotMatch(
        resultText(await client.callTool({ name: "_Stop", arguments: {}, ...sessionMeta("agent-0") })),
        /Shared/,
      );
    } finally {
      await client.close();
    }
  });

  test("a bad Host or Origin header is refused (DNS-rebinding protection)", async () => {
    const app = createApp();
    const call = { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} };
    const badHost = await postJsonRpc("http://evil.example/mcp", call, { fetch: appFetch(app) });
    assert.equal(badHost.status, 403);
    const badOrigin = await postJsonRpc("http://127.0.0.1/mcp", call, {
      fetch: appFetch(app, { origin: "http://evil.example" }),
    });
    assert.equal(badOrigin.status, 403);
    const good = await postJsonRpc("http://127.0.0.1/mcp", call, {
      fetch: appFetch(app, { origin: "http://localhost:3000" }),
    });
    assert.equal(good.status, 200);
  });

  test("bound to a non-local address with allowed hosts, other Host headers and Origins are refused", async () => {
    const app = createApp({ host: "0.0.0.0", allowedHosts: ["hooks.example.test"] });
    const call = { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} };
    const bad = await postJsonRpc("http://evil.example/mcp", call, { fetch: appFetch(app) });
    assert.equal(bad.status, 403);
    const badOrigin = await postJsonRpc("http://hooks.example.test/mcp", call, {
      fetch: appFetch(app, { origin: "http://evil.example" }),
    });
    assert.equal(badOrigin.status, 403);
    const good = await postJsonRpc("http://hooks.example.test/mcp", call, {
      fetch: appFetch(app, { origin: "https://hooks.example.test" }),
    });
    assert.equal(good.status, 200);
  });

  test("bound to a non-local address without allowed hosts, the app is refused, naming allowedHosts", () => {
    for (const host of ["0.0.0.0", "::", "10.0.0.5"]) {
      assert.throws(() => createApp({ host }), /^Error: Cannot serve on ".+" without allowedHosts: /);
      assert.throws(() => createApp({ host, allowedHosts: [] }), /without allowedHosts/);
    }
  });

  test("the agent's error for a refused Host names the Host it sent and --allowed-hosts", async () => {
    const app = createApp({ allowedHosts: ["hooks.example.test"] });
    const agent = await createAgent({
      model: { provider: "scripted", turns: [] },
      mcpServers: { mcpServers: { todo: { type: "http", url: "http://127.0.0.1:8787/mcp" } } },
      fetch: appFetch(app) as typeof fetch,
    });
    try {
      assert.equal(agent.failures.length, 1);
      const message = agent.failures[0]!.message;
      assert.match(message, /HTTP 403: Invalid Host: 127\.0\.0\.1/);
      assert.match(message, /the Host "127\.0\.0\.1:8787" of its URL: add "127\.0\.0\.1" to the names it accepts/);
      assert.match(message, /--allowed-hosts/);
      assert.doesNotMatch(message, /Authorization/, "a Host refusal is not a credentials problem");
    } finally {
      await agent.close();
    }
  });

  test("with a token, /mcp refuses a missing or wrong bearer token and /health stays open", async () => {
    const app = createApp({ token: "s3cret" });
    const call = { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} };
    const missing = await postJsonRpc("http://127.0.0.1/mcp", call, { fetch: appFetch(app) });
    assert.equal(missing.status, 401);
    assert.equal((missing.body as { error: { code: number } }).error.code, -32001);
    const wrong = await postJsonRpc("http://127.0.0.1/mcp", call, {
      fetch: appFetch(app, { authorization: "Bearer nope" }),
    });
    assert.equal(wrong.status, 401);
    const client = await httpClient("http://127.0.0.1/mcp", {
      fetch: appFetch(app, { authorization: "Bearer s3cret" }),
    });
    try {
      assert.equal((await client.listTools()).tools.length, 5);
    } finally {
      await client.close();
    }
    const health = await appFetch(app)("http://127.0.0.1/health");
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: "ok", server: "todo-enforcer" });
  });

  test("malformed requests get JSON-RPC errors, never a crash", async () => {
    const app = createApp();
    const fetch = appFetch(app);
    const notJson = await postJsonRpc("http://127.0.0.1/mcp", "{not json", { fetch });
    assert.equal(notJson.status, 400);
    assert.equal((notJson.body as { error: { code: number } }).error.code, -32700);
    const unknownTool = await postJsonRpc("http://127.0.0.1/mcp", {
      jsonrpc: "2.0",
      id: 5,
      method: "tools/call",
      params: { name: "nope", arguments: {} },
    }, { fetch });
    assert.ok(unknownTool.status < 500);
    const after = await postJsonRpc(
      "http://127.0.0.1/mcp",
      { jsonrpc: "2.0", id: 6, method: "tools/list", params: {} },
      { fetch },
    );
    assert.equal(after.status, 200);
  });
});

describe("todo-enforcer as a process", () => {
  for (const which of serverRuntimes) {
    test(`main.ts under ${which} serves /mcp and /health on a free port and exits on SIGTERM`, async () => {
      const server = await startServer(MAIN, ["--port", "0"], which);
      try {
        assert.match(server.firstLine, /^listening on http:\/\/127\.0\.0\.1:\d+\/mcp$/);
        const health = await fetch(server.url.replace(/\/mcp$/, "/health"));
        assert.equal(health.status, 200);
        await health.body?.cancel();
        const client = await httpClient(server.url);
        try {
          await client.callTool({
            name: "todo",
            arguments: { todos: [{ id: 1, title: "Over the wire" }] },
            ...sessionMeta("real-port"),
          });
          const started = performance.now();
          const stop = resultText(await client.callTool({ name: "_Stop", arguments: {}, ...sessionMeta("real-port") }));
          assert.ok(performance.now() - started < 1000, "_Stop answers within 1 s");
          assert.match(stop, /1\. Over the wire/);
        } finally {
          await client.close();
        }
      } finally {
        const code = await server.stop();
        // Deno's node:child_process reports a child it sent SIGTERM to as killed (code null)
        // even when the child handled the signal and exited 0, so check the code elsewhere.
        if (runtime() !== "deno") assert.equal(code, 0, "graceful shutdown exits 0");
      }
    });

    test(`main.ts under ${which} refuses to bind beyond localhost without --allowed-hosts, naming it`, async () => {
      const refused = await runServerToExit(MAIN, ["--host", "0.0.0.0", "--store", "memory"], which);
      assert.equal(refused.code, 2);
      assert.equal(refused.stdout, "", "never listening");
      assert.match(refused.stderr, /^Cannot bind "0\.0\.0\.0" without --allowed-hosts: .*DNS rebinding/);
      const env = { ALLOWED_HOSTS: "hooks.example.test,127.0.0.1" };
      const server = await startServer(MAIN, ["--host", "0.0.0.0", "--store", "memory"], which, env);
      try {
        const url = `http://127.0.0.1:${new URL(server.url).port}/mcp`;
        const call = { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} };
        assert.equal((await postJsonRpc(url, call)).status, 200);
        assert.equal((await postJsonRpc(url, call, { headers: { origin: "http://evil.example" } })).status, 403);
      } finally {
        await server.stop();
      }
    });

    test(`main.ts under ${which}, copied without the lmdb package, says how to fix that`, async () => {
      // A hook author's copy: the folder alone (its own package.json), its packages installed
      // except the default store's.
      const dir = mkdtempSync(join(tmpdir(), "todo-copy-"));
      try {
        cpSync(join(repoRoot, "servers/todo-enforcer"), dir, { recursive: true });
        mkdirSync(join(dir, "node_modules"));
        for (const pkg of ["hono", "zod", "@hono", "@modelcontextprotocol"]) {
          symlinkSync(join(repoRoot, "node_modules", pkg), join(dir, "node_modules", pkg), "dir");
        }
        const missing = await runServerToExit(join(dir, "main.ts"), [], which, {
          cwd: dir,
          env: { XDG_STATE_HOME: dir },
        });
        assert.equal(missing.code, 1);
        assert.equal(missing.stdout, "");
        assert.match(missing.stderr, /^Cannot load the lmdb store: .*\n/);
        assert.match(missing.stderr, /npm install lmdb/);
        assert.match(missing.stderr, /--store memory/);
        const server = await startServer(join(dir, "main.ts"), ["--store", "memory"], which);
        await server.stop();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    test(`main.ts under ${which} requires the bearer token given by HOOK_SERVER_TOKEN`, async () => {
      const server = await startServer(MAIN, [], which, { HOOK_SERVER_TOKEN: "tok" });
      try {
        const call = { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} };
        assert.equal((await postJsonRpc(server.url, call)).status, 401);
        assert.equal((await postJsonRpc(server.url, call, { headers: { authorization: "Bearer tok" } })).status, 200);
      } finally {
        await server.stop();
      }
    });

    test(`stdio.ts under ${which} keeps one list for the whole process`, async () => {
      const client = await stdioClient(STDIO, [], which);
      try {
        assert.deepEqual((await client.listTools()).tools.map((tool) => tool.name).sort(), [
          "_PostCompact",
          "_SessionEnd",
          "_SessionStart",
          "_Stop",
          "todo",
        ]);
        await client.callTool({
          name: "todo",
          arguments: { todos: [{ id: 4, title: "Over stdio" }] },
          ...sessionMeta("one"),
        });
        assert.match(
          resultText(await client.callTool({ name: "_Stop", arguments: {}, ...sessionMeta("another") })),
          /4\. Over stdio/,
        );
        assert.equal(
          resultText(await client.callTool({ name: "_PostCompact", arguments: {} })),
          "# Todo List\n[ ] 4. Over stdio  ← next",
        );
      } finally {
        await client.close();
      }
    });
  }
});
