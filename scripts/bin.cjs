#!/usr/bin/env node
// sprout-agent's `bin`, dist/bin.cjs: scripts/build.mjs writes it from scripts/bin.cjs with
// the hash of dist/cli-bridge.cjs in place of @BRIDGE_HASH@. Every command, under every
// runtime, is dist/cli.js, except `hook-bridge` under Node (≥ 20.16): a host spawns a command
// hook on every event, and most of what such a start costs Node is compiling JavaScript.
// There this file compiles dist/cli-bridge.cjs (the bridge alone, CommonJS) with `vm.Script`
// and a V8 code cache kept in SPROUT_AGENT_CODE_CACHE_DIR (default
// $XDG_CACHE_HOME/sprout-agent, else ~/.cache/sprout-agent; `off` for none): a Stop event
// through the todo-enforcer over HTTP takes about 38 ms instead of 56 (docs/PERFORMANCE.md,
// docs/BRIDGE.md). A cache that is missing, stale, truncated or cannot be written costs that run
// the compile and nothing else; one damaged in place can crash V8, which checks no checksum
// (issue 24, open: a checksum header and an owner check are the fix). CommonJS, because an ES module entry costs Node its ES module
// loader (about 2.5 ms of each event).
"use strict";

const { realpathSync } = require("node:fs");
const { dirname, join } = require("node:path");

// The folder of this file, also when it was reached through node_modules/.bin and
// `--preserve-symlinks-main`.
const here = dirname(realpathSync(__filename));
const node = globalThis.Deno === undefined && globalThis.Bun === undefined;
if (!(node && process.argv[2] === "hook-bridge" && startBridge())) {
  import(require("node:url").pathToFileURL(join(here, "cli.js")).href);
}

/**
 * Runs dist/cli-bridge.cjs with the code cache. Returns false, having run nothing, where it
 * cannot (a Node before 20.16, `--help`, a missing bundle): then dist/cli.js runs
 * `hook-bridge` as it runs the rest.
 */
function startBridge() {
  const args = process.argv.slice(3);
  if (args.includes("--help") || args.includes("-h") || typeof process.getBuiltinModule !== "function") return false;
  const fs = require("node:fs");
  const vm = require("node:vm");
  const file = join(here, "cli-bridge.cjs");
  let source;
  try {
    source = fs.readFileSync(file, "utf8");
  } catch {
    return false;
  }
  const dir = cacheDir(process.env);
  const suffix = `-${process.version}-${process.arch}.bin`;
  const cacheFile = dir === undefined ? undefined : join(dir, `cli-bridge-@BRIDGE_HASH@${suffix}`);
  let cachedData;
  try {
    if (cacheFile !== undefined) cachedData = fs.readFileSync(cacheFile);
  } catch {
    // None yet: this run writes it.
  }
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: file,
    cachedData,
  });
  if (cacheFile !== undefined && (cachedData === undefined || script.cachedDataRejected === true)) {
    // At exit, so that the cache holds the functions this run compiled lazily as well.
    process.once("exit", () => writeCache(fs, dir, cacheFile, suffix, script));
  }
  const module = { exports: {} };
  const bundleRequire = require("node:module").createRequire(file);
  script.runInThisContext()(module.exports, bundleRequire, module, file, here);
  return true;
}

/** The folder of the code cache, or undefined for none: `off`, no HOME or XDG_CACHE_HOME, or an invalid value (said on stderr). */
function cacheDir(env) {
  const { isAbsolute } = require("node:path");
  const chosen = env.SPROUT_AGENT_CODE_CACHE_DIR;
  if (chosen !== undefined && chosen !== "") {
    if (chosen.toLowerCase() === "off") return undefined;
    if (isAbsolute(chosen)) return chosen;
    process.stderr.write(
      `sprout-agent hook-bridge: Invalid SPROUT_AGENT_CODE_CACHE_DIR ${
        JSON.stringify(chosen)
      }: expected an absolute folder or off; running without a code cache\n`,
    );
    return undefined;
  }
  const xdg = env.XDG_CACHE_HOME;
  if (xdg !== undefined && isAbsolute(xdg)) return join(xdg, "sprout-agent");
  const home = env.HOME;
  return home !== undefined && isAbsolute(home) ? join(home, ".cache", "sprout-agent") : undefined;
}

/**
 * Writes the cache through a temporary file and a rename (a concurrent reader sees a whole
 * file or none), and removes this Node's caches of other builds. Any failure is ignored.
 */
function writeCache(fs, dir, cacheFile, suffix, script) {
  const temp = `${cacheFile}.${process.pid}.tmp`;
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(temp, script.createCachedData(), { mode: 0o600 });
    fs.renameSync(temp, cacheFile);
    for (const name of fs.readdirSync(dir)) {
      if (name.startsWith("cli-bridge-") && name.endsWith(suffix) && join(dir, name) !== cacheFile) {
        fs.rmSync(join(dir, name), { force: true });
      }
    }
  } catch {
    // A read-only or full disk: the next run compiles again.
    try {
      fs.rmSync(temp, { force: true });
    } catch {
      // Nothing was written.
    }
  }
}
