// deno-lint-ignore-file no-explicit-any
/**
 * A local `node:http` server whose answers never end (or end only after `limitBytes`): the
 * real shape of a misconfigured base URL or a runaway server. It records how many bytes each
 * answer put on the wire and when the client closed the socket, so a test can assert that the
 * client stopped reading at once.
 */
import { createServer } from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";

/**
 * At most how many bytes a flooded answer puts on the wire beyond what the client read before
 * it stopped: what the kernel buffers on loopback, which Linux autotunes while the reader keeps
 * up (net.ipv4.tcp_rmem up to 32 MiB and tcp_wmem up to 4 MiB on these machines; 16.8 MB in
 * all seen under load for a 4 MiB read). Well below the default 64 MiB flood, so a test still
 * tells a cancelled read from an endless one; `ended` and `closedAt` prove it directly.
 */
export const BUFFERED_ON_LOOPBACK = 36 * 1024 * 1024;

/** How one answer floods: its status, content type, a prefix, then `fill` repeated. */
export interface Flood {
  status?: number;
  contentType: string;
  prefix?: string;
  /** Repeated after the prefix; default 64 KiB of `x`. */
  fill?: string;
  /** The answer ends after this many bytes; default 64 MiB (a client that reads it all fails its test quickly). */
  limitBytes?: number;
}

/** One flooded answer: bytes the server wrote, and whether and when the client closed the socket. */
export interface FloodRecord {
  bytes: number;
  /** `performance.now()` when the socket closed, if it did. */
  closedAt?: number;
  /** True when the server wrote everything (the client read to the end). */
  ended: boolean;
}

/** A running flood server. */
export interface FloodServer {
  url: string;
  records: FloodRecord[];
  /** Requests received (JSON bodies parsed), in order. */
  requests: unknown[];
  close(): Promise<void>;
}

/**
 * Starts the server; `route(body, req)` answers with a {@link Flood} or with a normal JSON
 * answer `{json}` (a JSON-RPC request gets its own id back when `json` is a function).
 */
export async function startFloodServer(
  route: (body: any, req: IncomingMessage) => Flood | { json: unknown; status?: number } | { empty: number },
): Promise<FloodServer> {
  const records: FloodRecord[] = [];
  const requests: unknown[] = [];
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (d: Buffer) => (text += d.toString()));
    req.on("end", () => {
      const body = text === "" ? undefined : JSON.parse(text);
      requests.push(body);
      const answer = route(body, req);
      if ("empty" in answer) return void res.writeHead(answer.empty).end();
      if ("json" in answer) {
        return void res.writeHead(answer.status ?? 200, { "content-type": "application/json" }).end(
          JSON.stringify(answer.json),
        );
      }
      flood(res, answer, records);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    records,
    requests,
    close: () => {
      server.closeAllConnections?.();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

function flood(res: ServerResponse, answer: Flood, records: FloodRecord[]): void {
  const record: FloodRecord = { bytes: 0, ended: false };
  records.push(record);
  const socket = res.socket!;
  socket.once("close", () => (record.closedAt = performance.now()));
  res.writeHead(answer.status ?? 200, { "content-type": answer.contentType });
  const chunk = Buffer.from(answer.fill ?? "x".repeat(65_536));
  const limit = answer.limitBytes ?? 64 * 1024 * 1024;
  const write = () => {
    while (!socket.destroyed && record.bytes < limit) {
      const piece = record.bytes === 0 && answer.prefix ? Buffer.concat([Buffer.from(answer.prefix), chunk]) : chunk;
      record.bytes += piece.length;
      if (!res.write(piece)) return void res.once("drain", write);
    }
    if (!socket.destroyed) {
      record.ended = true;
      res.end();
    }
  };
  write();
}
