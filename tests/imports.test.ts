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

/** The relative imports of every `lib/**` file, as repository-relative paths (`lib/agent/loop.ts` → `lib/hooks/runner.ts`, …). */
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

/**
 * The folders of `lib/`, lowest first (docs/ARCHITECTURE.md, "Layering"): a folder may import only
 * folders before it, and only those its README's "May import:" line names.
 */
const LAYERS = [
  "util",
  "http",
  "conversation",
  "sessions",
  "mcp",
  "config",
  "llm",
  "hooks",
  "context",
  "subagents",
  "agent",
  "acp",
  "bridge",
  "cli",
  "testing",
] as const;

/** The folder of a `lib/` path (`lib/agent/loop.ts` → `agent`), or undefined for a file directly in `lib/`. */
function folderOf(path: string): string | undefined {
  const parts = path.split("/");
  return parts.length >= 3 && parts[0] === "lib" ? parts[1] : undefined;
}

/** Each folder's "May import:" list, read from `lib/<folder>/README.md` ("nothing …" is the empty list). */
function declaredImports(
  folders: readonly string[],
  read: (path: string) => string | undefined,
): Map<string, string[]> {
  const declared = new Map<string, string[]>();
  for (const folder of folders) {
    const text = read(`lib/${folder}/README.md`);
    const line = text?.match(/^May import: (.*)$/m)?.[1];
    if (line === undefined) continue;
    declared.set(
      folder,
      line.startsWith("nothing") ? [] : line.replace(/\(.*\)/g, "").split(",").map((s) => s.trim()).filter(Boolean),
    );
  }
  return declared;
}

/** The layering rules of docs/ARCHITECTURE.md broken by `edges`, one line per offending import. */
function layeringProblems(
  edges: Map<string, string[]>,
  declared: Map<string, string[]> = new Map(LAYERS.map((l, i) => [l, LAYERS.slice(0, i)])),
): string[] {
  const problems = cycles(edges).map((c) => `import cycle: ${c}`);
  const rank = new Map<string, number>(LAYERS.map((l, i) => [l, i]));
  for (const [folder, list] of declared) {
    for (const other of list) {
      if (!rank.has(other)) problems.push(`lib/${folder}/README.md names ${other}, which is not a folder of lib/`);
      else if (rank.get(other)! >= rank.get(folder)!) {
        problems.push(`lib/${folder}/README.md allows ${other}, which is not below it`);
      }
    }
  }
  // The fake LLM's own files, and the two entry points that expose it to tests.
  const fake = new Set(["lib/testing/validate.ts", "lib/testing/wire.ts"]);
  const fakeUsers = new Set([...fake, "lib/testing/fake-llm.ts", "testing.ts"]);
  for (const [file, targets] of edges) {
    const from = folderOf(file);
    if (file.startsWith("lib/") && from === undefined) problems.push(`${file} is not in a folder of lib/`);
    else if (from !== undefined && !rank.has(from)) problems.push(`${file}: lib/${from}/ is not one of the layers`);
    else if (from !== undefined && !declared.has(from)) {
      problems.push(`lib/${from}/README.md is missing or has no "May import:" line`);
    }
    for (const target of targets) {
      const to = folderOf(target);
      if (file.startsWith("lib/mcp/") && target.startsWith("lib/llm/")) {
        problems.push(`${file} (lib/mcp) imports ${target} (lib/llm)`);
      } else if (from !== undefined && to !== undefined && to !== from && declared.has(from)) {
        if (!declared.get(from)!.includes(to)) problems.push(`${file} (lib/${from}) imports ${target} (lib/${to})`);
      }
      if (fake.has(target) && !fakeUsers.has(file)) problems.push(`${file} imports the fake LLM's ${target}`);
    }
  }
  return [...new Set(problems)];
}

describe("layering of lib/", () => {
  test("no import cycle, each folder imports only what its README allows, lib/mcp never imports lib/llm, only the testing entry imports the fake LLM", () => {
    const edges = libGraph();
    assert.ok(edges.size > 20, `only ${edges.size} files in lib/`);
    const folders = readdirSync(resolve(repoRoot, "lib"), { withFileTypes: true })
      .filter((e) => e.isDirectory()).map((e) => e.name).sort();
    assert.deepEqual(folders, [...LAYERS].sort(), "every folder of lib/ is a layer, every layer a folder");
    const declared = declaredImports(folders, (path) => {
      try {
        return readFileSync(resolve(repoRoot, path), "utf8");
      } catch {
        return undefined;
      }
    });
    assert.deepEqual(layeringProblems(edges, declared), []);
  });

  test("the checks name what they catch", () => {
    const edges = new Map<string, string[]>([
      ["lib/util/a.ts", ["lib/util/b.ts"]],
      ["lib/util/b.ts", ["lib/util/c.ts"]],
      ["lib/util/c.ts", ["lib/util/a.ts"]],
      ["lib/mcp/x.ts", ["lib/llm/sse.ts"]],
      ["lib/agent/tool-calls.ts", ["lib/testing/validate.ts"]],
      ["lib/testing/fake-llm.ts", ["lib/testing/validate.ts", "lib/testing/wire.ts"]],
      ["lib/testing/wire.ts", ["lib/testing/validate.ts"]],
      ["lib/hooks/runner.ts", ["lib/agent/loop.ts", "lib/config/config.ts"]],
      ["lib/loose.ts", []],
      ["lib/extra/y.ts", []],
    ]);
    const declared = new Map<string, string[]>([
      ["util", []],
      ["mcp", ["util"]],
      ["agent", ["util", "hooks"]],
      ["hooks", ["config", "acp"]],
      ["testing", ["llm", "nowhere"]],
    ]);
    assert.deepEqual(layeringProblems(edges, declared), [
      "import cycle: lib/util/a.ts → lib/util/b.ts → lib/util/c.ts → lib/util/a.ts",
      "lib/hooks/README.md allows acp, which is not below it",
      "lib/testing/README.md names nowhere, which is not a folder of lib/",
      "lib/mcp/x.ts (lib/mcp) imports lib/llm/sse.ts (lib/llm)",
      "lib/agent/tool-calls.ts (lib/agent) imports lib/testing/validate.ts (lib/testing)",
      "lib/agent/tool-calls.ts imports the fake LLM's lib/testing/validate.ts",
      "lib/hooks/runner.ts (lib/hooks) imports lib/agent/loop.ts (lib/agent)",
      "lib/loose.ts is not in a folder of lib/",
      "lib/extra/y.ts: lib/extra/ is not one of the layers",
    ]);
    assert.deepEqual(
      [
        ...declaredImports(["util", "mcp", "gone"], (p) =>
          ({
            "lib/util/README.md": "# x\n\nMay import: nothing (only each other)\n",
            "lib/mcp/README.md": "May import: util, conversation, http (never llm)",
          })[p]).entries(),
      ],
      [["util", []], ["mcp", ["util", "conversation", "http"]]],
    );
  });
});
