// deno-lint-ignore-file no-explicit-any
/**
 * `cli.ts acp` driven by acpx (the headless ACP client from npm, `acpx --agent CMD exec`), with
 * no shim: acpx sends `mcpServers: []`, so the hook server comes from the operator's
 * configuration (`--mcp-config FILE`, or `./.mcp.json` in the agent's folder), and its
 * `_PreToolUse` ask reaches acpx as `session/request_permission`, answered by
 * `--approve-all` or `--deny-all`. acpx runs under Node (its `dist/cli.js`), the agent under the
 * runtime running this file.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import { readLog, tempDir } from "./helpers/acp.ts";
import { processesMatching } from "./helpers/processes.ts";
import { startFakeLlm } from "../lib/testing/fake-llm.ts";
import { repoRoot, tsCommand } from "./helpers/runtime.ts";

const acpxCli = `${repoRoot}node_modules/acpx/dist/cli.js`;

/** Runs acpx under Node in `cwd`; resolves with its exit code and the JSON-RPC frames it printed (`--format json`). */
function acpx(args: string[], cwd: string, env: Record<string, string>) {
  return new Promise<{ code: number | null; frames: Record<string, any>[]; stderr: string }>((resolve) => {
    const child = spawn("node", [acpxCli, ...args], {
      cwd,
      env: { ...process.env, HOME: cwd, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => (err += c));
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.once("close", (code) => {
      clearTimeout(timer);
      const frames = out.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
      resolve({ code, frames, stderr: err });
    });
  });
}

describe("acp with acpx: the operator's hook server asks, acpx answers", {
  // Not a devDependency: acpx 0.19.1 pulls in optional platform packages this registry does not
  // serve, which makes `npm ci` refuse the lockfile. .ci/run installs it with --no-save.
  skip: existsSync(acpxCli) ? false : "acpx is not installed (npm install --no-save acpx@0.19.1; .ci/run does)",
}, () => {
  const dir = tempDir();
  after(() => dir.cleanup());
  const log = `${dir.path}/guard.log`;
  const [fixture, ...fixtureArgs] = tsCommand(`${repoRoot}tests/fixtures/agent-server.ts`);
  const servers = JSON.stringify({
    mcpServers: {
      guard: {
        command: fixture,
        args: fixtureArgs,
        env: { FIXTURE_LOG: log, FIXTURE_PRE_TOOL: JSON.stringify({ decision: "ask", reason: "echo needs a person" }) },
      },
    },
  });
  const script = dir.file(
    "script.json",
    JSON.stringify([{ toolCalls: [{ name: "guard__echo", arguments: { text: "hi" } }] }, { text: "acpx done" }]),
  );
  const env = { SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: script, MCP_HOOK_SERVERS: "guard" };
  const agent = tsCommand(`${repoRoot}cli.ts`).join(" ");
  const echoes = () => readLog(log).map((l) => JSON.parse(l)).filter((e) => e.tool === "echo");
  const said = (frames: Record<string, any>[]) =>
    frames.filter((f) => f["params"]?.update?.sessionUpdate === "agent_message_chunk").map((f) =>
      f["params"].update.content.text
    ).join("");
  const asked = (frames: Record<string, any>[]) => frames.filter((f) => f["method"] === "session/request_permission");
  const answered = (frames: Record<string, any>[], id: unknown) =>
    frames.find((f) => f["id"] === id && f["method"] === undefined && f["result"]?.outcome !== undefined)?.["result"];

  test("--mcp-config FILE with --approve-all: asked, allowed, the tool runs; ./.mcp.json with --deny-all: rejected", async () => {
    assert.ok(!agent.includes("  "), agent);
    const config = dir.file("operator.json", servers);
    const allowed = await acpx(
      [
        "--approve-all",
        "--format",
        "json",
        "--cwd",
        dir.path,
        "--agent",
        `${agent} acp --mcp-config ${config}`,
        "exec",
        "say hi",
      ],
      dir.path,
      env,
    );
    assert.equal(allowed.code, 0, allowed.stderr);
    const newSession = allowed.frames.find((f) => f["method"] === "session/new");
    assert.deepEqual(newSession?.["params"].mcpServers, [], "acpx sends no servers");
    const [ask] = asked(allowed.frames);
    assert.equal(ask?.["params"].toolCall.title, "guard__echo");
    assert.match(ask["params"].toolCall.content[0].content.text, /echo needs a person \(hook server "guard"\)/);
    assert.match(answered(allowed.frames, ask["id"]).outcome.optionId, /^allow_/);
    assert.deepEqual(echoes().map((e) => e.args), [{ text: "hi" }]);
    assert.equal(said(allowed.frames), "acpx done");

    // The default file: ./.mcp.json in the folder the agent starts in.
    dir.file(".mcp.json", servers);
    const denied = await acpx(
      ["--deny-all", "--format", "json", "--cwd", dir.path, "--agent", `${agent} acp`, "exec", "say hi"],
      dir.path,
      env,
    );
    assert.equal(denied.code, 5, `acpx exits 5 (permission denied): ${denied.stderr}`);
    const [ask2] = asked(denied.frames);
    assert.ok(ask2 !== undefined, "asked again with the default file");
    assert.match(answered(denied.frames, ask2["id"]).outcome.optionId, /^reject_/);
    assert.equal(echoes().length, 1, "the rejected echo did not run");
    assert.ok(JSON.stringify(denied.frames).includes("(the person denied it)"));
  });
});

describe("acp with acpx: the agent killed between prompts, acpx resumes the session (SPEC 12.7)", {
  skip: existsSync(acpxCli) ? false : "acpx is not installed (npm install --no-save acpx@0.19.1; .ci/run does)",
}, () => {
  const dir = tempDir();
  after(() => {
    for (const pid of agentPids()) process.kill(pid, "SIGKILL");
    dir.cleanup();
  });
  // A file only this test's agents name on their command line: how they are found to be killed.
  const marker = dir.file("resume-servers.json", JSON.stringify({ mcpServers: {} }));
  const agent = `${tsCommand(`${repoRoot}cli.ts`).join(" ")} acp --mcp-config ${marker}`;
  /** The agent processes (not acpx's own queue owner, whose arguments name the agent too). */
  function agentPids(): number[] {
    return processesMatching(marker).filter((pid) => {
      try {
        return !readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("acpx/dist");
      } catch {
        return false;
      }
    });
  }

  test("sessions new, a prompt, SIGKILL, a prompt: the second agent process resumes with the first prompt's history", async () => {
    const llm = await startFakeLlm({ responses: (_r, i) => ({ text: `answer ${i + 1}` }) });
    try {
      const env = {
        SPROUT_AGENT_PROVIDER: "anthropic",
        ANTHROPIC_API_KEY: "sk-ant-secret-key-123",
        ANTHROPIC_MODEL: "claude-test",
        ANTHROPIC_BASE_URL: llm.anthropicBaseUrl,
        SPROUT_AGENT_SESSION_DIR: `${dir.path}/sessions`,
      };
      const base = ["--approve-all", "--format", "json", "--cwd", dir.path, "--ttl", "60", "--agent", agent];
      const created = await acpx([...base, "sessions", "new"], dir.path, env);
      assert.equal(created.code, 0, created.stderr);
      const first = await acpx([...base, "prompt", "first question"], dir.path, env);
      assert.equal(first.code, 0, first.stderr);
      const sessionId = first.frames.find((f) => f["method"] === "session/prompt")?.["params"].sessionId;
      assert.match(String(sessionId), /^ses_[0-9a-f]{16}$/);
      const running = agentPids();
      assert.equal(running.length, 1, "acpx keeps the agent running between prompts");
      process.kill(running[0]!, "SIGKILL");
      const second = await acpx([...base, "prompt", "second question"], dir.path, env);
      assert.equal(second.code, 0, second.stderr);
      const reconnect = second.frames.find((f) => f["method"] === "session/resume" || f["method"] === "session/load");
      assert.equal(reconnect?.["params"].sessionId, sessionId, "acpx reconnects to the same session");
      assert.ok(!second.frames.some((f) => f["method"] === "session/new"), "no new session");
      const sent = JSON.stringify(llm.requests.at(-1)!.body["messages"]);
      assert.match(sent, /first question.*answer 1.*second question/);
      assert.deepEqual(llm.requests.filter((r) => r.rejected).map((r) => r.rejected), []);
      await acpx([...base, "sessions", "close"], dir.path, env);
    } finally {
      await llm.close();
    }
  });
});
