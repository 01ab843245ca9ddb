import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { MINTED_ID_PATTERN, numberedCallId, randomCallId, unusedId } from "../lib/conversation/call-ids.ts";

describe("minted tool-call ids", () => {
  test("numbered ids are the prefix and 5 base-62 digits, 9 characters, wrapping at 62^5", () => {
    assert.equal(numberedCallId("hook", 0), "hook00000");
    assert.equal(numberedCallId("call", 61), "call0000Z");
    assert.equal(numberedCallId("call", 62), "call00010");
    assert.equal(numberedCallId("call", 62 ** 5), "call00000");
    assert.throws(() => numberedCallId("sprout", 1), /Cannot mint a tool-call id: prefix "sprout"/);
  });

  test("random ids are 9 letters and digits and do not repeat", () => {
    const ids = new Set(Array.from({ length: 2000 }, randomCallId));
    assert.equal(ids.size, 2000);
    for (const id of ids) assert.match(id, MINTED_ID_PATTERN);
  });

  test("unusedId skips taken ids", () => {
    let n = 0;
    assert.equal(unusedId(new Set(["call00001", "call00002"]), () => numberedCallId("call", ++n)), "call00003");
  });
});
