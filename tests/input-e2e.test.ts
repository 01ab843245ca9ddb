/**
 * Input requests and tasks end to end (SPEC sections 10 and 11, issue 25): `createAgent` with
 * the official SDK 2.x input server and the SDK 1.x task tools, then `cli.ts run` headless
 * (`--json`: elicitations declined with a warning, sampling refused or answered by the agent's
 * model under `SPROUT_AGENT_SAMPLING=on`, a task's steps as `tool-progress` events) and on a
 * pseudo-terminal (the person answers the form and the link on stderr).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAgent } from "../lib/agent/agent.ts";
import type { AgentEvent } from "../lib/conversation/events.ts";
import type { LlmRequest, Model } from "../lib/conversation/types.ts";
import { EventEmitter } from "node:events";
import { lineReader } from "../lib/cli/ask.ts";
import { terminalElicit } from "../lib/cli/elicit.ts";
import { visible } from "../lib/cli/render.ts";
import type { ElicitationRequest } from "../lib/mcp/input-requests.ts";
import { tsServer } from "./fixtures/mcp/helpers.ts";
import { cleanEnv, runCli } from "./helpers/cli.ts";
import { repoRoot, tsCommand } from "./helpers/runtime.ts";

/** A model that calls `tools` in its first turn, answers sampling requests (no tools) with "Paris", and ends. */
function callingModel(tools: string[]): Model & { requests: LlmRequest[] } {
  const requests: LlmRequest[] = [];
  let turn = 0;
  return {
    name: "test:model",
    requests,
    complete(request) {
      requests.push(request);
      if (request.tools.length === 0) return Promise.resolve({ text: "Paris", toolCalls: [], stop: "end_turn" });
      turn++;
      if (turn === 1) {
        return Promise.resolve({
          text: "",
          toolCalls: tools.map((name, i) => ({ id: `call_${i + 1}`, name, arguments: { text: "x" } })),
          stop: "tool_use",
        });
      }
      return Promise.resolve({ text: "done", toolCalls: [], stop: "end_turn" });
    },
  };
}

async function runAgent(
  tools: string[],
  options: { sampling?: { maxTokens: number } } = {},
): Promise<{ events: AgentEvent[]; warnings: string[]; model: ReturnType<typeof callingModel> }> {
  const model = callingModel(tools);
  const warnings: string[] = [];
  const agent = await createAgent({
    model,
    mcpServers: [tsServer("in", "sdk2-input.ts", "bun"), tsServer("tk", "sdk1-tasks.ts", "bun")],
    sessionStore: false,
    cwd: repoRoot,
    onWarning: (m) => warnings.push(m),
    ...options,
  });
  try {
    assert.deepEqual(agent.failures, []);
    const run = agent.prompt("go");
    const events: AgentEvent[] = [];
    for await (const event of run) events.push(event);
    await run.result;
    return { events, warnings, model };
  } finally {
    await agent.close();
  }
}

const outputs = (events: AgentEvent[]) =>
  Object.fromEntries(events.flatMap((e) => e.type === "tool-end" ? [[e.name, e.output]] : []));

/** A stdin that delivers `lines` one by one, each when the reader resumes it; then its end. */
class FakeStdin extends EventEmitter {
  lines: string[];
  constructor(lines: string[]) {
    super();
    this.lines = lines;
  }
  resume() {
    const next = this.lines.shift();
    queueMicrotask(() => (next === undefined ? this.emit("end") : this.emit("data", `${next}\n`)));
  }
  pause() {}
}

describe("the terminal elicitation prompt, in-process", () => {
  const form = (properties: Record<string, unknown>, required: string[] = []): ElicitationRequest => ({
    mode: "form",
    message: "Tell me",
    requestedSchema: { type: "object", properties, required },
  });
  const ask = (lines: string[], request: ElicitationRequest, signal = new AbortController().signal) => {
    const said: string[] = [];
    const elicit = terminalElicit(
      (l) => said.push(l),
      (t) => said.push(t),
      lineReader(new FakeStdin(lines)),
      visible,
    );
    return elicit(request, { server: "srv", tool: "tool", signal }).then((result) => ({ result, said }));
  };

  test("each type is read from what was typed: choices by number or name, several at once, yes/no, whole numbers in bounds", async () => {
    const { result, said } = await ask(
      ["y", "2", "red, 3", "yes", "150", "12", "", "word"],
      form({
        pick: { type: "string", oneOf: [{ const: "a", title: "Apple" }, { const: "b", title: "Banana" }] },
        many: { type: "array", items: { enum: ["red", "green", "blue"] } },
        ok: { type: "boolean" },
        count: { type: "integer", minimum: 0, maximum: 100 },
        ratio: { type: "number", default: 0.5 },
        note: { type: "string" },
      }, ["pick"]),
    );
    assert.deepEqual(result, {
      action: "accept",
      content: { pick: "b", many: ["red", "blue"], ok: true, count: 12, ratio: 0.5, note: "word" },
    });
    assert.ok(said.includes("    at most 100"), said.join("|"));
    assert.ok(said.includes("    1) Apple"));
  });

  test("n declines, c cancels, the end of stdin and a cancel cancel; three wrong answers cancel; server text cannot reach the terminal raw", async () => {
    const name = form({ name: { type: "string" } }, ["name"]);
    assert.deepEqual((await ask(["n"], name)).result, { action: "decline" });
    assert.deepEqual((await ask(["c"], name)).result, { action: "cancel" });
    assert.deepEqual((await ask([], name)).result, { action: "cancel" });
    assert.deepEqual((await ask(["y", "", "", ""], name)).result, { action: "cancel" });
    const aborted = new AbortController();
    aborted.abort();
    assert.deepEqual((await ask(["y"], name, aborted.signal)).result, { action: "cancel" });
    const url = await ask(["y"], {
      mode: "url",
      message: "Go \x1b[31mhere",
      url: "https://example.com/x",
      elicitationId: "e",
    });
    assert.deepEqual(url.result, { action: "accept" });
    assert.deepEqual(url.said.slice(0, 2), [
      "? srv (tool tool) asks you to open a link: Go ^[[31mhere",
      "  https://example.com/x",
    ]);
  });
});

describe("input requests and tasks through createAgent", () => {
  test("no one to ask: the elicitation is declined with a warning naming the server and tool; roots are the cwd; sampling is refused", async () => {
    const { events, warnings } = await runAgent(["in__greet", "in__signin", "in__where", "in__capital"]);
    const out = outputs(events);
    assert.equal(out["in__greet"], "elicitation decline");
    assert.equal(out["in__signin"], "sign-in decline");
    assert.equal(out["in__where"], `roots: file://${repoRoot}`);
    assert.match(out["in__capital"]!, /sampling/i);
    assert.ok(
      warnings.includes(
        'Declined the elicitation of server "in" (tool "greet"): no one can answer it in this session ("Who are you?")',
      ),
      warnings.join("\n"),
    );
    assert.ok(warnings.some((w) => w.startsWith('Declined the URL elicitation of server "in" (tool "signin")')));
  });

  test("sampling on: the agent's own model answers, capped at the operator's token limit, without tools", async () => {
    const { events, model } = await runAgent(["in__capital"], { sampling: { maxTokens: 7 } });
    assert.equal(outputs(events)["in__capital"], "model test:model said: Paris (endTurn)");
    const sampled = model.requests.find((r) => r.tools.length === 0)!;
    assert.equal(sampled.maxOutputTokens, 7, "the request asked 5000; the cap is 7");
    assert.equal(sampled.system, "Answer in one word.");
    assert.deepEqual(sampled.history, [{ role: "user", text: "What is the capital of France?" }]);
  });

  test("a task's steps are the call's tool-progress events, between its tool-start and tool-end", async () => {
    const { events } = await runAgent(["tk__steps"]);
    const mine = events.filter((e) => "id" in e && e.id === "call_1").map((e) =>
      e.type === "tool-progress" ? e.message : e.type
    );
    assert.equal(mine[0], "tool-start");
    assert.equal(mine.at(-1), "tool-end");
    for (const step of [1, 2, 3]) assert.ok(mine.includes(`task working: step ${step} of 3`), mine.join(" | "));
    assert.equal(outputs(events)["tk__steps"], "steps: x");
  });
});

/** A directory with `.mcp.json` (the two fixtures) and a script calling `calls` first. */
function setup(calls: string[]): { dir: string; config: string; script: string } {
  const dir = mkdtempSync(join(tmpdir(), "sprout-input-"));
  const servers = Object.fromEntries(
    [["in", "sdk2-input.ts"], ["tk", "sdk1-tasks.ts"]].map(([name, file]) => {
      const t = tsServer(name!, file!, "bun").transport as { command: string; args: string[] };
      return [name, { command: t.command, args: t.args }];
    }),
  );
  const config = join(dir, ".mcp.json");
  writeFileSync(config, JSON.stringify({ mcpServers: servers }));
  const script = join(dir, "script.json");
  writeFileSync(
    script,
    JSON.stringify([
      { toolCalls: calls.map((name) => ({ name, arguments: { text: "x" } })) },
      { text: "Paris" },
      { text: "done" },
    ]),
  );
  return { dir, config, script };
}

describe("cli.ts run: input requests and tasks", () => {
  test("headless (--json): declined with a warning event, never a hang; sampling refused, then answered with SPROUT_AGENT_SAMPLING=on; task steps as tool-progress", async () => {
    const { dir, config, script } = setup(["in__greet", "in__capital", "tk__steps"]);
    try {
      const env = { SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script, SPROUT_AGENT_SESSION_DIR: "off" };
      const off = await runCli(["run", "--mcp-config", config, "--json", "go"], env, { cwd: dir });
      assert.equal(off.code, 0, off.stderr);
      const ends = (run: typeof off) =>
        Object.fromEntries(run.events.filter((e) => e.type === "tool-end").map((e) => [e.name, e.output]));
      assert.equal(ends(off)["in__greet"], "elicitation decline");
      assert.match(String(ends(off)["in__capital"]), /sampling/i);
      assert.ok(
        off.events.some((e) =>
          e.type === "warning" && String(e.message).startsWith('Declined the elicitation of server "in" (tool "greet")')
        ),
      );
      const progress = off.events.filter((e) => e.type === "tool-progress");
      assert.ok(progress.some((e) => e.name === "tk__steps" && e.message === "task working: step 2 of 3"));
      assert.deepEqual(Object.keys(progress[0]!), ["type", "id", "name", "message"]);

      const on = await runCli(["run", "--mcp-config", config, "--json", "go"], {
        ...env,
        SPROUT_AGENT_SAMPLING: "on",
        SPROUT_AGENT_SAMPLING_MAX_TOKENS: "64",
      }, { cwd: dir });
      assert.equal(on.code, 0, on.stderr);
      assert.match(String(ends(on)["in__capital"]), /^model scripted:.*script\.json said: Paris \(endTurn\)$/);
      const bad = await runCli(["run", "--json", "go"], { ...env, SPROUT_AGENT_SAMPLING: "yes" }, { cwd: dir });
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /Invalid SPROUT_AGENT_SAMPLING: "yes" is not one of on, off/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("on a terminal the person answers the form field by field and the link; what they typed reaches the server", {
    skip: !existsSync("/usr/bin/script") && "needs script(1) for a pseudo-terminal",
  }, async () => {
    const { dir, config, script } = setup(["in__greet", "in__signin"]);
    try {
      const argv = [...tsCommand(join(repoRoot, "cli.ts")), "run", "--mcp-config", config, "go"]
        .map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ");
      const env = cleanEnv({
        SPROUT_AGENT_PROVIDER: "scripted",
        SPROUT_AGENT_SCRIPT: script,
        SPROUT_AGENT_SESSION_DIR: "off",
      });
      // Each prompt and the line a person would type at it (one answer per prompt, in order). A
      // prompt may be followed at once by another call's line, so it is looked for anywhere
      // after the last answer.
      const answers: [RegExp, string][] = [
        [/Answer\? \[y\] yes, \[n\] decline, \[c\] cancel: /, "y"],
        [/ {2}Name: (?!what)/, ""], // required: asked again
        [/ {2}Name: (?!what)/, "Ada Lovelace"],
        [/Age \(integer; optional\): /, "many"], // not a number: asked again
        [/Age \(integer; optional\): /, "36"],
        [/Colour \(1-3; default green\): /, "3"],
        [/Subscribe \(y\/n; default false\): /, ""],
        [/Open it\? \[y\] yes, \[n\] decline, \[c\] cancel: /, "n"],
      ];
      const out = await new Promise<string>((resolve) => {
        const child = spawn("/usr/bin/script", ["-qec", argv, "/dev/null"], { env, cwd: dir });
        let text = "";
        let seen = 0;
        const killer = setTimeout(() => child.kill("SIGKILL"), 90_000);
        child.stdout.on("data", (d) => {
          text += d;
          const next = answers[0];
          if (next !== undefined && next[0].test(text.slice(seen))) {
            answers.shift();
            seen = text.length;
            child.stdin.write(`${next[1]}\n`);
            if (answers.length === 0) child.stdin.end();
          }
        });
        child.on("close", () => (clearTimeout(killer), resolve(text)));
      });
      assert.deepEqual(answers.map(([r]) => String(r)), [], `every prompt was shown:\n${out}`);
      assert.match(out, /\? in \(tool greet\) asks: Who are you\?/);
      assert.match(out, / {2}Name: what to call you/);
      assert.match(out, / {4}3\) blue/);
      assert.match(out, / {4}an answer is required/);
      assert.match(out, / {4}a number is needed/);
      // The tool line shows the first 80 characters of the server's answer.
      assert.match(
        out,
        /✓ in__greet .*Hello, Ada Lovelace! \{"name":"Ada Lovelace","age":36,"colour":"blue","subscribe/,
      );
      assert.match(
        out,
        /\? in \(tool signin\) asks you to open a link: Sign in to Example\r?\n {2}https:\/\/example\.com\/login\?session=abc/,
      );
      assert.match(out, /✓ in__signin .*sign-in decline/);
      // A call that ended while a question was open is shown on a line of its own.
      assert.doesNotMatch(out, /cancel: [✓✗…]/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
