/** Fresh benchmark databases (a new PostgreSQL schema, or PGlite in a temp data dir) and services. */
// deno-lint-ignore no-import-prefix -- test-only: kept out of deno.json and deno.lock (tests/gate/lockfiles_test.ts)
import postgres from "npm:postgres@3.4.9";
import { type Db, migrate, openDatabase, scopedMigrator } from "../core/harness/core.ts";
import { type Config, DEFAULT_PGLITE_WORKER, parseEnv, pdfSigningFromEnv } from "../core/harness/core.ts";
import { TEST_PDF_CERT, TEST_PDF_KEY } from "../core/harness/app.ts";
import { buildRegistry, type LoadedModules, type Registry } from "../core/harness/core.ts";
import { buildServices, type Services } from "../core/harness/core.ts";
import { CRED_KEY, PG_URL, SIGNING_KEY, TOKEN } from "./_util.ts";

export type Backend = "postgres" | "pglite";

export interface BenchDb extends Db {
  backend: Backend;
  /** PostgreSQL: the schema; PGlite: the data dir. */
  where: string;
  /** A `postgres` client on the same schema for raw SQL (PostgreSQL only). */
  raw?: postgres.Sql;
}

/** A fresh, migrated database, dropped (schema) or deleted (data dir) on close. */
export async function freshDb(
  backend: Backend,
  opts: { poolSize?: number; memory?: boolean } = {},
): Promise<BenchDb> {
  if (backend === "postgres") {
    const schema = `bench_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
    const admin = postgres(PG_URL, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create schema ${schema}`);
    const db = await openDatabase({ url: PG_URL, schema, poolSize: opts.poolSize });
    // Scoped to the schema: Kysely's own migrator would see other processes' schemas on the same server.
    const { error } = await scopedMigrator(db.kysely, schema).migrateToLatest();
    if (error) throw error;
    const raw = postgres(PG_URL, { max: 2, onnotice: () => {}, connection: { search_path: schema } });
    const close = async () => {
      await db.close();
      await raw.end({ timeout: 2 });
      await admin.unsafe(`drop schema ${schema} cascade`).catch(() => {});
      await admin.end({ timeout: 2 });
    };
    return { ...db, backend, where: schema, raw, close, [Symbol.asyncDispose]: close };
  }
  const dir = opts.memory ? "" : await Deno.makeTempDir({ prefix: "dutlab-bench-pglite-" });
  if (dir) await copyDir(await pgliteTemplate(), dir);
  // BENCH_PGLITE_SHARED_BUFFERS (like 128MB) compares buffer-pool sizes; the service's default otherwise.
  const sharedBuffers = Deno.env.get("BENCH_PGLITE_SHARED_BUFFERS") || undefined;
  // PGlite where the service runs it: in a Web Worker unless DUT_PGLITE_WORKER=off (its default, early_open.ts).
  const worker = (Deno.env.get("DUT_PGLITE_WORKER") || DEFAULT_PGLITE_WORKER) === "on";
  const db = await openDatabase(dir ? { dataDir: dir, sharedBuffers, worker } : { sharedBuffers, worker });
  await migrate(db.kysely);
  const close = async () => {
    await db.close();
    if (dir) await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  return { ...db, backend, where: dir || "memory", close, [Symbol.asyncDispose]: close };
}

let template: Promise<string> | null = null;

/**
 * A migrated on-disk PGlite data dir, made once per process (initdb on disk costs seconds; a copy, ms),
 * or the one named by BENCH_PGLITE_TEMPLATE (a parent process made it).
 */
export function pgliteTemplate(): Promise<string> {
  const given = Deno.env.get("BENCH_PGLITE_TEMPLATE");
  if (given) return Promise.resolve(given);
  template ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "dutlab-bench-pglite-template-" });
    const db = await openDatabase({ dataDir: dir });
    await migrate(db.kysely);
    await db.close();
    globalThis.addEventListener("unload", () => {
      try {
        Deno.removeSync(dir, { recursive: true });
      } catch { /* gone */ }
    });
    return dir;
  })();
  return template;
}

async function copyDir(from: string, to: string) {
  const r = await new Deno.Command("cp", { args: ["-a", `${from}/.`, to] }).output();
  if (!r.success) throw new Error(`cp -a ${from} ${to} failed: ${new TextDecoder().decode(r.stderr)}`);
}

/** The service configuration a bench process runs with (defaults of the real service). */
export function benchConfig(env: Record<string, string> = {}): Config {
  const parsed = parseEnv({
    ADMIN_TOKEN: TOKEN,
    DUT_CRED_ENC_KEY: CRED_KEY,
    DUT_REPORT_SIGNING_KEY: SIGNING_KEY,
    DUT_PDF_SIGNING_CERT: TEST_PDF_CERT,
    DUT_PDF_SIGNING_KEY: TEST_PDF_KEY,
    ...env,
  });
  return {
    ...parsed,
    ADMIN_TOKEN: TOKEN,
    DUT_CRED_ENC_KEY: CRED_KEY,
    DUT_REPORT_SIGNING_KEY: parsed.DUT_REPORT_SIGNING_KEY!,
    pdfSigning: pdfSigningFromEnv(parsed),
    extraCa: [],
  };
}

export async function benchServices(
  db: Db,
  modules: LoadedModules,
  env: Record<string, string> = {},
): Promise<{ svc: Services; registry: Registry }> {
  const registry = buildRegistry(modules);
  const svc = await buildServices(benchConfig(env), db, registry);
  return { svc, registry };
}
