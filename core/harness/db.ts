// @ts-types="@types/pg"
import pg from "pg";
import { type Db, migrate, openDatabase, scopedMigrator } from "../src/db/open.ts";
import type { Migrator } from "kysely/migration";
import { type Insertable, type Kysely, sql } from "kysely";
import type { Database } from "../src/db/schema.ts";
import { loadTemplate } from "../src/db/template.ts";

/** The database backends tests run against: PGlite always, PostgreSQL when TEST_DATABASE_URL is set. */
export function testBackends(): Array<"pglite" | "postgres"> {
  return Deno.env.get("TEST_DATABASE_URL") ? ["pglite", "postgres"] : ["pglite"];
}

let template: Promise<Blob> | null = null;

/**
 * A migrated PGlite data directory, made once per test process from the shipped template (a fresh initdb
 * costs ~2.5 s; loading ~0.4 s), with any newer migration applied.
 */
function pgliteTemplate(): Promise<Blob> {
  template ??= (async () => {
    const shipped = await loadTemplate();
    const db = await openDatabase(shipped ? { loadDataDir: shipped } : {});
    await migrate(db.kysely);
    const dump = await db.dumpDataDir!();
    await db.close();
    return dump;
  })();
  return template;
}

/**
 * A fresh, migrated database: in-memory PGlite, or a new schema on TEST_DATABASE_URL (dropped on close). Its
 * `close` first runs what was registered with {@link onTeardown} for it (a second database a test opens, such
 * as a backup's restore target, shuts down the services built over it too).
 */
export async function openTestDatabase(
  kind: "pglite" | "postgres",
): Promise<Db & { schema?: string; url?: string }> {
  const db = await openBareTestDatabase(kind);
  const closeDb = db.close.bind(db);
  const close = async () => {
    try {
      await tearDown(db);
    } finally {
      await closeDb();
    }
  };
  db.close = close;
  db[Symbol.asyncDispose] = close;
  return db;
}

async function openBareTestDatabase(
  kind: "pglite" | "postgres",
): Promise<Db & { schema?: string; url?: string }> {
  // TEST_PGLITE_WORKER=on: PGlite in a Web Worker (DUT_PGLITE_WORKER=on), to run a room's tests that way.
  if (kind === "pglite") {
    const worker = Deno.env.get("TEST_PGLITE_WORKER") === "on";
    return await openDatabase({ loadDataDir: await pgliteTemplate(), worker });
  }
  const url = Deno.env.get("TEST_DATABASE_URL")!;
  const schema = `t_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: url });
  admin.on("error", () => {});
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  const db = await openDatabase({ url, schema, poolSize: 5 });
  await migrate(db.kysely, schema);
  const close = async () => {
    await db.close();
    await admin.query(`drop schema ${schema} cascade`).catch(() => {});
    await admin.end().catch(() => {});
  };
  return { ...db, schema, url, close, [Symbol.asyncDispose]: close };
}

const teardowns = new WeakMap<Db, Array<() => Promise<void> | void>>();

/**
 * Run `fn` when the database test using `db` ends, before the database closes (last registered, first run):
 * how what a test builds over its database (the services and app of `testServices`) is shut down, so the leak
 * checks find none of its timers.
 */
export function onTeardown(db: Db, fn: () => Promise<void> | void): void {
  const list = teardowns.get(db) ?? [];
  list.push(fn);
  teardowns.set(db, list);
}

/**
 * Run (once) what was registered with {@link onTeardown} for `db`: for a database a test opens itself with
 * `openDatabase` (a second instance's connections), before it closes it. `openTestDatabase`'s close does so.
 */
export async function tearDown(db: Db): Promise<void> {
  const list = teardowns.get(db) ?? [];
  teardowns.delete(db);
  for (const fn of list.reverse()) await fn();
}

/** Why the PostgreSQL variant of a database test is ignored: TEST_DATABASE_URL is unset. */
export const NO_POSTGRES_REASON = "ignored: set TEST_DATABASE_URL to run it on PostgreSQL";

/**
 * Register one Deno test per backend, each with its own fresh database: `"<name> [pglite]"` and
 * `"<name> [postgres]"`. Without TEST_DATABASE_URL the PostgreSQL variant is still registered, as ignored
 * with the reason in its name, so the summary counts it instead of a test file silently running nothing.
 */
export function dbTest(
  name: string,
  fn: (db: Db, t: Deno.TestContext) => Promise<void>,
  opts: { ignore?: boolean; only?: Array<"pglite" | "postgres"> } = {},
): void {
  const available = testBackends();
  for (const kind of ["pglite", "postgres"] as const) {
    if (opts.only && !opts.only.includes(kind)) continue;
    const missing = !available.includes(kind);
    Deno.test({
      name: missing ? `${name} [${kind}] (${NO_POSTGRES_REASON})` : `${name} [${kind}]`,
      ignore: opts.ignore || missing,
      async fn(t) {
        const db = await openTestDatabase(kind);
        try {
          await fn(db, t);
        } finally {
          await db.close(); // runs the test's teardowns first
        }
      },
    });
  }
}

/**
 * A migrator over a test database's own schema (its `current_schema()`), with introspection scoped to it, for
 * tests that move a schema to a chosen migration.
 */
export async function testMigrator(db: Kysely<Database>): Promise<Migrator> {
  const schema = (await sql<{ s: string }>`select current_schema() as s`.execute(db)).rows[0]!.s;
  return scopedMigrator(db, schema);
}

/**
 * A device row written straight to the table (no adapter check, no encryption: the password cannot be read),
 * for tests of what the database does with devices; `patch` overrides any column.
 */
export async function insertDeviceRow(
  on: Kysely<Database>,
  id: string,
  patch: Partial<Insertable<Database["devices"]>> = {},
): Promise<void> {
  await on.insertInto("devices").values({
    id,
    hostname: `dev-${id.slice(0, 8)}`,
    vendor: "fixture-fw",
    device_role: null,
    base_url: "https://127.0.0.1:9",
    username: "u",
    password_enc: "v1.x.y.z",
    tls_verify_mode: "insecure",
    poll_interval_seconds: 60,
    notes: null,
    enabled: true,
    last_poll_at: null,
    last_poll_status: null,
    last_poll_error: null,
    pinned_cert_sha256: null,
    tags: [],
    ...patch,
  }).execute();
}
