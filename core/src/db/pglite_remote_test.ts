import assert from "node:assert/strict";
import { sql } from "kysely";
import { openDatabase } from "./open.ts";
import { loadTemplate } from "./template.ts";
import { isUniqueViolation } from "./errors.ts";

const open = async () => openDatabase({ worker: true, loadDataDir: (await loadTemplate()) ?? undefined });

Deno.test("PGlite in a worker: rows keep their types, errors keep their SQLSTATE and constraint", async () => {
  await using db = await open();
  const [row] = (await sql<{ n: number; t: Date; b: Uint8Array; j: unknown }>`
    select ${41}::int + 1 as n, now() as t, '\\x0102'::bytea as b, '{"a":[1]}'::jsonb as j`
    .execute(db.kysely)).rows;
  assert.equal(row!.n, 42);
  assert.ok(row!.t instanceof Date);
  assert.deepEqual([...row!.b], [1, 2]);
  assert.deepEqual(row!.j, { a: [1] });
  await sql`create table w(a int primary key, s text)`.execute(db.kysely);
  await db.kysely.insertInto("w" as never).values({ a: 1, s: "x" } as never).execute();
  const dup = await db.kysely.insertInto("w" as never).values({ a: 1, s: "y" } as never).execute().then(
    () => null,
    (e) => e,
  );
  assert.ok(isUniqueViolation(dup));
  assert.equal(dup.code, "23505");
  assert.equal(dup.constraint, "w_pkey");
  await assert.rejects(sql`select 1/0`.execute(db.kysely), { code: "22012" });
});

Deno.test("PGlite in a worker: a transaction commits or rolls back as a whole, and holds the session", async () => {
  await using db = await open();
  await sql`create table w(a int primary key)`.execute(db.kysely);
  const count = async () =>
    (await sql<{ n: number }>`select count(*)::int as n from w`.execute(db.kysely)).rows[0]!.n;
  await assert.rejects(
    db.kysely.transaction().execute(async (tx) => {
      await sql`insert into w values (${1})`.execute(tx);
      await sql`insert into w values (${1})`.execute(tx);
    }),
    { code: "23505" },
  );
  assert.equal(await count(), 0);
  // A statement outside the open transaction waits for it: it sees the committed rows.
  let outside: Promise<number> | undefined;
  await db.kysely.transaction().execute(async (tx) => {
    await sql`insert into w values (${1})`.execute(tx);
    outside = count();
    await sql`insert into w values (${2})`.execute(tx);
  });
  assert.equal(await outside, 2);
  assert.equal(await count(), 2);
  // Named statements: the same text many times, and after DDL that changes its result type.
  for (let i = 0; i < 5; i++) assert.equal(await count(), 2);
  await sql`alter table w add column b text default 'z'`.execute(db.kysely);
  assert.deepEqual((await sql`select * from w order by a`.execute(db.kysely)).rows, [
    { a: 1, b: "z" },
    { a: 2, b: "z" },
  ]);
});

Deno.test("PGlite in a worker: closed, it refuses statements", async () => {
  const db = await open();
  await db.close();
  await db.close(); // twice is fine
  await assert.rejects(sql`select 1`.execute(db.kysely));
});

Deno.test("PGlite in a worker: reclaim collects the worker's own heap, which this thread's collection cannot", async () => {
  await using db = await open();
  // About 20 MiB of text decoded in the worker, then copied to this thread: garbage in the worker's heap.
  const rows = (await sql<{ s: string }>`select repeat(g::text, 500) as s from generate_series(1, 10000) g`
    .execute(db.kysely)).rows;
  assert.equal(rows.length, 10000);
  // After a full collection the worker's heap holds none of it (V8 may have collected some on its own first,
  // so the bound is on what is left, not on what this call freed).
  const r = await db.reclaim!();
  assert.ok(r.after <= r.before && r.after < 24 * 2 ** 20, `heap in use ${r.before} -> ${r.after} bytes`);
});
