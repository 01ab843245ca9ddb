/**
 * The npm package as a user gets it: `npm pack` (which builds dist/ through `prepack`), the
 * tarball installed into an empty project with no registry reachable, then `import` from
 * "sprout-agent" under plain Node (no tsx: the built JavaScript), Bun (the TypeScript
 * sources, through the `bun` export condition) and Deno (`npm:` through the project's
 * node_modules), the declarations under tsc, and `npx sprout-agent`. Slow (pack + build, a
 * few seconds) and independent of the runner, so it runs once.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { builtinRecorder, readRecorded } from "./helpers/builtins.ts";
import { fixtureConfig } from "./helpers/cli.ts";
import { offlineEnv, ok, packOnce, run } from "./helpers/pack.ts";
import { repoRoot, runsOnce } from "./helpers/runtime.ts";

// What to change when the entry point changes (e.g. to `createAgent`): the import, and the
// prompt run it makes (which must leave `run`, with its events and `run.result`, and `close`).
const IMPORT = `import { agentOptionsFromEnv, createAgent, VERSION } from "sprout-agent";`;
const START_RUN =
  `const agent = await createAgent(agentOptionsFromEnv({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: "script.json" }, { readFile: (p) => readFileSync(p, "utf8") }));
const run = agent.prompt("say hello");
const close = () => agent.close();`;

/** A plain-JavaScript program run unchanged by Node, Bun and Deno; prints one JSON line. */
function program(specifier: (name: string) => string): string {
  return `${IMPORT.replace(`"sprout-agent"`, JSON.stringify(specifier("sprout-agent")))}
import { startFakeLlm } from ${JSON.stringify(specifier("sprout-agent/testing"))};
import { readFileSync } from "node:fs";
${START_RUN}
let text = "";
for await (const e of run) if (e.type === "text-delta") text += e.text;
const { stopReason } = await run.result;
await close();
console.log(JSON.stringify({ version: VERSION, text, stopReason, testing: typeof startFakeLlm, resolved: import.meta.resolve(${
    JSON.stringify(specifier("sprout-agent"))
  }) }));
`;
}

describe("the npm package", { skip: !runsOnce && "runs once, under bun" }, () => {
  const version = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")).version as string;
  const expected = { version, text: "hello from the package", stopReason: "end_turn", testing: "function" };
  let dir = "";
  let project = "";
  let files: string[] = [];
  const bin = (name: string) => join(repoRoot, "node_modules/.bin", name);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "sprout-pkg-"));
    // The project folder first: when the pack fails, the tests that still run must write into
    // it, not into the working directory (join("", "tsconfig.json") replaced the repository's).
    project = join(dir, "project");
    mkdirSync(project);
    const { tarball, files: packedFiles } = await packOnce();
    files = packedFiles;
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
    ok(
      await run("npm", ["install", "--offline", "--no-audit", "--no-fund", tarball], project),
      "npm install",
    );
    writeFileSync(join(project, "script.json"), JSON.stringify([{ text: "hello from the package" }]));
    writeFileSync(join(project, "main.mjs"), program((name) => name));
    writeFileSync(join(project, "main-deno.mjs"), program((name) => `npm:${name}`));
  });
  after(() => {
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  test("the tarball holds the built JavaScript, the declarations and the TypeScript sources, and no tests", () => {
    for (
      const f of [
        "dist/mod.js",
        "dist/mod.d.ts",
        "dist/testing.js",
        "dist/testing.d.ts",
        "dist/cli.js",
        "dist/stores/redis.js",
        "dist/stores/redis.d.ts",
        "stores/redis.ts",
        "stores/README.md",
        "dist/telemetry/otel.js",
        "dist/telemetry/otel.d.ts",
        "dist/telemetry/otel-env.js",
        "telemetry/otel.ts",
        "telemetry/otel-env.ts",
        "mod.ts",
        "testing.ts",
        "cli.ts",
        "lib/agent/loop.ts",
        "LICENSE",
        "README.md",
      ]
    ) {
      assert.ok(files.includes(f), `${f} is missing from the tarball`);
    }
    const stray = files.filter((f) =>
      !/^(dist\/|lib\/|(mod|testing|cli)\.ts$|stores\/(redis\.ts|README\.md)$|telemetry\/otel(-env)?\.ts$|README\.md$|LICENSE$|package\.json$)/
        .test(f)
    );
    assert.deepEqual(stray, []);
    const pkg = join(project, "node_modules/sprout-agent");
    assert.match(readFileSync(join(pkg, "dist/cli.js"), "utf8"), /^#!\/usr\/bin\/env node\n/);
    for (const f of files.filter((f) => f.endsWith(".js"))) {
      const js = readFileSync(join(pkg, f), "utf8");
      assert.doesNotMatch(js, /^\s*(import|export)\b[^;]*["']\.{1,2}\/[^"']*\.ts["']/m, `${f} imports a .ts file`);
      assert.doesNotMatch(js, /import\(\s*["']\.{1,2}\/[^"']*\.ts["']\s*\)/, `${f} imports a .ts file`);
    }
  });

  test("plain Node (no tsx) imports the built JavaScript and runs a scripted prompt", async () => {
    const out = JSON.parse(ok(await run("node", ["main.mjs"], project), "node"));
    assert.deepEqual({ ...out, resolved: undefined }, { ...expected, resolved: undefined });
    assert.match(out.resolved, /\/node_modules\/sprout-agent\/dist\/mod\.js$/);
  });

  test("Bun imports the TypeScript sources (the bun condition)", async () => {
    const out = JSON.parse(ok(await run(bin("bun"), ["main.mjs"], project), "bun"));
    assert.deepEqual({ ...out, resolved: undefined }, { ...expected, resolved: undefined });
    assert.match(out.resolved, /\/node_modules\/sprout-agent\/mod\.ts$/);
  });

  test("Deno imports npm:sprout-agent from the project's node_modules", async () => {
    const args = ["run", "--quiet", "--no-prompt", "--allow-read", "--allow-env", "main-deno.mjs"];
    const out = JSON.parse(ok(await run(bin("deno"), args, project), "deno"));
    assert.deepEqual({ ...out, resolved: undefined }, { ...expected, resolved: undefined });
    assert.match(out.resolved, /\/node_modules\/sprout-agent\/dist\/mod\.js$/);
  });

  // The README's Deno commands for an npm install. Deno refuses to strip the types of files
  // under node_modules, so the package's cli.ts cannot run there: the README sends Deno to
  // the built dist/cli.js, or to npm:sprout-agent (its bin, found in the project's node_modules).
  test("Deno runs the installed CLI as npm:sprout-agent and as dist/cli.js, not as cli.ts", async () => {
    const env = offlineEnv({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: "script.json" });
    const deno = (...args: string[]) => run(bin("deno"), ["run", "-A", ...args], project, env);
    const [bySpecifier, byPath, prompt, source] = await Promise.all([
      deno("npm:sprout-agent", "--version"),
      deno("node_modules/sprout-agent/dist/cli.js", "--version"),
      deno("npm:sprout-agent", "run", "say hello"),
      deno("node_modules/sprout-agent/cli.ts", "--version"),
    ]);
    assert.equal(ok(bySpecifier, "deno run -A npm:sprout-agent --version"), `sprout-agent ${version}\n`);
    assert.equal(
      ok(byPath, "deno run -A node_modules/sprout-agent/dist/cli.js --version"),
      `sprout-agent ${version}\n`,
    );
    assert.match(ok(prompt, "deno run -A npm:sprout-agent run"), /^hello from the package\n/);
    assert.notEqual(source.code, 0, "Deno now runs cli.ts under node_modules: the README's Deno lines can say so");
    assert.match(source.stderr, /ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING/);
  });

  test("tsc type-checks a consumer against the declarations", async () => {
    writeFileSync(
      join(project, "consumer.ts"),
      `import { type AgentEvent, VERSION } from "sprout-agent";
import { startFakeLlm } from "sprout-agent/testing";
import { redisSessionStore, type RedisSessionStore } from "sprout-agent/stores/redis";
const kind: AgentEvent["type"] = "text-delta";
const version: string = VERSION;
const store: RedisSessionStore = redisSessionStore({ url: "redis://127.0.0.1:6379" });
console.log(version, kind, typeof startFakeLlm, store.location);
`,
    );
    const options = {
      module: "NodeNext",
      moduleResolution: "NodeNext",
      target: "ES2022",
      strict: true,
      noEmit: true,
      types: [],
      lib: ["ES2023", "DOM"],
    };
    writeFileSync(join(project, "tsconfig.json"), JSON.stringify({ compilerOptions: options, files: ["consumer.ts"] }));
    ok(await run("node", [join(repoRoot, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"], project), "tsc");
  });

  // The Redis store's package is an optional peer dependency: the entry imports without it, and
  // its first call says what to install.
  test("sprout-agent/stores/redis imports under plain Node without the redis package, and says to install it", async () => {
    writeFileSync(
      join(project, "redis-store.mjs"),
      `import { redisSessionStore } from "sprout-agent/stores/redis";
const store = redisSessionStore({ url: "redis://user:secret@127.0.0.1:1" });
const message = await store.list().then(() => "listed", (e) => e.message);
await store.close();
console.log(JSON.stringify({ location: store.location, message, resolved: import.meta.resolve("sprout-agent/stores/redis") }));
`,
    );
    const out = JSON.parse(ok(await run("node", ["redis-store.mjs"], project), "node redis-store.mjs"));
    assert.equal(out.location, "redis://***@127.0.0.1:1");
    assert.match(
      out.message,
      /^Cannot connect to Redis at "redis:\/\/\*\*\*@127\.0\.0\.1:1": the redis package is not installed \(npm install redis\)/,
    );
    assert.match(out.resolved, /\/node_modules\/sprout-agent\/dist\/stores\/redis\.js$/);
  });

  test("npx sprout-agent runs the built CLI under Node: --version and a scripted run", async () => {
    const npx = ["--offline", "--no", "--", "sprout-agent"];
    const env = offlineEnv({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: "script.json" });
    const [versionRun, promptRun] = await Promise.all([
      run("npx", [...npx, "--version"], project),
      run("npx", [...npx, "run", "say hello"], project, env),
    ]);
    assert.equal(ok(versionRun, "npx sprout-agent --version"), `sprout-agent ${version}\n`);
    assert.equal(ok(promptRun, "npx sprout-agent run"), "hello from the package\n");
    assert.match(promptRun.stderr, /^■ end_turn/m);
  });

  // Tracing (SPEC 11): @opentelemetry/* are not installed here, so OTEL_* set is one warning
  // naming what to install, and the run goes on; a run without OTEL_* never loads the setup.
  test("the built CLI with OTEL_EXPORTER_OTLP_ENDPOINT set and no OpenTelemetry packages warns naming them and runs", async () => {
    const env = offlineEnv({
      SPROUT_AGENT_PROVIDER: "scripted",
      SPROUT_AGENT_SCRIPT: "script.json",
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:1",
    });
    const ran = await run(
      "node",
      [join(project, "node_modules/sprout-agent/dist/cli.js"), "run", "say hello"],
      project,
      env,
    );
    assert.equal(ok(ran, "node dist/cli.js run with OTEL_EXPORTER_OTLP_ENDPOINT"), "hello from the package\n");
    assert.match(
      ran.stderr,
      /warning: Tracing is off: .*npm install @opentelemetry\/api @opentelemetry\/sdk-trace-base @opentelemetry\/exporter-trace-otlp-http @opentelemetry\/resources/,
    );
  });

  // Issue 21: the CLI is one esbuild bundle plus the part only `acp` loads (scripts/build.mjs).
  test("the built CLI is dist/cli.js and dist/cli-acp.js: a run loads the first alone, without child_process, crypto or util; acp loads both", async () => {
    assert.deepEqual(files.filter((f) => /^dist\/[^/]*\.js$/.test(f)).sort(), [
      "dist/cli-acp.js",
      "dist/cli.js",
      "dist/mod.js",
      "dist/testing.js",
    ]);
    const pkg = join(project, "node_modules/sprout-agent/dist");
    const env = offlineEnv({ SPROUT_AGENT_PROVIDER: "scripted", SPROUT_AGENT_SCRIPT: "script.json" });
    const initialize = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } });
    const [promptRun, acpRun] = await Promise.all([
      run(
        "node",
        ["--import", builtinRecorder(join(dir, "run.log")), join(pkg, "cli.js"), "run", "say hello"],
        project,
        env,
      ),
      run(
        "sh",
        [
          "-c",
          `echo '${initialize}' | node --import "$0" "$1" acp`,
          builtinRecorder(join(dir, "acp.log")),
          join(pkg, "cli.js"),
        ],
        project,
        env,
      ),
    ]);
    assert.equal(ok(promptRun, "node dist/cli.js run"), "hello from the package\n");
    const loaded = readRecorded(join(dir, "run.log"));
    const ours = (urls: string[]) =>
      urls.filter((u) => u.startsWith("file:")).map((u) => u.slice(u.lastIndexOf("/") + 1));
    assert.deepEqual(ours(loaded), ["cli.js"], "run loads dist/cli.js alone");
    assert.deepEqual(loaded.filter((u) => ["node:child_process", "node:crypto", "node:util"].includes(u)), []);
    assert.equal(JSON.parse(ok(acpRun, "node dist/cli.js acp")).result.agentInfo.name, "sprout-agent");
    assert.deepEqual(ours(readRecorded(join(dir, "acp.log"))), ["cli.js", "cli-acp.js"]);
  });

  // Issue 24: a host spawns the bridge on every event; under Node the bin (dist/bin.cjs)
  // compiles dist/cli-bridge.cjs with a V8 code cache (scripts/bin.cjs).
  test("under Node the bin runs hook-bridge from a code cache: written once, then read; a corrupt one rewritten; none is no failure", async () => {
    assert.deepEqual(files.filter((f) => /^dist\/[^/]*\.cjs$/.test(f)).sort(), ["dist/bin.cjs", "dist/cli-bridge.cjs"]);
    const config = fixtureConfig(dir, { nag: { FIXTURE_STOP: "Not yet.", FIXTURE_NO_TOOLS: "1" } });
    const stop = join(dir, "stop.json");
    writeFileSync(
      stop,
      JSON.stringify({ session_id: "cache-1", cwd: project, hook_event_name: "Stop", stop_hook_active: false }),
    );
    const cacheHome = join(dir, "cache-home");
    const cache = join(cacheHome, "sprout-agent");
    let runs = 0;
    // Through node_modules/.bin, as a host's `sprout-agent hook-bridge` runs it.
    const bridge = async (extra: Record<string, string> = {}) => {
      const ran = await run(
        "sh",
        [
          "-c",
          `node "$0" hook-bridge --host claude --mcp-config "$1" < "$2"`,
          join(project, "node_modules/.bin/sprout-agent"),
          config,
          stop,
        ],
        project,
        // A state folder per run: each stop is a first objection of its session.
        offlineEnv({
          MCP_HOOK_SERVERS: "nag",
          XDG_CACHE_HOME: cacheHome,
          XDG_STATE_HOME: join(dir, `bridge-state-${runs++}`),
          ...extra,
        }),
      );
      assert.equal(ran.code, 0, ran.stderr);
      const answer = JSON.parse(ran.stdout) as { decision: string; reason: string };
      assert.equal(answer.decision, "block", ran.stdout);
      assert.equal(JSON.parse(answer.reason).text, "Not yet.");
      return ran;
    };
    const nodeVersion = ok(await run("node", ["-p", "`${process.version}-${process.arch}`"], project), "node -p")
      .trim();
    // A cache of another build for this Node is removed when this build's is written.
    mkdirSync(cache, { recursive: true });
    const stale = join(cache, `cli-bridge-0000000000000000-${nodeVersion}.bin`);
    writeFileSync(stale, "stale");
    assert.equal((await bridge()).stderr, "");
    const written = readdirSync(cache);
    assert.equal(written.length, 1, written.join(", "));
    assert.match(written[0]!, new RegExp(`^cli-bridge-[0-9a-f]{16}-${nodeVersion.replace(/\./g, "\\.")}\\.bin$`));
    const file = join(cache, written[0]!);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const first = readFileSync(file);
    assert.ok(first.length > 10_000, `a cache of ${first.length} bytes`);
    // Read, not written again: V8 accepted it (a rejected cache is rewritten).
    const before = statSync(file).mtimeMs;
    await bridge();
    assert.equal(statSync(file).mtimeMs, before);
    assert.deepEqual(readdirSync(cache), written);
    // A corrupt cache: the same answer, and a good cache in its place.
    writeFileSync(file, "x".repeat(first.length));
    await bridge();
    assert.notEqual(readFileSync(file, "utf8"), "x".repeat(first.length));
    // No cache at all: `off`, a folder that cannot be made, a relative folder (said on stderr).
    const offHome = join(dir, "cache-off");
    await bridge({ XDG_CACHE_HOME: offHome, SPROUT_AGENT_CODE_CACHE_DIR: "off" });
    assert.equal(existsSync(join(offHome, "sprout-agent")), false); // (the fixture server, under Bun, caches in offHome/bun)
    assert.equal((await bridge({ SPROUT_AGENT_CODE_CACHE_DIR: join(stop, "below-a-file") })).stderr, "");
    const relative = await bridge({ SPROUT_AGENT_CODE_CACHE_DIR: "cache" });
    assert.match(relative.stderr, /Invalid SPROUT_AGENT_CODE_CACHE_DIR "cache": expected an absolute folder or off/);
    assert.equal(existsSync(join(project, "cache")), false);
  });

  // Last: it adds @opentelemetry/api to the project (a copy of the repository's: no registry here).
  test("sprout-agent/telemetry/otel imports under Node and Bun once @opentelemetry/api is installed", async () => {
    cpSync(join(repoRoot, "node_modules/@opentelemetry/api"), join(project, "node_modules/@opentelemetry/api"), {
      recursive: true,
    });
    writeFileSync(
      join(project, "otel.mjs"),
      `import { otelIdGenerator, otelObserver } from "sprout-agent/telemetry/otel";
const observe = otelObserver();
observe({ type: "prompt-start", sessionId: "s", prompt: 1 }, { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" });
console.log(JSON.stringify({ observer: typeof observe, id: otelIdGenerator.generateSpanId().length, resolved: import.meta.resolve("sprout-agent/telemetry/otel") }));
`,
    );
    const node = JSON.parse(ok(await run("node", ["otel.mjs"], project), "node otel.mjs"));
    assert.deepEqual([node.observer, node.id], ["function", 16]);
    assert.match(node.resolved, /\/node_modules\/sprout-agent\/dist\/telemetry\/otel\.js$/);
    const bun = JSON.parse(ok(await run(bin("bun"), ["otel.mjs"], project), "bun otel.mjs"));
    assert.match(bun.resolved, /\/node_modules\/sprout-agent\/telemetry\/otel\.ts$/);
  });
});
