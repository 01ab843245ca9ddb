/**
 * The request plumbing both example servers share (servers/{todo-enforcer,test-gate}/app.ts):
 * server instances reused across modern requests never mix up answers or state, and the body
 * is served the same whether the app or the MCP handler reads it. In-process, with raw requests.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { describe, test } from "node:test";
import { createApp as createGateApp } from "../servers/test-gate/app.ts";
import { TestGate } from "../servers/test-gate/gate.ts";
import { createApp as createTodoApp } from "../servers/todo-enforcer/app.ts";
import { appFetch, modernToolCall, postJsonRpc, resultText } from "./helpers/hook-servers.ts";
import { ok, run } from "./helpers/pack.ts";
import { repoRoot, runsOnce } from "./helpers/runtime.ts";

const URL_ = "http://127.0.0.1/mcp";

type Answer = { status: number; body: unknown };

function resultOf(answer: Answer): { id: unknown; text: string } {
  const body = answer.body as { id?: unknown; result?: unknown; error?: { message: string } };
  assert.equal(answer.status, 200, JSON.stringify(body));
  assert.ok(body.result !== undefined, `a result, not ${JSON.stringify(body.error)}`);
  return { id: body.id, text: resultText(body.result) };
}

describe("todo-enforcer: reused server instances", () => {
  test("concurrent requests of many sessions, all with the same JSON-RPC id, each get their own session's answer", async () => {
    const fetch = appFetch(createTodoApp());
    const sessions = Array.from({ length: 24 }, (_, i) => `agent-${i}`);
    const call = (name: string, args: Record<string, unknown>, session: string) => {
      const { message, headers } = modernToolCall(1, name, args, session);
      return postJsonRpc(URL_, message, { fetch, headers });
    };
    await Promise.all(
      sessions.map(async (session) => {
        const set = await call("todo", { todos: [{ id: 1, title: `Task of ${session}` }] }, session);
        assert.match(resultOf(set).text, new RegExp(`Task of ${session}  ← next$`));
      }),
    );
    // Several rounds, so later requests are served by instances that earlier ones used.
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(sessions.map((session) => call("_Stop", {}, session)));
      for (const [index, session] of sessions.entries()) {
        const { id, text } = resultOf(answers[index]!);
        assert.equal(id, 1);
        assert.match(text, new RegExp(`Task of ${session}  ← next$`), `round ${round}, ${session}`);
        assert.equal(text.split("\n").length, 3, "only this session's one item");
      }
    }
  });

  test("modern and legacy requests interleaved on one app all succeed", async () => {
    const fetch = appFetch(createTodoApp());
    const legacyHeaders = { "mcp-protocol-version": "2025-11-25" };
    const requests = Array.from({ length: 20 }, (_, i) => {
      if (i % 2 === 0) {
        const { message, headers } = modernToolCall(i, "_Stop", {}, `s-${i}`);
        return postJsonRpc(URL_, message, { fetch, headers });
      }
      const message = { jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "_Stop", arguments: {} } };
      return postJsonRpc(URL_, message, { fetch, headers: legacyHeaders });
    });
    const answers = await Promise.all(requests);
    for (const [index, answer] of answers.entries()) {
      const { id, text } = resultOf(answer);
      assert.equal(id, index);
      assert.equal(text, "");
    }
  });
});

describe("todo-enforcer: request bodies", () => {
  const stop = modernToolCall(3, "_Stop", {}, "body-test");

  test("a JSON body without Content-Length (chunked) is served like one with it", async () => {
    const app = createTodoApp();
    const bytes = new TextEncoder().encode(JSON.stringify(stop.message));
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes);
        controller.close();
      },
    });
    const response = await app.request(URL_, {
      method: "POST",
      headers: {
        host: "127.0.0.1",
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...stop.headers,
      },
      body,
      duplex: "half",
    } as RequestInit);
    assert.equal(response.status, 200);
    assert.equal((await response.json() as { id: unknown }).id, 3);
  });

  test("an oversized body gets 413 and a non-JSON content type 415, both as JSON-RPC errors", async () => {
    const fetch = appFetch(createTodoApp());
    const huge = JSON.stringify({ ...(stop.message as object), padding: "x".repeat(5 * 1024 * 1024) });
    const tooLarge = await postJsonRpc(URL_, huge, { fetch, headers: stop.headers });
    assert.equal(tooLarge.status, 413);
    assert.equal((tooLarge.body as { error: { code: number } }).error.code, -32000);
    const plain = await postJsonRpc(URL_, stop.message, {
      fetch,
      headers: { ...stop.headers, "content-type": "text/plain" },
    });
    assert.equal(plain.status, 415);
    const notJson = await postJsonRpc(URL_, "{not json", { fetch, headers: stop.headers });
    assert.equal(notJson.status, 400);
    assert.equal((notJson.body as { error: { code: number } }).error.code, -32700);
    const after = await postJsonRpc(URL_, stop.message, { fetch, headers: stop.headers });
    assert.equal(resultOf(after).text, "", "the app still answers afterwards");
  });
});

describe("test-gate: reused server instances", () => {
  test("concurrent _Stop calls on one app each get an answer with their own id", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "gate-http-"));
    writeFileSync(join(cwd, "index.ts"), "export const x = 1;\n");
    const gate = new TestGate({ command: [process.execPath, "-e", ""], cwd });
    try {
      const fetch = appFetch(createGateApp({ gate }));
      for (let round = 0; round < 3; round++) {
        const answers = await Promise.all(
          Array.from({ length: 16 }, (_, i) => {
            const { message, headers } = modernToolCall(100 * round + i, "_Stop", {}, `s-${i}`);
            return postJsonRpc(URL_, message, { fetch, headers });
          }),
        );
        for (const [index, answer] of answers.entries()) {
          const { id, text } = resultOf(answer);
          assert.equal(id, 100 * round + index);
          // The first round may find the suite still running; once it passed, _Stop allows the stop.
          if (round > 0) assert.equal(text, "", `round ${round}`);
        }
        if (round === 0) await gate.runTests();
      }
    } finally {
      gate.close();
      rmSync(cwd, { recursive: true, force: true });
    }
  });
});

describe("each example server folder has what a copy needs", () => {
  const rootPackage = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8"));
  const tested: Record<string, string> = { ...rootPackage.dependencies, ...rootPackage.devDependencies };
  for (const name of ["hello-hook", "todo-enforcer", "test-gate"]) {
    const folder = join(repoRoot, "servers", name);
    test(`${name}: its own package.json names every package its files import, at the versions tested here`, () => {
      const pkg = JSON.parse(readFileSync(join(folder, "package.json"), "utf8"));
      assert.equal(pkg.type, "module", "the sources are ES modules");
      const declared: Record<string, string> = { ...pkg.dependencies, ...pkg.devDependencies };
      for (const file of readdirSync(folder).filter((f) => f.endsWith(".ts"))) {
        const text = readFileSync(join(folder, file), "utf8");
        for (const [, spec] of text.matchAll(/(?:from |import\()"([^".][^"]*)"/g)) {
          if (spec!.startsWith("node:")) continue;
          const pkgName = spec!.startsWith("@") ? spec!.split("/").slice(0, 2).join("/") : spec!.split("/")[0]!;
          assert.ok(declared[pkgName] !== undefined, `${file} imports ${spec}, which package.json does not name`);
        }
      }
      for (const tool of ["tsx", "typescript", "@types/node"]) assert.ok(declared[tool], `${tool} for Node`);
      for (const [dep, range] of Object.entries(declared)) {
        if (dep !== "sprout-agent") assert.equal(range, tested[dep], `${dep}: the range the repository tests`);
      }
      // Every script runs a file of the folder; `check` type-checks with the folder's tsconfig.json.
      for (const [script, command] of Object.entries<string>(pkg.scripts)) {
        for (const [, file] of command.matchAll(/([\w.-]+\.ts)\b/g)) {
          assert.ok(existsSync(join(folder, file!)), `script ${script} runs ${file}, which the folder lacks`);
        }
      }
      assert.equal(pkg.scripts.check, "tsc --noEmit -p tsconfig.json");
      assert.ok(existsSync(join(folder, "tsconfig.json")));
    });
  }

  test("todo-enforcer and test-gate type-check with their own tsconfig.json (npm run check)", {
    skip: !runsOnce && "runs once, under bun",
  }, async () => {
    for (const name of ["todo-enforcer", "test-gate"]) {
      const folder = join(repoRoot, "servers", name);
      ok(await run(join(repoRoot, "node_modules/.bin/tsc"), ["--noEmit", "-p", "tsconfig.json"], folder), name);
    }
  });
});
