/**
 * servers/hello-hook as a hook author gets it: the folder copied out of the repository, its
 * dependencies installed from its own package.json with no registry reachable (sprout-agent
 * from the packed tarball, the rest from the npm cache `npm ci` filled), type-checked with its
 * own tsconfig.json, and its own test run under Node (through the tsx it brings), Bun and
 * Deno: the real agent, the fake LLM of "sprout-agent/testing", the hook over stdio and HTTP.
 * Slow (pack, install, three runtimes) and independent of the runner, so it runs once.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { offlineEnv, ok, packOnce, run } from "./helpers/pack.ts";
import { repoRoot, runsOnce } from "./helpers/runtime.ts";

const source = join(repoRoot, "servers/hello-hook");

describe("servers/hello-hook copied out of the repository", {
  skip: !runsOnce && "runs once, under bun",
}, () => {
  let dir = "";
  let copy = "";
  const bin = (name: string) => join(repoRoot, "node_modules/.bin", name);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "hello-hook-copy-"));
    copy = join(dir, "hello-hook");
    cpSync(source, copy, { recursive: true, filter: (path) => !path.includes("node_modules") });
    // Its package.json names every dependency. What stands in for the registry: the entries of
    // the repository's own lockfile (the same versions, whose tarballs `npm ci` left in the npm
    // cache) under the copy's root entry, installed with --offline (cache only, never the
    // network); the unpublished sprout-agent comes from the tarball.
    const pkg = JSON.parse(readFileSync(join(copy, "package.json"), "utf8"));
    const lock = JSON.parse(readFileSync(join(repoRoot, "package-lock.json"), "utf8"));
    const { dependencies, devDependencies } = pkg;
    lock.name = pkg.name;
    lock.version = pkg.version;
    lock.packages[""] = { name: pkg.name, version: pkg.version, dependencies, devDependencies };
    for (const [path, entry] of Object.entries<Record<string, unknown>>(lock.packages)) {
      // The cache is keyed by the tarball's URL, which this lockfile leaves out.
      const name = path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);
      if (path !== "" && entry.resolved === undefined && entry.link === undefined) {
        entry.resolved = `https://registry.npmjs.org/${name}/-/${name.split("/").pop()}-${entry.version}.tgz`;
      }
    }
    writeFileSync(join(copy, "package-lock.json"), JSON.stringify(lock, null, 2));
    const { tarball } = await packOnce();
    const env = offlineEnv();
    delete env.npm_config_registry; // the cache's keys name the real registry
    ok(
      await run("npm", ["install", "--offline", "--no-audit", "--no-fund", tarball], copy, env, 120_000),
      "npm install",
    );
  });
  after(() => {
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
  });

  test("its package.json is an ES module package that names every package its files import", () => {
    const pkg = JSON.parse(readFileSync(join(source, "package.json"), "utf8"));
    assert.equal(pkg.type, "module");
    const declared = new Set([
      ...Object.keys(pkg.dependencies),
      ...Object.keys(pkg.devDependencies),
    ]);
    for (const file of readdirSync(source).filter((f) => f.endsWith(".ts"))) {
      const text = readFileSync(join(source, file), "utf8");
      for (const [, spec] of text.matchAll(/from "([^".][^"]*)"/g)) {
        if (spec!.startsWith("node:")) continue;
        const name = spec!.startsWith("@") ? spec!.split("/").slice(0, 2).join("/") : spec!.split("/")[0]!;
        assert.ok(
          declared.has(name),
          `${file} imports ${spec}, which package.json does not name`,
        );
      }
    }
  });

  test("it type-checks with its own tsconfig.json (npm run check)", async () => {
    ok(await run("npm", ["run", "check"], copy), "npm run check");
  });

  test("its test passes under Node (npm test, with its own tsx)", async () => {
    const out = ok(
      await run("npm", ["test"], copy, undefined, 120_000),
      "npm test",
    );
    assert.match(out, /# pass 2\b/);
  });

  test("its test passes under Bun", async () => {
    const ran = await run(bin("bun"), ["test", "./hello-hook.test.ts"], copy);
    ok(ran, "bun test");
    assert.match(ran.stderr, /\b2 pass\b/);
  });

  test("its test passes under Deno", async () => {
    const ran = await run(
      bin("deno"),
      ["test", "-A", "hello-hook.test.ts"],
      copy,
    );
    ok(ran, "deno test");
    assert.match(ran.stdout, /ok \| 2 passed/);
  });
});
