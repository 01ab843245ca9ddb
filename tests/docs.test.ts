/**
 * The repository is self-contained: no file points at documents outside it, and every spec
 * section the code cites ("SPEC section 6.5", "SPEC 6.5", "SPEC sections 8.1 and 8.5") is a
 * heading of docs/SPEC.md. Cheap text checks over the files git would track.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { repoRoot } from "./helpers/runtime.ts";

/** Names and suffixes `.gitignore` leaves out (`dir/` and `*.ext` lines), plus `.git`. */
function ignoreRules(): { dirs: Set<string>; suffixes: string[] } {
  const dirs = new Set([".git", "node_modules"]);
  const suffixes: string[] = [];
  const file = join(repoRoot, ".gitignore");
  const lines = existsSync(file) ? readFileSync(file, "utf8").split("\n").map((l) => l.trim()) : [];
  for (const line of lines) {
    if (line === "" || line.startsWith("#")) continue;
    if (line.startsWith("*.")) suffixes.push(line.slice(1));
    else dirs.add(line.replace(/^\/|\/$/g, ""));
  }
  return { dirs, suffixes };
}

/** Every text file of the repository outside ignored folders, as a path relative to the root. */
function repoFiles(): string[] {
  const { dirs, suffixes } = ignoreRules();
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!dirs.has(entry.name)) walk(path);
      } else if (entry.isFile() && !suffixes.some((s) => entry.name.endsWith(s)) && statSync(path).size < 4_000_000) {
        out.push(relative(repoRoot, path));
      }
    }
  };
  walk(repoRoot);
  return out.sort();
}

function text(file: string): string {
  return readFileSync(join(repoRoot, file), "utf8");
}

/** Section numbers cited as SPEC in `source`: lists ("3, 4, 7", "8.1 and 8.5") and both ends of ranges ("6.6–6.9"). */
function citedSections(source: string): string[] {
  const found: string[] = [];
  const number = String.raw`\d+(?:\.\d+)?`;
  const cite = new RegExp(
    String.raw`\bSPEC\s+(?:sections?\s+)?(${number}(?:(?:\s*,\s*|\s+and\s+|\s*[–-]\s*)${number})*)`,
    "g",
  );
  for (const m of source.matchAll(cite)) found.push(...m[1]!.split(/\s*,\s*|\s+and\s+|\s*[–-]\s*/));
  return found;
}

/** Numbers of the `## N.` and `### N.M` headings of docs/SPEC.md. */
function specHeadings(): Set<string> {
  const headings = new Set<string>();
  for (const m of text("docs/SPEC.md").matchAll(/^#{2,3} (\d+(?:\.\d+)?)\.? /gm)) headings.add(m[1]!);
  return headings;
}

describe("docs: the repository is self-contained", () => {
  const files = repoFiles();
  const self = relative(repoRoot, new URL(import.meta.url).pathname);

  test("the walk finds the repository's sources and docs", () => {
    for (const f of ["README.md", "cli.ts", "lib/agent/loop.ts", "docs/SPEC.md", "docs/CASES.md"]) {
      assert.ok(files.includes(f), `${f} not found among ${files.length} files`);
    }
    assert.ok(!files.some((f) => f.startsWith("node_modules/")), "node_modules was walked");
  });

  test("no file points at documents outside the repository", () => {
    // Built so that this file does not match itself.
    const outside = ["../" + "shared/", "shared" + "/docs/"];
    const hits: string[] = [];
    for (const file of files) {
      if (file === self) continue;
      const lines = text(file).split("\n");
      lines.forEach((line, i) => {
        if (outside.some((needle) => line.includes(needle))) hits.push(`${file}:${i + 1}: ${line.trim()}`);
      });
    }
    assert.deepEqual(hits, []);
  });

  test("every SPEC section cited in the code and docs is a heading of docs/SPEC.md", () => {
    const headings = specHeadings();
    for (let n = 1; n <= 11; n++) assert.ok(headings.has(String(n)), `docs/SPEC.md has no section ${n}`);
    const missing: string[] = [];
    let cited = 0;
    for (const file of files) {
      if (!/\.(ts|md)$/.test(file) || file === "docs/SPEC.md") continue;
      for (const section of citedSections(text(file))) {
        cited++;
        if (!headings.has(section)) missing.push(`${file}: SPEC ${section}`);
      }
    }
    assert.ok(cited > 100, `only ${cited} citations found: the pattern no longer matches the code's style`);
    assert.deepEqual(missing, []);
  });

  test("citedSections reads lists and ranges", () => {
    assert.deepEqual(citedSections("(SPEC sections 8.1 and 8.5; SPEC 3, 4, 7; SPEC 6.6–6.9, rule 1)"), [
      "8.1",
      "8.5",
      "3",
      "4",
      "7",
      "6.6",
      "6.9",
    ]);
    assert.deepEqual(citedSections("SPEC section 6.5. SPEC's JSON, the SPEC"), ["6.5"]);
  });
});
