import assert from "node:assert/strict";
import { sql } from "kysely";
import { migrate, openDatabase } from "./open.ts";
import { loadTemplate, unpackTemplate } from "./template.ts";
import { migrationProvider } from "./migrations/mod.ts";

Deno.test("the shipped template loads into a new data directory with the migrations it was built with", async () => {
  const template = await loadTemplate();
  assert.ok(template, "core/src/db/pglite_template.tar.gz is shipped");
  const dir = await Deno.makeTempDir();
  try {
    assert.equal(await unpackTemplate(`${dir}/pglite`), true);
    await assert.rejects(Deno.stat(`${dir}/pglite.new`), Deno.errors.NotFound, "unpacked, then renamed");
    const db = await openDatabase({ dataDir: `${dir}/pglite` });
    try {
      const { rows } = await sql<{ name: string }>`select name from kysely_migration order by name`
        .execute(db.kysely);
      const known = Object.keys(await migrationProvider.getMigrations()).sort();
      const inTemplate = rows.map((r) => r.name);
      assert.ok(inTemplate.length > 0);
      assert.deepEqual(inTemplate, known.slice(0, inTemplate.length), "the template's migrations are known");
      // Migrations newer than the template are applied on top (regenerate it to skip this at start).
      assert.deepEqual(await migrate(db.kysely), known.slice(inTemplate.length));
      await sql`select 1 from devices`.execute(db.kysely);
    } finally {
      await db.close();
    }
    const again = await openDatabase({ dataDir: `${dir}/pglite` });
    assert.deepEqual(await migrate(again.kysely), [], "reopened as a normal data directory");
    await again.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
