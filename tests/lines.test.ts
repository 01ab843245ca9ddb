/** `lib/acp/lines.ts`: newline framing with a size cap that never buffers an oversize line. */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readLines } from "../lib/acp/lines.ts";

async function* chunks(...parts: (string | Uint8Array)[]): AsyncGenerator<string | Uint8Array> {
  for (const part of parts) yield part;
}

async function read(maxLineBytes: number, ...parts: (string | Uint8Array)[]) {
  const lines: string[] = [];
  let oversize = 0;
  let trailing = 0;
  await readLines(chunks(...parts), { maxLineBytes }, {
    onLine: (l) => lines.push(new TextDecoder().decode(l)),
    onOversize: () => oversize++,
    onTrailing: (n) => (trailing = n),
  });
  return { lines, oversize, trailing };
}

describe("readLines", () => {
  test("cuts lines at \\n across chunks and strips a trailing \\r", async () => {
    const r = await read(100, "a\r\nb", "c\n\n", "d\n");
    assert.deepEqual(r.lines, ["a", "bc", "", "d"]);
    assert.equal(r.oversize, 0);
  });

  test("a character split across chunks arrives whole", async () => {
    const bytes = new TextEncoder().encode("é\n");
    const r = await read(100, bytes.subarray(0, 1), bytes.subarray(1));
    assert.deepEqual(r.lines, ["é"]);
  });

  test("an oversize line is reported once and skipped; the next line is read", async () => {
    const r = await read(10, "x".repeat(6), "y".repeat(6), "z".repeat(50), "\nok\n");
    assert.equal(r.oversize, 1);
    assert.deepEqual(r.lines, ["ok"]);
  });

  test("an oversize line inside one chunk is skipped up to its newline", async () => {
    const r = await read(10, `${"x".repeat(20)}\nfine\n${"y".repeat(11)}\nlast\n`);
    assert.equal(r.oversize, 2);
    assert.deepEqual(r.lines, ["fine", "last"]);
  });

  test("a line of exactly the cap is accepted, with or without \\r", async () => {
    const r = await read(4, "abcd\nefgh\r\n");
    assert.deepEqual(r.lines, ["abcd", "efgh"]);
    assert.equal(r.oversize, 0);
  });

  test("bytes after the last newline are reported and dropped", async () => {
    const r = await read(100, "a\nrest");
    assert.deepEqual(r.lines, ["a"]);
    assert.equal(r.trailing, 4);
  });

  test("memory stays bounded: 50 MB of one line in 64 KiB chunks", async () => {
    const chunk = new Uint8Array(65536).fill(120);
    async function* big() {
      for (let i = 0; i < 800; i++) yield chunk;
      yield new TextEncoder().encode("\nafter\n");
    }
    const lines: string[] = [];
    let oversize = 0;
    await readLines(big(), { maxLineBytes: 1024 }, {
      onLine: (l) => lines.push(new TextDecoder().decode(l)),
      onOversize: () => oversize++,
    });
    assert.equal(oversize, 1);
    assert.deepEqual(lines, ["after"]);
  });
});
