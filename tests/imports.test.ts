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
        if (!(s.startsWith("node:") || (s.startsWith(".") && s.endsWith(".ts")))) bad.push(`${relative(repoRoot, file)} imports ${JSON.stringify(s)}`);
      }
    }
    assert.deepEqual(bad, []);
  });

  test("the specifier scanner sees every import form", () => {
    const specs = specifiers(`import a from "./a.ts";\nimport type { B } from "./b.ts";\nexport * from "./c.ts";\nimport "zod";\nconst d = await import("./d.ts");`);
    assert.deepEqual(specs.sort(), ["./a.ts", "./b.ts", "./c.ts", "./d.ts", "zod"]);
  });
});
