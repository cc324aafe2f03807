import assert from "node:assert/strict";
import { sql } from "kysely";
import { openDatabase, PGLITE_SHARED_BUFFERS } from "./open.ts";
import { loadTemplate } from "./template.ts";

const sharedBuffers = async (opts: { sharedBuffers?: string }) => {
  // From the shipped template: initdb in memory would take seconds.
  await using db = await openDatabase({ ...opts, loadDataDir: (await loadTemplate()) ?? undefined });
  return (await sql<{ shared_buffers: string }>`show shared_buffers`.execute(db.kysely)).rows[0]
    ?.shared_buffers;
};

Deno.test("embedded PGlite opens with its configured buffer pool, 16MB unless told", async () => {
  assert.equal(PGLITE_SHARED_BUFFERS, "16MB");
  assert.equal(await sharedBuffers({}), "16MB");
  assert.equal(await sharedBuffers({ sharedBuffers: "32MB" }), "32MB");
});
