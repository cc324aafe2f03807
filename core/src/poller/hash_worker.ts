/**
 * A hash worker of the {@link HashPool} (`hash_pool.ts`): for each message, one poll's payloads, it answers
 * each payload's canonical JSON, its UTF-8 bytes, SHA-256, stable hash and size (`hashSnapshot`), or the error
 * its payload gave, in order.
 *
 * @module
 */
import { hashSnapshot } from "./hash.ts";
import type { HashReply, HashRequest } from "./hash_pool.ts";

const scope = self as unknown as {
  onmessage: ((e: MessageEvent<HashRequest>) => void) | null;
  postMessage(m: HashReply, transfer: Transferable[]): void;
};

scope.onmessage = async ({ data }) => {
  const results: HashReply["results"] = [];
  // The payloads' UTF-8 bytes are moved, not copied, to the pool's thread (the store sends them as they are).
  const transfer: ArrayBuffer[] = [];
  for (const j of data.jobs) {
    try {
      const h = await hashSnapshot(j.label, j.payload, j.volatile);
      const bytes = h.bytes!; // hashSnapshot keeps them
      transfer.push(bytes.buffer as ArrayBuffer);
      results.push({
        text: h.text,
        sha256: h.sha256,
        stableSha256: h.stableSha256 ?? null,
        size: h.size,
        bytes,
      });
    } catch (e) {
      results.push({ error: e instanceof Error ? e.message : String(e) });
    }
  }
  scope.postMessage({ id: data.id, results }, transfer);
};
