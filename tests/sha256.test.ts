/**
 * lib/util/sha256.ts, the hash of the tool names the registry rewrites: the FIPS 180-4 test
 * vectors, agreement with `node:crypto` at every padding boundary and on non-ASCII text, and
 * the mapped name it gives, unchanged from when the registry hashed with `node:crypto`.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { ToolNames } from "../lib/mcp/registry-tools.ts";
import { sha256Hex } from "../lib/util/sha256.ts";

describe("sha256Hex", () => {
  test("the FIPS 180-4 vectors", () => {
    assert.equal(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert.equal(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert.equal(
      sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    );
  });

  test("agrees with node:crypto on every length across the padding boundaries, and on non-ASCII text", () => {
    const texts: string[] = [];
    for (let n = 0; n <= 130; n++) texts.push("x".repeat(n));
    texts.push("名前".repeat(40), "é✓😀 \u0000 tab\t", "fs\u0000fs.read/file");
    for (const text of texts) {
      assert.equal(sha256Hex(text), createHash("sha256").update(text).digest("hex"), `${text.length} chars`);
    }
  });

  test("a mapped tool name is the one the registry gave before (the hash's first 8 hex digits)", () => {
    assert.equal(new ToolNames().nameFor("fs", "fs.read/file"), "fs__fs_read_file_02a5ccd8");
  });
});
