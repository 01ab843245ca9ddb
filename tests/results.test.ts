import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { base64DecodedBytes } from "../lib/util/base64.ts";
import { resultText } from "../lib/llm/http.ts";
import { contentText, formatToolContent, NO_OUTPUT, truncateMiddle } from "../lib/conversation/results.ts";
import type { ResultBlock } from "../lib/conversation/types.ts";
import { byteLength } from "../lib/util/utf8.ts";

describe("tool results (SPEC section 6.7)", () => {
  test("text blocks are joined with a newline, images kept", () => {
    const out = formatToolContent(
      [{ type: "text", text: "a" }, { type: "text", text: "b" }, {
        type: "image",
        mimeType: "image/png",
        data: "AAAA",
      }],
      1000,
    );
    assert.deepEqual(out, [{ type: "text", text: "a\nb" }, { type: "image", mimeType: "image/png", data: "AAAA" }]);
  });

  test("empty and whitespace-only output becomes (no output)", () => {
    assert.deepEqual(formatToolContent([], 1000), [{ type: "text", text: NO_OUTPUT }]);
    assert.deepEqual(formatToolContent([{ type: "text", text: "" }], 1000), [{ type: "text", text: NO_OUTPUT }]);
    assert.deepEqual(formatToolContent([{ type: "text", text: " \n " }], 1000), [{ type: "text", text: NO_OUTPUT }]);
  });

  test("C17 a 5 MB result and a 2 MB single line are cut to the cap with the original size", () => {
    const cap = 51200;
    for (const size of [5_000_000, 2_000_000]) {
      const text = size === 5_000_000 ? "line of text\n".repeat(size / 13) : "x".repeat(size);
      const [block] = formatToolContent([{ type: "text", text }], cap);
      assert.ok(block?.type === "text");
      assert.ok(byteLength(block.text) <= cap, `${byteLength(block.text)} > ${cap}`);
      assert.match(block.text, new RegExp(`${byteLength(text)} bytes in all`));
      assert.ok(block.text.startsWith(text.slice(0, 100)));
      assert.ok(block.text.endsWith(text.slice(-100)));
    }
  });

  test("truncation never splits a multi-byte character", () => {
    const text = "é".repeat(10_000);
    const cut = truncateMiddle(text, 1001);
    assert.ok(byteLength(cut) <= 1001);
    assert.ok(!cut.includes("\uFFFD"));
  });
});

describe("one image, one size (the tool-end event, the model's text, the summary request)", () => {
  // "hi" is 2 bytes: padded "aGk=", unpadded "aGk", and MIME-wrapped base64 all decode to 2.
  const image = (data: string): ResultBlock => ({ type: "image", mimeType: "image/png", data });

  test("the tool-end output and the model text give a padded image the same, decoded size", () => {
    const content = [image("aGk=")];
    assert.equal(contentText(content), "[image: image/png, 2 bytes]");
    assert.equal(resultText(content), contentText(content));
  });

  test("base64DecodedBytes counts decoded bytes whatever the padding and line breaks", () => {
    assert.equal(base64DecodedBytes(""), 0);
    assert.equal(base64DecodedBytes("aA=="), 1);
    assert.equal(base64DecodedBytes("aGk="), 2);
    assert.equal(base64DecodedBytes("aGk"), 2);
    assert.equal(base64DecodedBytes("aGVs\r\nbG8=\n"), 5);
    assert.equal(base64DecodedBytes(btoa("x".repeat(1000))), 1000);
  });
});
