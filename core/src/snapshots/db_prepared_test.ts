/**
 * Statements marked `PREPARED` (core/src/db/prepared.ts) go to PostgreSQL as named statements, parsed once per
 * connection; other statements stay unnamed; a marked statement with any number of list items is one named
 * statement (its lists are arrays). PGlite's counterpart is core/src/db/db_pglite_statements_test.ts.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest } from "../../harness/db.ts";
import { PREPARED } from "../db/prepared.ts";
import { payloadsBySha } from "./series.ts";

dbTest("marked statements are named statements of their connection, parsed once", async (db) => {
  await db.kysely.transaction().execute(async (tx) => {
    const named = async () =>
      (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements
        where not from_sql order by name`.execute(tx)).rows;
    assert.deepEqual(await named(), []);
    for (const n of [1, 2, 3]) {
      const r = await sql<{ n: number }>`select ${sql.raw(PREPARED)} ${n}::int + 1 as n`.execute(tx);
      assert.equal(r.rows[0]!.n, n + 1);
    }
    await sql`select 1 as unmarked`.execute(tx);
    // Three kinds of list, one statement: `payloadsBySha` sends its hashes as one array.
    for (const hashes of [["a"], ["a", "b"], ["a", "b", "c", "d"]]) {
      assert.equal((await payloadsBySha(tx, hashes)).size, 0);
    }
    const rows = await named();
    assert.equal(rows.length, 2, JSON.stringify(rows));
    assert.deepEqual(rows.map((r) => r.name), ["dutlab_1", "dutlab_2"]);
    assert.match(rows[0]!.statement, /\$1::int \+ 1/);
    assert.match(rows[1]!.statement, /any\(\$1::text\[\]\)/);
  });
  // A marked statement that fails leaves its connection usable, and its text runs again.
  const div = (d: number) =>
    sql<{ q: number }>`select ${sql.raw(PREPARED)} 6 / ${d}::int as q`.execute(db.kysely);
  await assert.rejects(div(0), /division by zero/);
  assert.equal((await div(3)).rows[0]!.q, 2);
}, { only: ["postgres"] });

dbTest("a marked statement runs unchanged on the embedded database", async (db) => {
  const r = await sql<{ n: number }>`select ${sql.raw(PREPARED)} ${41}::int + 1 as n`.execute(db.kysely);
  assert.equal(r.rows[0]!.n, 42);
}, { only: ["pglite"] });
