/**
 * PGlite's data statements run as named statements (core/src/db/pglite_statements.ts): the same rows, types
 * and errors as PGlite's own `query`, each text parsed once, at most `max` kept, a stale one prepared again,
 * and the locking of `query` (a statement outside a transaction waits for it).
 */
import assert from "node:assert/strict";
import { PGlite } from "@electric-sql/pglite";
import { Kysely, PGliteDialect, sql } from "kysely";
import { withNamedStatements } from "./pglite_statements.ts";

async function open(max?: number) {
  const raw = new PGlite();
  await raw.waitReady;
  await raw.exec(`create table t (id bigint primary key, at timestamptz, u uuid, tags text[], doc jsonb,
    b bytea, ok boolean, n numeric, note text)`);
  return { raw, named: withNamedStatements(raw, max) };
}

const kept = async (raw: PGlite) =>
  (await raw.query<{ name: string; statement: string }>(
    "select name, statement from pg_prepared_statements where not from_sql order by name",
  )).rows;

Deno.test("rows, types and affected rows are those of PGlite's own query", async () => {
  const { raw, named } = await open();
  try {
    const insert =
      `insert into t (id, at, u, tags, doc, b, ok, n, note) values ($1, $2, $3, $4, $5, $6, $7, $8, $9)`;
    const values = [
      [
        1n,
        new Date("2026-11-27T05:00:00.123Z"),
        "00000000-0000-4000-8000-000000000001",
        ["a", "b,c", 'd"'],
        {
          k: [1, "x"],
        },
        new Uint8Array([0, 1, 255]),
        true,
        "12.50",
        "é ✓",
      ],
      [2, "2026-11-27T06:00:00Z", null, [], null, null, false, 3, null],
    ];
    const a = await named.query(insert, values[0]);
    const b = await raw.query(insert.replace("t (", "t  ("), values[1]); // same rows, PGlite's path
    assert.equal(a.affectedRows, 1);
    assert.equal(b.affectedRows, 1);
    await named.query(insert, [3, null, null, null, null, null, null, null, "third"]);
    const select = "select * from t where id = any($1::bigint[]) order by id";
    for (const rowMode of ["object", "array"] as const) {
      const mine = await named.query(select, [[1, 2, 3]], { rowMode });
      const theirs = await raw.query(select + " ", [[1, 2, 3]], { rowMode });
      assert.deepEqual(mine.rows, theirs.rows);
      assert.deepEqual(mine.fields, theirs.fields);
    }
    const row = (await named.query<{ at: Date; tags: string[]; b: Uint8Array }>(select, [[1]])).rows[0]!;
    assert.equal(row.at.toISOString(), "2026-11-27T05:00:00.123Z");
    assert.deepEqual(row.tags, ["a", "b,c", 'd"']);
    assert.deepEqual([...row.b], [0, 1, 255]);
    const upd = await named.query("update t set note = $1 where id > $2", ["x", 1]);
    assert.equal(upd.affectedRows, 2);
    const del = await named.query("delete from t where id = $1 returning id", [3]);
    assert.deepEqual(del.rows, [{ id: 3 }]);
    assert.equal(del.affectedRows, 1);
  } finally {
    await raw.close();
  }
});

Deno.test("each text is parsed once; at most max are kept, the least recently used closed", async () => {
  const { raw, named } = await open(3);
  try {
    for (let i = 0; i < 4; i++) await named.query("select $1::int + 1 as n", [i]);
    assert.deepEqual((await kept(raw)).map((r) => r.name), ["dutlab_1"]);
    for (const n of [2, 3, 4]) await named.query(`select $1::int + ${n} as n`, [0]);
    await named.query("select $1::int + 3 as n", [0]); // used again: now the most recent
    await named.query("select $1::int + 5 as n", [0]); // closes the least recently used (+ 1, then + 2)
    await named.query("select $1::int + 6 as n", [0]);
    const left = await kept(raw);
    assert.equal(left.length, 3, JSON.stringify(left));
    assert.deepEqual(left.map((r) => r.statement.match(/\+ (\d)/)![1]).sort(), ["3", "5", "6"]);
    // DDL and statements other than data statements take PGlite's own path and are not kept.
    await named.query("create table other (x int)");
    await named.query("set search_path = public");
    assert.equal((await kept(raw)).length, 3);
  } finally {
    await raw.close();
  }
});

Deno.test("errors are PGlite's, the session stays usable, a stale statement is prepared again", async () => {
  const { raw, named } = await open();
  try {
    const insert = "insert into t (id, note) values ($1, $2)";
    await named.query(insert, [1, "a"]);
    await assert.rejects(named.query(insert, [1, "b"]), (e: Error & { code?: string; query?: string }) => {
      assert.equal(e.code, "23505");
      assert.equal(e.query, insert);
      return true;
    });
    await assert.rejects(named.query("select nonsense from t where id = $1", [1]), /nonsense/);
    assert.equal((await named.query(insert, [2, "c"])).affectedRows, 1);
    const all = "select * from t order by id";
    assert.equal((await named.query(all)).fields.length, 9);
    await raw.exec("alter table t add column extra int default 7");
    // The kept `select *` now has another result type (0A000): prepared again, the caller sees new rows.
    const again = await named.query<{ extra: number }>(all);
    assert.equal(again.fields.length, 10);
    assert.equal(again.rows[0]!.extra, 7);
    await raw.exec("deallocate all"); // the session lost every kept statement (26000): prepared again
    assert.equal((await named.query(all)).rows.length, 2);
  } finally {
    await raw.close();
  }
});

Deno.test("through Kysely: a transaction commits or rolls back, and a statement outside it waits", async () => {
  const { raw, named } = await open();
  const db = new Kysely<{ t: { id: number; note: string | null } }>({
    dialect: new PGliteDialect({ pglite: named }),
  });
  try {
    let outside: Promise<unknown> | undefined;
    let seenOutside: unknown;
    await db.transaction().execute(async (tx) => {
      await tx.insertInto("t").values({ id: 1, note: "in" }).execute();
      outside = db.selectFrom("t").select("id").execute().then((r) => seenOutside = r);
      await new Promise((r) => setTimeout(r, 20));
      assert.equal(seenOutside, undefined, "a statement outside the transaction ran inside it");
      assert.equal((await tx.selectFrom("t").select("id").execute()).length, 1);
    });
    await outside;
    assert.deepEqual(seenOutside, [{ id: 1 }]);
    await assert.rejects(
      db.transaction().execute(async (tx) => {
        await tx.insertInto("t").values({ id: 2, note: "rolled back" }).execute();
        await sql`select 1 / 0`.execute(tx);
      }),
      /division by zero/,
    );
    assert.deepEqual(await db.selectFrom("t").select("id").execute(), [{ id: 1 }]);
  } finally {
    await db.destroy();
    if (!raw.closed) await raw.close();
  }
});
