/**
 * Issue 53, what PGlite in a worker costs per statement: sequential `select 1` and one-statement transactions
 * through Kysely on an in-memory PGlite, in the main thread and in a worker, alternating twice. One JSON line
 * per run.
 *
 * `deno run -A --lock=deno.dev.lock bench/micro_pglite_roundtrip.ts`
 *
 * @module
 */
import { sql } from "kysely";
import { openDatabase } from "../core/harness/core.ts";

for (const worker of [false, true, false, true]) {
  const db = await openDatabase({ worker });
  try {
    const q = () => sql`select 1 as x`.execute(db.kysely);
    for (let i = 0; i < 500; i++) await q(); // warm-up
    const n = 3000;
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await q();
    const perQueryMs = (performance.now() - t0) / n;
    const t1 = performance.now();
    for (let i = 0; i < 300; i++) {
      await db.kysely.transaction().execute(async (tx) => void await sql`select 1`.execute(tx));
    }
    const perTxMs = (performance.now() - t1) / 300;
    console.log(JSON.stringify({ worker, perQueryMs: +perQueryMs.toFixed(3), perTxMs: +perTxMs.toFixed(3) }));
  } finally {
    await db.close();
  }
}
