import assert from "node:assert/strict";
import { openDatabase } from "../db/open.ts";
import { pollStoreOptions } from "./services.ts";

Deno.test("pollStoreOptions: only PGlite in a worker lingers after a batch, whatever DUT_PGLITE_WORKER says", async () => {
  // The service's default is PGlite in a worker, yet a Db opened in the main thread (DUT_PGLITE_WORKER=off,
  // the benchmarks' and tests' own databases) must not get the worker's linger (BENCHMARKS.md section 7x).
  for (const worker of [false, true]) {
    await using db = await openDatabase({ worker });
    const opts = pollStoreOptions(db);
    assert.equal(opts.lingerAfterBatch, worker, worker ? "in a worker" : "in the main thread");
    assert.equal(opts.writers, 1);
  }
  const pg = pollStoreOptions({ kind: "postgres" });
  assert.ok(!pg.lingerAfterBatch, "PostgreSQL");
  assert.equal(pg.binaryPayloads, true);
});
