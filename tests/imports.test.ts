/**
 * The core's zero-dependency rule: `mod.ts` and everything it reaches import only relative
 * `.ts` files and `node:` builtins, so Deno can import it by URL.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { repoRoot } from "./helpers/runtime.ts";

/** Static and dynamic import specifiers of a TypeScript source. */
function specifiers(source: string): string[] {
  const found: string[] = [];
  const patterns = [
    /^\s*(?:import|export)\s+(?:type\s+)?(?:[^'"]*?\s+from\s+)?["']([^"']+)["']/gm,
    /\bimport\(\s*["']([^"']+)["']\s*\)/g,
  ];
  for (const re of patterns) for (const m of source.matchAll(re)) found.push(m[1]!);
  return found;
}

function graph(entry: string): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    const specs = specifiers(readFileSync(file, "utf8"));
    seen.set(file, specs);
    for (const s of specs) if (s.startsWith(".")) visit(resolve(dirname(file), s));
  };
  visit(entry);
  return seen;
}

describe("import graph of mod.ts", () => {
  const files = graph(resolve(repoRoot, "mod.ts"));

  test("reaches the core files", () => {
    assert.ok(files.size > 10, `only ${files.size} files reached`);
    for (const f of files.keys()) {
      const rel = relative(repoRoot, f);
      assert.ok(rel === "mod.ts" || rel.startsWith("lib/"), `${rel} is outside lib/`);
    }
  });

  test("imports only relative .ts files and node: builtins", () => {
    const bad: string[] = [];
    for (const [file, specs] of files) {
      for (const s of specs) {
        const ok = s.startsWith("node:") || (s.startsWith(".") && s.endsWith(".ts"));
        if (!ok) bad.push(`${relative(repoRoot, file)} imports ${JSON.stringify(s)}`);
      }
    }
    assert.deepEqual(bad, []);
  });

  test("every file in lib/, reachable from mod.ts or not, keeps the same rule", () => {
    const libFiles = readdirSync(resolve(repoRoot, "lib"), { recursive: true })
      .map(String)
      .filter((f) => f.endsWith(".ts"))
      .map((f) => resolve(repoRoot, "lib", f));
    assert.ok(libFiles.length >= files.size - 1);
    const bad: string[] = [];
    for (const file of libFiles) {
      for (const s of specifiers(readFileSync(file, "utf8"))) {
        if (!(s.startsWith("node:") || (s.startsWith(".") && s.endsWith(".ts")))) {
          bad.push(`${relative(repoRoot, file)} imports ${JSON.stringify(s)}`);
        }
      }
    }
    assert.deepEqual(bad, []);
  });

  test("the specifier scanner sees every import form", () => {
    const specs = specifiers(
      `import a from "./a.ts";\nimport type { B } from "./b.ts";\nexport * from "./c.ts";\nimport "zod";\nconst d = await import("./d.ts");`,
    );
    assert.deepEqual(specs.sort(), ["./a.ts", "./b.ts", "./c.ts", "./d.ts", "zod"]);
  });
});

/** Every `.ts` file under `lib/`, absolute. */
function libFiles(): string[] {
  return readdirSync(resolve(repoRoot, "lib"), { recursive: true })
    .map(String)
    .filter((f) => f.endsWith(".ts"))
    .map((f) => resolve(repoRoot, "lib", f));
}

/** The relative imports of every `lib/**` file, as repository-relative paths (`lib/loop.ts` → `lib/hooks.ts`, …). */
function libGraph(): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const file of libFiles()) {
    const targets = specifiers(readFileSync(file, "utf8"))
      .filter((s) => s.startsWith("."))
      .map((s) => relative(repoRoot, resolve(dirname(file), s)).split("\\").join("/"));
    edges.set(relative(repoRoot, file).split("\\").join("/"), targets);
  }
  return edges;
}

/** Every cycle of `edges` (one per strongly connected group of files), each as `a → b → a`. */
function cycles(edges: Map<string, string[]>): string[] {
  const found: string[] = [];
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (file: string) => {
    state.set(file, "open");
    path.push(file);
    for (const next of edges.get(file) ?? []) {
      if (state.get(next) === "open") found.push([...path.slice(path.indexOf(next)), next].join(" → "));
      else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(file, "done");
  };
  for (const file of [...edges.keys()].sort()) if (!state.has(file)) visit(file);
  return found;
}

/** The layering rules of docs/ARCHITECTURE.md broken by `edges`, one line per offending import. */
function layeringProblems(edges: Map<string, string[]>): string[] {
  const problems = cycles(edges).map((c) => `import cycle: ${c}`);
  // The fake LLM's own files, and the two entry points that expose it to tests.
  const fake = new Set(["lib/llm/validate.ts", "lib/_fake_llm_wire.ts"]);
  const fakeUsers = new Set([...fake, "lib/testing.ts", "testing.ts"]);
  for (const [file, targets] of edges) {
    for (const target of targets) {
      if (file.startsWith("lib/mcp/") && target.startsWith("lib/llm/")) {
        problems.push(`${file} (lib/mcp) imports ${target} (lib/llm)`);
      }
      if (fake.has(target) && !fakeUsers.has(file)) problems.push(`${file} imports the fake LLM's ${target}`);
    }
  }
  return problems;
}

describe("layering of lib/", () => {
  test("no import cycle, lib/mcp never imports lib/llm, only the testing entry imports the fake LLM", () => {
    const edges = libGraph();
    assert.ok(edges.size > 20, `only ${edges.size} files in lib/`);
    assert.deepEqual(layeringProblems(edges), []);
  });

  test("the checks name what they catch", () => {
    const edges = new Map<string, string[]>([
      ["lib/a.ts", ["lib/b.ts"]],
      ["lib/b.ts", ["lib/c.ts"]],
      ["lib/c.ts", ["lib/a.ts"]],
      ["lib/mcp/x.ts", ["lib/llm/sse.ts"]],
      ["lib/tool-calls.ts", ["lib/llm/validate.ts"]],
      ["lib/testing.ts", ["lib/llm/validate.ts", "lib/_fake_llm_wire.ts"]],
      ["lib/_fake_llm_wire.ts", ["lib/llm/validate.ts"]],
    ]);
    assert.deepEqual(layeringProblems(edges), [
      "import cycle: lib/a.ts → lib/b.ts → lib/c.ts → lib/a.ts",
      "lib/mcp/x.ts (lib/mcp) imports lib/llm/sse.ts (lib/llm)",
      "lib/tool-calls.ts imports the fake LLM's lib/llm/validate.ts",
    ]);
  });
});
