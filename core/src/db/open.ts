import { type DatabaseIntrospector, Kysely, PGliteDialect, PostgresDialect, sql } from "kysely";
import { DEFAULT_MIGRATION_TABLE, Migrator } from "kysely/migration";
// @ts-types="@types/pg"
import type pg from "pg";
import { PGlite } from "@electric-sql/pglite";
import { withNamedStatements } from "./pglite_statements.ts";
import { openRemotePglite, PGLITE_SHARED_BUFFERS, type RemotePglite } from "./pglite_remote.ts";
import type { Database } from "./schema.ts";
import { migrationProvider } from "./migrations/mod.ts";
import { StartupError } from "../errors.ts";
import { settleWithin } from "../util/wait.ts";
import { logger } from "../util/log.ts";
import { preparing } from "./prepared.ts";
import { type LocalVersions, localVersions, NOTIFY_VERSIONS_PARAMS } from "./versions.ts";

const log = logger("db");

/** How long a request waits for a new PostgreSQL connection before it fails (503) instead of hanging. */
export const CONNECT_TIMEOUT_MS = 5_000;

/**
 * True when `err` says the database could not be reached or dropped the connection (server restart,
 * failover, `pg_terminate_backend`, a proxy's idle timeout, refused or timed-out connect): the request may
 * succeed when retried later, so the API answers 503 `urn:dutlab:problem:unavailable` with `Retry-After`.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 5; depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === "string") {
      // 08: connection exception; 57P01-57P05: admin/crash shutdown, cannot connect now, idle timeouts;
      // 53300: too many connections.
      if (/^(08...|57P0[1-5]|53300)$/.test(code)) return true;
      if (
        /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|ENOTFOUND)$/.test(code)
      ) {
        return true;
      }
    }
    if (
      typeof message === "string" &&
      /Connection terminated|not queryable|timeout exceeded when trying to connect|Connection refused|connection is closed|Client was closed/i
        .test(message)
    ) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * node-postgres settings from a `postgres://` URL. `search_path` in the query string (documented for
 * instances sharing a schema) is sent as a startup option; `application_name` is passed through.
 */
function pgConfig(url: string, schema: string | undefined): pg.ClientConfig {
  const u = new URL(url);
  const searchPath = schema ?? u.searchParams.get("search_path") ?? undefined;
  u.searchParams.delete("search_path");
  return {
    connectionString: u.toString(),
    ...(searchPath ? { options: `-c search_path=${searchPath.replace(/[\\ ]/g, "\\$&")}` } : {}),
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
  };
}

/** Errors on a client that no query is waiting for (its backend died while idle): logged, never thrown. */
function quietErrors(client: pg.Client | pg.PoolClient) {
  client.on("error", (e: Error) => log.warn("Database connection lost: {error}", { error: e.message }));
}

/** A dedicated database session (not from the pool), for advisory locks. Ending it drops its locks. */
export interface ReservedSession {
  /** Run a query returning rows on this session. */
  query<T>(text: string, params?: unknown[]): Promise<T[]>;
  /** The server-side process id of this session. */
  pid: number;
  release(): Promise<void>;
}

/**
 * A query on a reserved session that gives up (rejects) when no answer comes within `ms`: a lock session
 * whose connection broke must not hang the poller.
 */
export async function queryWithin<T>(
  session: ReservedSession,
  ms: number,
  text: string,
  params: unknown[],
): Promise<T[]> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      session.query<T>(text, params),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`No answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** An open database: Kysely plus what the poller needs from the driver. */
export interface Db extends AsyncDisposable {
  kysely: Kysely<Database>;
  kind: "pglite" | "postgres";
  /** A dedicated session (PostgreSQL only; PGlite is one process by construction). */
  reserve(): Promise<ReservedSession>;
  /**
   * PostgreSQL only: LISTEN on a channel over a dedicated connection (re-established
   * after a connection loss, when `onListen` runs again).
   */
  listen?(
    channel: string,
    onNotify: (payload: string) => void,
    onListen?: () => void,
  ): Promise<() => Promise<void>>;
  /**
   * PGlite only: the `table_versions` counters as the database announces them at each commit (versions.ts); a
   * listing answers from them without reading the version first.
   */
  versions?: LocalVersions;
  /** PGlite only: the data directory as a tarball (test templates). */
  dumpDataDir?(compression?: "none" | "gzip"): Promise<Blob>;
  /** PGlite in a worker only (its presence says so): a full GC of the worker's heap (runtime/idle.ts). */
  reclaim?(): Promise<{ before: number; after: number }>;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** `postgres://…`; when absent, embedded PGlite. */
  url?: string;
  /** PGlite data directory; in-memory when absent. */
  dataDir?: string;
  /** PGlite: start from this dumped data directory (a template; with `dataDir`, only for a new one). */
  loadDataDir?: Blob;
  /** PostgreSQL schema to use (tests isolate themselves in a fresh schema). */
  schema?: string;
  poolSize?: number;
  /**
   * PGlite: its `shared_buffers` (like `16MB`); default {@link PGLITE_SHARED_BUFFERS}. PGlite zeroes the
   * whole buffer pool in WebAssembly memory at every open, so PostgreSQL's 128MB default costs about 0.4 s
   * of start-up and the same in resident memory; pages that do not fit are read again from the data
   * directory through the operating system's cache.
   */
  sharedBuffers?: string;
  /** PGlite: run it in a Web Worker (pglite_remote.ts), off the event loop (`DUT_PGLITE_WORKER=on`). */
  worker?: boolean;
  /**
   * PGlite in a worker: the worker already opening `dataDir` (runtime/early_open.ts, started before the
   * service's modules loaded), taken instead of a new one.
   */
  remote?: Promise<RemotePglite>;
}

export { PGLITE_SHARED_BUFFERS } from "./pglite_remote.ts";

/** Open PGlite (embedded) or PostgreSQL (node-postgres pool) behind one Kysely interface. */
export async function openDatabase(opts: OpenOptions): Promise<Db> {
  return opts.url ? await openPostgres(opts.url, opts) : await openPglite(opts);
}

/** PostgreSQL through a node-postgres pool. */
async function openPostgres(url: string, opts: OpenOptions): Promise<Db> {
  // node-postgres' pool, not postgres.js: postgres.js 3.4.9 (the newest release) crashes the process
  // with an uncatchable TypeError (connection.js nextWrite on a null socket) when a connection whose
  // backend died is used or released again, which is what a query builder's reserved connection does
  // after a killed query (upstream issues #1066/#1154, fix PRs unmerged). pg.Pool drops a client whose
  // connection failed on release and opens new connections on demand.
  // Loaded here, not at start-up: an embedded-database service never needs it (about 60 ms).
  // @ts-types="@types/pg"
  const { default: pgm } = await import("pg");
  const config = pgConfig(url, opts.schema);
  const pool = new pgm.Pool({ ...config, max: opts.poolSize ?? 10, idleTimeoutMillis: 30_000 });
  pool.on(
    "error",
    (e: Error) => log.warn("Idle database connection lost: {error}", { error: e.message }),
  );
  pool.on("connect", (c: pg.PoolClient) => {
    quietErrors(c);
    preparing(c);
  });
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  try {
    await sql`select 1`.execute(kysely);
  } catch (e) {
    await kysely.destroy().catch(() => {});
    throw new StartupError("DB_UNREACHABLE", `Cannot connect to DATABASE_URL: ${(e as Error).message}`);
  }
  const db: Db = {
    kysely,
    kind: "postgres",
    async reserve() {
      // A connection of its own, outside the pool: an advisory lock lives as long as this session.
      // After any error the caller releases it and reserves a new one.
      const one = new pgm.Client(config);
      quietErrors(one);
      const end = () => settleWithin(one.end(), 1_000);
      try {
        await one.connect();
        // One row by construction.
        const { pid } = (await one.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]!;
        return {
          pid,
          query: async <T>(text: string, params: unknown[] = []) =>
            (await one.query(text, params)).rows as T[],
          release: end,
        };
      } catch (e) {
        await end();
        throw e;
      }
    },
    listen: (channel, onNotify, onListen) => listenOn(pgm, config, channel, onNotify, onListen),
    async close() {
      await kysely.destroy();
    },
    [Symbol.asyncDispose]: () => db.close(),
  };
  return db;
}

/** PGlite, embedded (in memory without `dataDir`). */
async function openPglite(opts: OpenOptions): Promise<Db> {
  if (opts.worker || opts.remote) return await openPgliteWorker(opts);
  const options = {
    ...(opts.loadDataDir ? { loadDataDir: opts.loadDataDir } : {}),
    startParams: [
      ...PGlite.defaultStartParams,
      "-c",
      `shared_buffers=${opts.sharedBuffers ?? PGLITE_SHARED_BUFFERS}`,
      ...NOTIFY_VERSIONS_PARAMS,
    ],
  };
  const pglite = opts.dataDir ? new PGlite(opts.dataDir, options) : new PGlite(options);
  await pglite.waitReady;
  return await pgliteDb({
    pglite: withNamedStatements(pglite),
    listen: async (channel, onNotify) => void await pglite.listen(channel, onNotify),
    dumpDataDir: (compression) => pglite.dumpDataDir(compression),
    close: async () => void (pglite.closed || await pglite.close()),
  });
}

/** PGlite in a Web Worker (pglite_remote.ts): the same statements, off the event loop. */
async function openPgliteWorker(opts: OpenOptions): Promise<Db> {
  const remote = await (opts.remote ?? openRemotePglite({
    ...(opts.dataDir ? { dataDir: opts.dataDir } : {}),
    ...(opts.loadDataDir ? { loadDataDir: opts.loadDataDir } : {}),
    sharedBuffers: opts.sharedBuffers ?? PGLITE_SHARED_BUFFERS,
  }));
  return await pgliteDb(remote);
}

/** The {@link Db} of an open PGlite session (a worker's, or this thread's as a {@link RemotePglite}). */
async function pgliteDb(session: RemotePglite): Promise<Db> {
  const versions = await localVersions(session.listen, session.close);
  const kysely = new Kysely<Database>({ dialect: new PGliteDialect({ pglite: session.pglite }) });
  const db: Db = {
    kysely,
    kind: "pglite",
    reserve() {
      return Promise.reject(new Error("PGlite has a single session; no reserved sessions"));
    },
    versions,
    dumpDataDir: (compression: "none" | "gzip" = "none") => session.dumpDataDir(compression),
    reclaim: session.reclaim,
    async close() {
      await kysely.destroy();
      await session.close();
    },
    [Symbol.asyncDispose]: () => db.close(),
  };
  return db;
}

/**
 * LISTEN on a connection of its own; when it is lost it is replaced (once a second until the server
 * answers) and `onListen` runs again, so the caller can read what it missed meanwhile. Resolves to the stop.
 */
async function listenOn(
  pgm: typeof pg,
  config: pg.ClientConfig,
  channel: string,
  onNotify: (payload: string) => void,
  onListen?: () => void,
): Promise<() => Promise<void>> {
  let current: pg.Client | undefined;
  let stopped = false;
  let retry: ReturnType<typeof setTimeout> | undefined;
  const open = async () => {
    const c = new pgm.Client(config);
    quietErrors(c);
    c.on("notification", (n) => {
      if (n.channel === channel) onNotify(n.payload ?? "");
    });
    const lost = () => {
      if (stopped || current !== c) return;
      current = undefined;
      c.end().catch(() => {});
      reopen();
    };
    c.on("error", lost);
    c.on("end", lost);
    try {
      await c.connect();
      await c.query(`LISTEN ${c.escapeIdentifier(channel)}`);
    } catch (e) {
      await c.end().catch(() => {});
      throw e;
    }
    if (stopped) return void await c.end().catch(() => {});
    current = c;
    onListen?.();
  };
  const reopen = () => {
    if (stopped) return;
    retry = setTimeout(() => open().catch(reopen), 1_000);
  };
  await open();
  return async () => {
    stopped = true;
    clearTimeout(retry);
    const c = current;
    current = undefined;
    await c?.end().catch(() => {});
  };
}

/**
 * `db` as the migrator sees it: its introspection lists only the tables of the migration schema. Kysely's own
 * PostgreSQL introspector reads every table of every schema and resolves each by name
 * (`pg_get_serial_sequence`), so a schema another session drops meanwhile (parallel test processes dropping
 * their schemas on a shared server) failed the migration with `schema "<someone else's>" does not exist`.
 */
function withScopedIntrospection(db: Kysely<Database>, schema: string | undefined): Kysely<Database> {
  const introspection: DatabaseIntrospector = {
    async getSchemas() {
      const r = await sql<{ name: string }>`select nspname as name from pg_catalog.pg_namespace`.execute(db);
      return r.rows;
    },
    async getTables() {
      const r = await sql<{ name: string; schema: string; kind: string }>`
        select c.relname as name, n.nspname as schema, c.relkind as kind
        from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
        where n.nspname = coalesce(${schema ?? null}, current_schema()) and c.relkind in ('r', 'v', 'p', 'f')`
        .execute(db);
      return r.rows.map((t) => ({
        name: t.name,
        schema: t.schema,
        isView: t.kind === "v",
        isForeign: t.kind === "f",
        columns: [],
      }));
    },
  };
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "introspection") return introspection;
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * True when every migration is recorded as applied: one read instead of the migrator's schema checks, lock
 * table and locked transaction (about 0.1 s of every start). Anything else (no table yet, a migration
 * missing) answers false and the migrator runs as usual, under its lock.
 */
async function upToDate(db: Kysely<Database>, schema: string | undefined): Promise<boolean> {
  const names = Object.keys(await migrationProvider.getMigrations());
  const quote = (id: string) => `"${id.replaceAll('"', '""')}"`;
  const table = schema ? `${schema}.${DEFAULT_MIGRATION_TABLE}` : DEFAULT_MIGRATION_TABLE;
  const regclass = schema
    ? `${quote(schema)}.${quote(DEFAULT_MIGRATION_TABLE)}`
    : quote(DEFAULT_MIGRATION_TABLE);
  const exists = await sql<{ t: string | null }>`select to_regclass(${regclass})::text as t`.execute(db);
  if (!exists.rows[0]?.t) return false;
  const applied = await sql<{ name: string }>`select name from ${sql.table(table)}`.execute(db);
  const done = new Set(applied.rows.map((r) => r.name));
  return names.every((n) => done.has(n));
}

/**
 * A Kysely migrator over this core's migrations, its table and its introspection both scoped to `schema`
 * (so another session dropping its own schema meanwhile cannot fail it; see above). For tools and tests that
 * move the schema to a chosen migration; a service start uses {@link migrate}.
 */
export function scopedMigrator(db: Kysely<Database>, schema: string): Migrator {
  return new Migrator({
    db: withScopedIntrospection(db, schema),
    provider: migrationProvider,
    migrationTableSchema: schema,
  });
}

/** Apply every pending migration. Kysely takes a PostgreSQL advisory lock, so concurrent starts are safe. */
export async function migrate(db: Kysely<Database>, schema?: string): Promise<string[]> {
  // Name our schema explicitly (search_path may select one): Kysely's table check spans all schemas.
  schema ??= (await sql<{ s: string }>`select current_schema() as s`.execute(db)).rows[0]?.s;
  if (await upToDate(db, schema)) return [];
  const migrator = new Migrator({
    db: withScopedIntrospection(db, schema),
    provider: migrationProvider,
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    throw new StartupError("MIGRATION_FAILED", `Migration failed: ${(error as Error).message ?? error}`);
  }
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}

/** The migrations recorded as applied (none when the migration table does not exist yet). */
export async function appliedMigrations(db: Kysely<Database>): Promise<string[]> {
  const exists = await sql<{ t: string | null }>`select to_regclass(${DEFAULT_MIGRATION_TABLE})::text as t`
    .execute(db);
  if (!exists.rows[0]?.t) return [];
  return (await sql<{ name: string }>`select name from ${sql.table(DEFAULT_MIGRATION_TABLE)} order by name`
    .execute(db)).rows.map((r) => r.name);
}

/**
 * Apply the pending migrations up to and including `target`, never down: throws when a migration after
 * `target` is already applied. A restore loads a backup at the schema it was made with, then migrates on.
 */
export async function migrateUpTo(db: Kysely<Database>, target: string): Promise<string[]> {
  const schema = (await sql<{ s: string }>`select current_schema() as s`.execute(db)).rows[0]?.s;
  const beyond = (await appliedMigrations(db)).filter((n) => n > target);
  if (beyond.length) {
    throw new StartupError(
      "MIGRATION_FAILED",
      `Migrations after ${target} are applied already: ${beyond.join(", ")}`,
    );
  }
  const migrator = new Migrator({
    db: withScopedIntrospection(db, schema),
    provider: migrationProvider,
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  const { error, results } = await migrator.migrateTo(target);
  if (error) {
    throw new StartupError("MIGRATION_FAILED", `Migration failed: ${(error as Error).message ?? error}`);
  }
  return (results ?? []).filter((r) => r.status === "Success" && r.direction === "Up").map((r) =>
    r.migrationName
  );
}
