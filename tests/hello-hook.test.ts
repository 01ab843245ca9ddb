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
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { installCopy, ok, run } from "./helpers/pack.ts";
import { repoRoot, runsOnce } from "./helpers/runtime.ts";

const source = join(repoRoot, "servers/hello-hook");

describe("servers/hello-hook copied out of the repository", {
  skip: !runsOnce && "runs once, under bun",
}, () => {
  let dir = "";
  let copy = "";
  const bin = (name: string) => join(repoRoot, "node_modules/.bin", name);

  before(async () => {
    // Its package.json names every dependency; installed offline (tests/helpers/pack.ts).
    ({ dir, copy } = await installCopy(source, "hello-hook-copy-"));
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
