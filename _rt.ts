import { openDatabase } from "./core/src/db/open.ts";
import { sql } from "kysely";
for (const worker of [false, true, false, true]) {
  const db = await openDatabase({ worker });
  const q = () => sql`select 1 as x`.execute(db.kysely);
  for (let i = 0; i < 500; i++) await q();
  const n = 3000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await q();
  const per = (performance.now() - t0) / n;
  const t1 = performance.now();
  for (let i = 0; i < 300; i++) {
    await db.kysely.transaction().execute(async (tx) => {
      await sql`select 1`.execute(tx);
    });
  }
  const tx = (performance.now() - t1) / 300;
  console.log(JSON.stringify({ worker, perQueryMs: +per.toFixed(3), perTxMs: +tx.toFixed(3) }));
  await db.close();
}
