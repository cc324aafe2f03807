/**
 * Issue 53: the embedded database announces each committed change of a `table_versions` counter (migration
 * 0030, versions.ts), heard before the commit's caller resumes, in the main thread and in the worker; a listing
 * then answers without reading the version, also while a write transaction holds PGlite's session.
 */
import assert from "node:assert/strict";
import { type Kysely, sql } from "kysely";
import type { Database } from "./schema.ts";
import { type Db, openDatabase } from "./open.ts";
import { loadTemplate } from "./template.ts";
import { LocalVersions } from "./versions.ts";
import { ListCache } from "../http/list_cache.ts";
import { dbTest, insertDeviceRow } from "../../harness/db.ts";

const ID = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
const noRead = () => Promise.reject(new Error("the version was read"));

Deno.test("LocalVersions: read once and kept; a notification replaces it; a delete or a stranger forgets", async () => {
  const v = new LocalVersions();
  let reads = 0;
  const read = (value: string | null) => () => (reads++, Promise.resolve(value));
  assert.equal(await v.get("devices", read(null)), null, "no row: nothing kept");
  assert.equal(await v.get("devices", read("4")), "4");
  assert.equal(await v.get("devices", noRead), "4", "kept");
  assert.equal(reads, 2);
  v.notify(JSON.stringify({ name: "devices", version: "5" }));
  assert.equal(await v.get("devices", noRead), "5");
  v.notify(JSON.stringify({ name: "other", version: "1" }));
  assert.equal(await v.get("devices", noRead), "5", "another counter's notification changes nothing here");
  v.notify(JSON.stringify({ name: "devices", version: null }));
  assert.equal(await v.get("devices", read("0")), "0", "deleted: read again");
  v.notify("not json");
  assert.equal(await v.get("devices", read("7")), "7", "an unreadable notification forgets every counter");
  // A notification heard while a read runs wins over the read's (older) answer; the read is not kept.
  const w = new LocalVersions();
  let release!: () => void;
  const slow = () => new Promise<string>((r) => release = () => r("1"));
  const got = w.get("devices", slow);
  w.notify(JSON.stringify({ name: "devices", version: "2" }));
  release();
  assert.equal(await got, "2");
  assert.equal(await w.get("devices", noRead), "2");
});

/** The counter as stored. */
const stored = async (db: Db) =>
  (await sql<{ v: string }>`select version::text as v from table_versions where name = 'devices'`
    .execute(db.kysely)).rows[0]!.v;

/** A device row (raises the counter at COMMIT). */
const insertDevice = (on: Kysely<Database>, id: string) =>
  insertDeviceRow(on, id, { hostname: `h${id.slice(-4)}` });

/** A device row, inserted in its own transaction (raises the counter at COMMIT). */
async function addDevice(db: Db, id: string) {
  await insertDevice(db.kysely, id);
}

for (const worker of [false, true]) {
  Deno.test(`PGlite ${worker ? "in a worker" : "in the main thread"}: every committed counter change is heard before its commit resolves`, async () => {
    await using db = await openDatabase({ worker, loadDataDir: (await loadTemplate()) ?? undefined });
    const versions = db.versions!;
    assert.ok(versions, "PGlite has local versions");
    const read = () => stored(db);
    assert.equal(await versions.get("devices", read), await stored(db));
    const before = await stored(db);
    // A change in a transaction: heard when the transaction's promise resolves, not before.
    await db.kysely.transaction().execute(async (tx) => {
      await insertDevice(tx, ID(1));
      assert.equal(await versions.get("devices", noRead), before, "not committed yet");
    });
    assert.equal(await versions.get("devices", noRead), await stored(db));
    assert.notEqual(await stored(db), before);
    // An autocommit statement, and a rolled back transaction (nothing announced).
    await addDevice(db, ID(2));
    assert.equal(await versions.get("devices", noRead), await stored(db));
    const committed = await stored(db);
    await assert.rejects(
      db.kysely.transaction().execute(async (tx) => {
        await sql`delete from devices where id = ${ID(1)}`.execute(tx);
        throw new Error("roll back");
      }),
    );
    assert.equal(await stored(db), committed);
    assert.equal(await versions.get("devices", noRead), committed);
    // A direct write of the counter (a backup restore's) is announced too.
    await sql`update table_versions set version = version + 10 where name = 'devices'`.execute(db.kysely);
    assert.equal(await versions.get("devices", noRead), String(Number(committed) + 10));
  });

  Deno.test(`PGlite ${worker ? "in a worker" : "in the main thread"}: a kept listing answers while a write transaction holds the session`, async () => {
    await using db = await openDatabase({ worker, loadDataDir: (await loadTemplate()) ?? undefined });
    const cache = new ListCache(db, "devices");
    let builds = 0;
    const build = () => Promise.resolve(`{"build":${++builds}}`);
    await cache.get("a", build);
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => release = r);
    // Let go after 5 s at the latest, so that a listing that waits for the session fails here instead of hanging.
    const fallback = setTimeout(() => release(), 5_000);
    const tx = db.kysely.transaction().execute(async (tx) => {
      await sql`update devices set hostname = hostname`.execute(tx);
      await sql`insert into table_versions (name, version) values ('held', 1)`.execute(tx);
      await gate;
    }).then(() => order.push("committed"));
    await new Promise((r) => setTimeout(r, 50)); // the transaction has begun and holds the session
    const answer = await cache.get("a", build).then((e) => (order.push("answered"), e));
    release();
    clearTimeout(fallback);
    await tx;
    assert.deepEqual(order, ["answered", "committed"]);
    assert.equal(new TextDecoder().decode(answer!.body), '{"build":1}');
    // After the commit the next request builds again, once.
    await addDevice(db, ID(3));
    assert.equal(new TextDecoder().decode((await cache.get("a", build))!.body), '{"build":2}');
    assert.equal(builds, 2);
  });
}

dbTest(
  "local versions on PGlite only; on either back end a committed change makes the listing build again",
  async (db) => {
    assert.equal(
      db.versions === undefined,
      db.kind === "postgres",
      "PostgreSQL reads the version at every answer",
    );
    const cache = new ListCache(db, "devices");
    let builds = 0;
    const build = () => Promise.resolve(`{"build":${++builds}}`);
    await cache.get("a", build);
    await cache.get("a", build);
    assert.equal(builds, 1);
    await addDevice(db, ID(4));
    assert.equal(new TextDecoder().decode((await cache.get("a", build))!.body), '{"build":2}');
  },
);
