/**
 * Subagents as data (SPEC 13.1, 13.2, 13.5): the front-matter parser, agent files and their
 * warnings, the project and user folders, the definitions' checks, and the report rule (CASES C40).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseFrontMatter } from "../lib/subagents/front-matter.ts";
import { checkSubagents, subagentFromFile } from "../lib/subagents/definitions.ts";
import { loadSubagentFiles, subagentFolders } from "../lib/subagents/files.ts";
import { subagentReport } from "../lib/subagents/report.ts";
import { subagentToolDef, toolAllowed } from "../lib/subagents/tools.ts";

describe("parseFrontMatter", () => {
  test("reads Claude Code's agent file shapes: plain, quoted, block and list values, comments", () => {
    const text = [
      "---",
      "name: code-reviewer",
      'description: "Reviews code.\\nUse it after edits: it reads, never writes."',
      "tools: Read, Grep, Glob   # the tools",
      "model: 'sonnet'",
      "color: blue",
      "list:",
      "  - fs__read_*",
      "  - 'git'",
      'flow: [a, "b, c"]',
      "long: >",
      "  one",
      "  two",
      "",
      "  three",
      "kept: |",
      "  line 1",
      "    line 2",
      "---",
      "",
      "You review code.",
      "",
      "Be brief.",
    ].join("\n");
    const fm = parseFrontMatter(text);
    assert.deepEqual(fm.problems, []);
    assert.deepEqual(fm.fields, {
      name: "code-reviewer",
      description: "Reviews code.\nUse it after edits: it reads, never writes.",
      tools: "Read, Grep, Glob",
      model: "sonnet",
      color: "blue",
      list: ["fs__read_*", "git"],
      flow: ["a", "b, c"],
      long: "one two\nthree",
      kept: "line 1\n  line 2",
    });
    assert.equal(fm.body, "You review code.\n\nBe brief.");
  });

  test("names the line of what it cannot read; no front matter is not a crash", () => {
    assert.deepEqual(parseFrontMatter('---\nname reviewer\nx: "open\n---\nbody').problems, [
      'line 2: not a "key: value" line',
      "line 3: a double-quoted value is not closed",
    ]);
    assert.deepEqual(parseFrontMatter("---\nname: a\n").problems, ["the front matter has no closing --- line"]);
    assert.equal(parseFrontMatter("# Just markdown").found, false);
    assert.deepEqual(parseFrontMatter("\uFEFF---\r\nname: a\r\n---\r\nbody").fields, { name: "a" });
  });
});

describe("agent files", () => {
  test("a good file is a definition; a bad one a warning naming the file and the field", () => {
    const good = subagentFromFile(
      "---\nname: reviewer\ndescription: Reviews diffs\ntools: fs__read_*, git\nmodel: inherit\nmaxRounds: 5\ntimeoutSecs: 30\n---\nYou review code.",
      "/p/reviewer.md",
    );
    assert.deepEqual(good.definition, {
      name: "reviewer",
      description: "Reviews diffs",
      instructions: "You review code.",
      tools: ["fs__read_*", "git"],
      maxRounds: 5,
      timeoutMs: 30_000,
      source: "/p/reviewer.md",
    });
    const cases: Array<[string, RegExp]> = [
      ["---\nname: Bad Name\ndescription: d\n---\nbody", /"\/p\/x\.md": field "name": "Bad Name" must be 1 to 48/],
      ["---\nname: a\n---\nbody", /field "description": it must be a non-empty string/],
      ["---\nname: a\ndescription: d\n---\n", /field "instructions \(the body after the front matter\)"/],
      [
        "---\nname: a\ndescription: d\nmaxRounds: ten\n---\nbody",
        /field "maxRounds" must be a whole number, not "ten"/,
      ],
      ["---\nname: a\ndescription: d\ntools: ,\n---\nbody", /field "tools" names no tool/],
      ["---\nname: [a, b]\ndescription: d\n---\nbody", /field "name" must be one value/],
      ["no front matter", /it has no front matter/],
      ["---\nname: 'a\n---\nbody", /line 2: a single-quoted value is not closed/],
    ];
    for (const [text, message] of cases) {
      const read = subagentFromFile(text, "/p/x.md");
      assert.equal(read.definition, undefined, text);
      assert.match(read.warning!, /^Skipped agent file "\/p\/x\.md": /);
      assert.match(read.warning!, message);
    }
  });

  test("the project's folder and the user's: project files win, bad files warn, a missing folder is none", async () => {
    const root = mkdtempSync(join(tmpdir(), "sprout-agents-"));
    try {
      const project = join(root, "project");
      const config = join(root, "config");
      mkdirSync(join(project, ".sprout-agent/agents"), { recursive: true });
      mkdirSync(join(config, "sprout-agent/agents"), { recursive: true });
      const file = (dir: string, name: string, text: string) => writeFileSync(join(dir, name), text);
      const p = join(project, ".sprout-agent/agents");
      const u = join(config, "sprout-agent/agents");
      file(p, "reviewer.md", "---\nname: reviewer\ndescription: project reviewer\n---\nP");
      file(p, "broken.md", "---\nname: broken\n---\nno description");
      file(p, "notes.txt", "not an agent");
      file(u, "reviewer.md", "---\nname: reviewer\ndescription: user reviewer\n---\nU");
      file(u, "tester.md", "---\nname: tester\ndescription: user tester\n---\nT");
      const env = { XDG_CONFIG_HOME: config, HOME: "/nowhere" };
      assert.deepEqual(subagentFolders({ cwd: project, env }), [p, u]);
      const { definitions, warnings } = await loadSubagentFiles({ cwd: project, env });
      assert.deepEqual(definitions.map((d) => [d.name, d.description]), [
        ["reviewer", "project reviewer"],
        ["tester", "user tester"],
      ]);
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!, /broken\.md": field "description"/);
      assert.deepEqual(await loadSubagentFiles({ cwd: join(root, "none"), env: {} }), {
        definitions: [],
        warnings: [],
      });
      assert.deepEqual(subagentFolders({ cwd: "/p", env: { HOME: "/home/me" } }), [
        "/p/.sprout-agent/agents",
        "/home/me/.config/sprout-agent/agents",
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("checkSubagents names the option and the field", () => {
    const base = { name: "r", description: "d", instructions: "i" };
    assert.throws(() => checkSubagents("x"), /Invalid subagents: it must be an array/);
    assert.throws(
      () => checkSubagents([{ ...base, tools: [""] }]),
      /Invalid subagents\[0\]\.tools: it must be an array/,
    );
    assert.throws(() => checkSubagents([{ ...base, maxTokens: -1 }]), /Invalid subagents\[0\]\.maxTokens: -1 is not/);
    assert.throws(() => checkSubagents([{ ...base, instructions: " " }]), /Invalid subagents\[0\]\.instructions/);
    assert.deepEqual(checkSubagents([{ ...base, model: "inherit" }]), [base]);
  });
});

describe("the tools and the report", () => {
  test("a subagent tool is subagent_<name> with one required task; patterns name servers or globs", () => {
    const def = subagentToolDef({ name: "reviewer", description: "Reviews", instructions: "i" });
    assert.equal(def.name, "subagent_reviewer");
    assert.equal(def.description, 'Subagent "reviewer": Reviews');
    assert.deepEqual((def.inputSchema as { required: string[] }).required, ["task"]);
    assert.equal(toolAllowed(undefined, "fs__read", "fs"), true);
    assert.equal(toolAllowed(["fs"], "fs__write", "fs"), true);
    assert.equal(toolAllowed(["fs"], "git__log", "git"), false);
    assert.equal(toolAllowed(["fs__read*"], "fs__read_file", "fs"), true);
    assert.equal(toolAllowed(["fs__read*"], "fs__write", "fs"), false);
    assert.equal(toolAllowed([], "fs__read", "fs"), false);
  });

  test("C40 the report: every answer in order, text beside tool calls left out, repeats dropped", () => {
    const a = (text: string, calls = 0) => ({
      role: "assistant" as const,
      text,
      toolCalls: Array.from({ length: calls }, (_, i) => ({ id: `c${i}`, name: "fs__read", arguments: {} })),
    });
    assert.equal(
      subagentReport([{ role: "user", text: "t" }, a("Let me look", 1), a("REPORT"), a("", 1), a("OK.")]),
      "REPORT\n\nOK.",
    );
    assert.equal(subagentReport([a("REPORT"), a("REPORT"), a("  ")]), "REPORT");
    assert.equal(subagentReport([a("half way", 1)]), "half way", "no turn ended: the last text");
    assert.equal(subagentReport([{ role: "user", text: "t" }]), "");
  });
});
