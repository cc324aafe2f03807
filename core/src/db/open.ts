import { Kysely, PGliteDialect, sql } from "kysely";
import { Migrator } from "kysely/migration";
import { PostgresJSDialect } from "kysely-postgres-js";
import postgres from "postgres";
import { PGlite } from "@electric-sql/pglite";
import type { Database } from "./schema.ts";
import { migrationProvider } from "./migrations/mod.ts";
import { StartupError } from "../errors.ts";

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
   * PostgreSQL only: LISTEN on a channel over postgres.js's dedicated listener connection (re-established
   * after a connection loss, when `onListen` runs again).
   */
  listen?(
    channel: string,
    onNotify: (payload: string) => void,
    onListen?: () => void,
  ): Promise<() => Promise<void>>;
  /** PGlite only: the data directory as a tarball (test templates). */
  dumpDataDir?(): Promise<Blob>;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** `postgres://…`; when absent, embedded PGlite. */
  url?: string;
  /** PGlite data directory; in-memory when absent. */
  dataDir?: string;
  /** PGlite: start from this dumped data directory (tests). */
  loadDataDir?: Blob;
  /** PostgreSQL schema to use (tests isolate themselves in a fresh schema). */
  schema?: string;
  poolSize?: number;
}

/** Open PGlite (embedded) or PostgreSQL (postgres.js) behind one Kysely interface. */
export async function openDatabase(opts: OpenOptions): Promise<Db> {
  if (opts.url) {
    const connection = opts.schema ? { search_path: opts.schema } : undefined;
    const client = postgres(opts.url, {
      max: opts.poolSize ?? 10,
      onnotice: () => {},
      connection,
      // Timestamps and ints as the PGlite driver gives them; bigint ids are cast to text in queries.
    });
    const kysely = new Kysely<Database>({ dialect: new PostgresJSDialect({ postgres: client }) });
    try {
      await sql`select 1`.execute(kysely);
    } catch (e) {
      await client.end({ timeout: 1 }).catch(() => {});
      throw new StartupError("DB_UNREACHABLE", `Cannot connect to DATABASE_URL: ${(e as Error).message}`);
    }
    const db: Db = {
      kysely,
      kind: "postgres",
      async reserve() {
        // A one-connection client of its own, not a pool connection: a postgres.js reserved pool
        // connection used or released after its backend died crashes the process. After any error,
        // release this session and reserve a new one (a reused broken connection can hang).
        const one = postgres(opts.url!, {
          max: 1,
          onnotice: () => {},
          connection,
          idle_timeout: 0,
          max_lifetime: null,
        });
        try {
          const [{ pid }] = await one.unsafe<{ pid: number }[]>("select pg_backend_pid() as pid");
          return {
            pid,
            query: <T>(text: string, params: unknown[] = []) =>
              one.unsafe(text, params as postgres.ParameterOrJSON<never>[]) as unknown as Promise<T[]>,
            release: () => one.end({ timeout: 0 }),
          };
        } catch (e) {
          await one.end({ timeout: 0 }).catch(() => {});
          throw e;
        }
      },
      async listen(channel, onNotify, onListen) {
        const { unlisten } = await client.listen(channel, onNotify, onListen);
        return unlisten;
      },
      async close() {
        await kysely.destroy();
      },
      [Symbol.asyncDispose]: () => db.close(),
    };
    return db;
  }
  const pglite = opts.dataDir
    ? new PGlite(opts.dataDir)
    : new PGlite(opts.loadDataDir ? { loadDataDir: opts.loadDataDir } : {});
  await pglite.waitReady;
  const kysely = new Kysely<Database>({ dialect: new PGliteDialect({ pglite }) });
  const db: Db = {
    kysely,
    kind: "pglite",
    reserve() {
      return Promise.reject(new Error("PGlite has a single session; no reserved sessions"));
    },
    dumpDataDir: () => pglite.dumpDataDir("none"),
    async close() {
      await kysely.destroy();
      if (!pglite.closed) await pglite.close();
    },
    [Symbol.asyncDispose]: () => db.close(),
  };
  return db;
}

/** Apply every pending migration. Kysely takes a PostgreSQL advisory lock, so concurrent starts are safe. */
export async function migrate(db: Kysely<Database>, schema?: string): Promise<string[]> {
  // Name our schema explicitly (search_path may select one): Kysely's table check spans all schemas.
  schema ??= (await sql<{ s: string }>`select current_schema() as s`.execute(db)).rows[0]?.s;
  const migrator = new Migrator({
    db,
    provider: migrationProvider,
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    throw new StartupError("MIGRATION_FAILED", `Migration failed: ${(error as Error).message ?? error}`);
  }
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}
