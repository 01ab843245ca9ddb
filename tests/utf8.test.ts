import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { byteLength, clampUtf8, tailUtf8 } from "../lib/util/utf8.ts";

describe("utf8", () => {
  test("byteLength counts UTF-8 bytes, a lone surrogate as 3", () => {
    assert.equal(byteLength("aé世🎉"), 1 + 2 + 3 + 4);
    assert.equal(byteLength("\ud800"), 3);
  });

  test("clampUtf8 never splits a character and counts the marker in the limit", () => {
    assert.equal(clampUtf8("héllo", 2), "h");
    assert.equal(clampUtf8("héllo", 3), "hé");
    assert.equal(clampUtf8("short", 10, "…"), "short", "text within the limit is unchanged, no marker");
    assert.equal(clampUtf8("ééé", 5, "…"), "é…");
    assert.equal(clampUtf8("🎉🎉", 6, "…"), "…", "no room for a 4-byte character after the marker");
    assert.equal(clampUtf8("abcdef", 2, "…"), "", "a limit smaller than the marker gives nothing");
    for (let max = 0; max < 20; max++) {
      const out = clampUtf8("é世🎉a".repeat(3), max, "\n[truncated]");
      assert.ok(!out.includes("\uFFFD"));
      assert.ok(byteLength(out) <= max || out === "", `${max}: ${out}`);
    }
  });

  test("tailUtf8 keeps the last bytes at a character boundary", () => {
    const bytes = new TextEncoder().encode("a世b");
    assert.equal(tailUtf8(bytes, 1), "b");
    assert.equal(tailUtf8(bytes, 3), "b", "the 世 would be split, so it is dropped");
    assert.equal(tailUtf8(bytes, 4), "世b");
  });
});
