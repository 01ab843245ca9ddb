/**
 * `JsonIdScanner` (lib/mcp/line-scan.ts): the top-level id and kind of a JSON-RPC message read
 * from its bytes as they stream past, for over-long stdio lines (issue 6, guarantee 2).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { JsonIdScanner } from "../lib/mcp/line-scan.ts";

const encoder = new TextEncoder();

/** Scans `text` fed in pieces of `step` bytes. */
function scan(text: string, step = 1): JsonIdScanner {
  const scanner = new JsonIdScanner();
  const bytes = encoder.encode(text);
  for (let i = 0; i < bytes.length; i += step) scanner.push(bytes, i, Math.min(bytes.length, i + step));
  return scanner;
}

describe("JsonIdScanner", () => {
  test("reads the id whether it comes first or last, in any chunking", () => {
    for (const step of [1, 3, 1000]) {
      assert.equal(scan('{"jsonrpc":"2.0","id":7,"result":{"content":[]}}', step).id, 7);
      assert.equal(scan('{"result":{"content":[]},"jsonrpc":"2.0","id":"abc"}', step).id, "abc");
      assert.equal(scan('{ "id" : 12 , "result" : {} }', step).id, 12);
    }
  });

  test("ignores id keys nested in the result and inside strings", () => {
    const s = scan(
      '{"jsonrpc":"2.0","result":{"id":99,"content":[{"type":"text","text":"\\"id\\":5, \\"method\\":1"}]},"id":3}',
    );
    assert.equal(s.id, 3);
    assert.equal(s.hasMethod, false);
    assert.equal(s.hasResult, true);
  });

  test("tells a request from the server from a response", () => {
    const request = scan('{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{}}');
    assert.equal(request.id, 4);
    assert.equal(request.hasMethod, true);
    assert.equal(request.hasResult, false);
    const notification = scan('{"jsonrpc":"2.0","method":"notifications/message","params":{"id":1}}');
    assert.equal(notification.id, undefined);
    assert.equal(notification.hasMethod, true);
  });

  test("an id that is an object, or no JSON at all, gives no id", () => {
    assert.equal(scan('{"id":{"x":1},"result":{}}').id, undefined);
    assert.equal(scan('not json at all, "id": 5').id, undefined);
    assert.equal(scan('{"error":{"code":-1,"message":"x"},"id":null}').id, undefined);
  });

  test("keeps constant memory over a multi-megabyte value with multi-byte characters", () => {
    const s = new JsonIdScanner();
    s.push(encoder.encode('{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"'));
    const chunk = encoder.encode('é世🎉\\"'.repeat(10_000));
    for (let i = 0; i < 50; i++) s.push(chunk);
    s.push(encoder.encode('"}]},"id":42}'));
    assert.equal(s.id, 42);
  });
});
