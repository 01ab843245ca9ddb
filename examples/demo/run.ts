/**
 * `npm run demo`: sprout-agent fixes a real bug while two hook servers steer it.
 *
 * 1. Copies examples/demo/project (a stats module with one bug and a failing `bun test`) to a
 *    temporary folder.
 * 2. Starts servers/todo-enforcer over Streamable HTTP.
 * 3. Runs `cli.ts run` with three MCP servers: todo-enforcer (HTTP), servers/test-gate (stdio,
 *    running the copy's real tests with `bun test`) and the third-party
 *    @modelcontextprotocol/server-filesystem rooted at the copy. MCP_HOOK_SERVERS enables the
 *    two hook servers.
 * 4. Shows the agent's answer (its stdout) and its tool lines, objections and summary (its
 *    stderr) as they come, then the objections the hooks made, and checks that the copy's
 *    tests really pass now.
 *
 * With no model configured it uses the scripted model (examples/demo/script.json). Set
 * SPROUT_AGENT_PROVIDER=anthropic (with ANTHROPIC_API_KEY and ANTHROPIC_MODEL) or
 * SPROUT_AGENT_PROVIDER=openai (with OPENAI_COMPAT_*) to run the same task with a real model.
 * Exit status: 0 when the agent ended and the copied project's tests pass, 1 otherwise.
 * @module
 */
import { spawn, spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { createInterface } from "node:readline";

const root = new URL("../../", import.meta.url).pathname;
const bin = (name: string) => join(root, "node_modules/.bin", name);
const tsx = join(root, "node_modules/tsx/dist/loader.mjs");
const TASK = "The test suite of this project fails. Make the test suite pass.";

function startTodoServer(): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, [
    "--import",
    tsx,
    join(root, "servers/todo-enforcer/main.ts"),
    "--port",
    "0",
    "--store",
    "memory",
  ], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    const timer = setTimeout(
      () => reject(new Error('Cannot start todo-enforcer: no "listening on" line within 20 s')),
      20_000,
    );
    lines.once("line", (line) => {
      clearTimeout(timer);
      const url = line.replace(/^listening on /, "").trim();
      resolve({ url, stop: () => child.kill("SIGTERM") });
    });
    child.once("exit", (code) => reject(new Error(`Cannot start todo-enforcer: exited with code ${code}`)));
  });
}

async function main(): Promise<number> {
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), "sprout-demo-"));
  const project = join(dir, "project");
  cpSync(join(root, "examples/demo/project"), project, { recursive: true });
  console.log(`sprout-agent demo: fixing ${project}\n`);

  const todo = await startTodoServer();
  let agent: ReturnType<typeof spawn> | undefined;
  // Ctrl-C or a SIGTERM must not leave the todo server, the agent or the folder behind.
  const onSignal = (signal: NodeJS.Signals, code: number) => () => {
    console.log(`\ndemo: ${signal}, cleaning up`);
    agent?.kill(signal); // the agent cancels its prompt and closes its MCP servers
    todo.stop();
    const done = () => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(code);
    };
    if (agent && agent.exitCode === null) agent.once("close", done);
    else done();
  };
  process.once("SIGINT", onSignal("SIGINT", 130));
  process.once("SIGTERM", onSignal("SIGTERM", 143));
  try {
    const config = join(dir, "mcp.json");
    writeFileSync(
      config,
      JSON.stringify(
        {
          mcpServers: {
            todo: { type: "http", url: todo.url },
            tests: {
              command: process.execPath,
              args: [
                "--import",
                tsx,
                join(root, "servers/test-gate/stdio.ts"),
                "--cmd",
                `${bin("bun")} test`,
                "--cwd",
                project,
              ],
            },
            fs: {
              command: process.execPath,
              args: [join(root, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), project],
            },
          },
        },
        null,
        2,
      ),
    );

    const env: Record<string, string | undefined> = {
      ...process.env,
      MCP_HOOK_SERVERS: "todo,tests",
      DEMO_DIR: project,
    };
    if ((env["SPROUT_AGENT_PROVIDER"] ?? "") === "") {
      env["SPROUT_AGENT_PROVIDER"] = "scripted";
      env["SPROUT_AGENT_SCRIPT"] = join(root, "examples/demo/script.json");
      console.log("(no model configured: using the scripted model, examples/demo/script.json)\n");
    }
    agent = spawn(process.execPath, ["--import", tsx, join(root, "cli.ts"), "run", "--mcp-config", config, TASK], {
      cwd: project,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    // The agent's stdout is its answer (the model's text, as it streams); its stderr the rest
    // (tool lines, objections, the summary). Both are shown here as they come, as a terminal
    // would show them: a stderr line after unfinished text starts on a line of its own.
    const objections: string[] = [];
    let open = false;
    agent.stdout!.setEncoding("utf8");
    agent.stdout!.on("data", (text: string) => {
      process.stdout.write(text);
      open = !text.endsWith("\n");
    });
    createInterface({ input: agent.stderr! }).on("line", (line) => {
      process.stdout.write(`${open ? "\n" : ""}${line}\n`);
      open = false;
      if (line.includes("objection from")) objections.push(line.replace(/^.*?⟲ /, ""));
    });
    const code = await new Promise<number | null>((resolve) => agent!.on("close", resolve));
    if (open) process.stdout.write("\n");

    console.log("\n--- demo summary ---");
    console.log(`agent exit status: ${code}`);
    // One line per hook that objected; the agent's summary ("■ … 1 objection (2 hooks at once)")
    // counts ends of turn objected to, the unit of its objection budget.
    console.log(
      `hook objections (${objections.length}; the agent's summary counts an end of turn several hooks objected to once):`,
    );
    for (const o of objections) console.log(`  ${o}`);
    const check = spawnSync(bin("bun"), ["test"], { cwd: project, encoding: "utf8" });
    const passed = check.status === 0;
    const counts = `${check.stdout}\n${check.stderr}`.match(/(\d+) pass[\s\S]*?(\d+) fail/);
    console.log(
      `tests in the copied project: ${passed ? "PASS" : "FAIL"}${
        counts ? ` (${counts[1]} pass, ${counts[2]} fail)` : ""
      }`,
    );
    console.log(`wall time: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return code === 0 && passed ? 0 : 1;
  } finally {
    todo.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then((code) => process.exit(code), (error: unknown) => {
  console.error(`demo: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
