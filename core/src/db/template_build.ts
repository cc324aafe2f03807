/**
 * Building the PGlite data-directory template that template.ts unpacks (`deno task gen:pglite-template`).
 *
 * @module
 */
import { sql } from "kysely";
import { migrate, openDatabase } from "./open.ts";

/**
 * Build a template: an in-memory PGlite, every migration applied, dumped as a gzipped tarball. The template
 * databases `template0` and `template1` are dropped first: the service connects to `postgres` alone and never
 * runs CREATE DATABASE, and their 600 files were more than half of the data directory's 1,100, each one a
 * file creation at every first start (issue 34 point 5: 0.5-1 ms each on this project's machines).
 */
export async function buildTemplate(): Promise<{ bytes: Uint8Array; migrations: string[] }> {
  const db = await openDatabase({});
  try {
    for (const name of ["template0", "template1"]) {
      await sql`alter database ${sql.id(name)} is_template false`.execute(db.kysely);
      await sql`drop database ${sql.id(name)}`.execute(db.kysely);
    }
    const migrations = await migrate(db.kysely);
    const blob = await db.dumpDataDir!("gzip");
    return { bytes: new Uint8Array(await blob.arrayBuffer()), migrations };
  } finally {
    await db.close();
  }
}
