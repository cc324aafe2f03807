/**
 * Backup and restore of the whole database (issue 31; docs/data.md "Backup and restore"), from and into either
 * backend.
 *
 * The archive is a gzip-compressed tar (npm `nanotar`) of:
 * - `manifest.json`: `format` (`"dutlab-backup"`), `version` (1), `createdAt`, the source `database`
 *   (`pglite` or `postgres`) and core version, the applied `migrations`, `credentialKeys` (the ids, first 8 hex
 *   of the SHA-256 of the key, of the credential keys the devices' passwords are encrypted with: the key itself
 *   is never in the archive) and `tables`, in restore order (referenced tables first): each with its `file`,
 *   `columns`, `rows` and the `sha256` of the file's bytes;
 * - `tables/<table>.jsonl`: one row per line, PostgreSQL's own JSON of the row (`to_jsonb`), so every value
 *   (bigint ids, microsecond timestamps, payload text) goes back exactly as it was.
 *
 * Every table of the schema is in it (devices with their encrypted credentials, snapshots and payloads,
 * runs, alerts, reports and their signatures, the signing keys' public halves, token hashes, the audit log,
 * prunes, events), read in one REPEATABLE READ, read-only transaction: a consistent state while the service
 * runs. A restore checks everything before it writes anything (hashes, row counts, format, migrations, that
 * the target is empty, that the given credential keys decrypt every device's password), then loads every table
 * in one transaction with the tables' guards (append-only triggers) off, puts identity sequences after the
 * highest id, and before committing re-hashes every payload and verifies every report.
 *
 * @module
 */
import { type Kysely, sql, type Transaction } from "kysely";
import { createTar, type ParsedTarFileItem, parseTar } from "nanotar";
import { gunzipSync, gzipSync } from "node:zlib";
import type { Database } from "../db/schema.ts";
import { migrationProvider } from "../db/migrations/mod.ts";
import { sha256Hex } from "../util/hash.ts";
import { concatBytes } from "../util/bytes.ts";
import { verifyReport } from "../report/verify.ts";
import { CORE_VERSION } from "../version.ts";

export const BACKUP_FORMAT = "dutlab-backup";

export interface ManifestTable {
  name: string;
  file: string;
  columns: string[];
  rows: number;
  sha256: string;
}

export interface Manifest {
  format: typeof BACKUP_FORMAT;
  version: 1;
  createdAt: string;
  database: "pglite" | "postgres";
  coreVersion: string;
  migrations: string[];
  credentialKeys: string[];
  tables: ManifestTable[];
}

/** A backup or restore step, for progress lines. */
export type Progress = (line: string) => void;

/** Why a restore was refused; nothing was written. */
export class RestoreRefused extends Error {
  override name = "RestoreRefused";
}

const quote = (id: string) => `"${id.replaceAll('"', '""')}"`;
const MIGRATION_TABLES = new Set(["kysely_migration", "kysely_migration_lock"]);

/** The schema's tables in restore order: a table after every table it references. */
async function tablesInOrder(db: Kysely<Database> | Transaction<Database>): Promise<string[]> {
  const tables = (await sql<{ name: string }>`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = current_schema() and c.relkind in ('r', 'p') order by c.relname`.execute(db)).rows
    .map((r) => r.name).filter((t) => !MIGRATION_TABLES.has(t));
  const refs = (await sql<{ child: string; parent: string }>`
    select c.relname as child, p.relname as parent from pg_constraint k
      join pg_class c on c.oid = k.conrelid join pg_class p on p.oid = k.confrelid
      join pg_namespace n on n.oid = c.relnamespace
    where k.contype = 'f' and n.nspname = current_schema()`.execute(db)).rows;
  const out: string[] = [];
  const seen = new Set<string>();
  const visit = (t: string, path: Set<string>) => {
    if (seen.has(t) || path.has(t)) return;
    path.add(t);
    for (const r of refs) if (r.child === t && r.parent !== t) visit(r.parent, path);
    seen.add(t);
    out.push(t);
  };
  for (const t of tables) visit(t, new Set());
  return out;
}

async function columnsOf(db: Kysely<Database> | Transaction<Database>, table: string): Promise<string[]> {
  return (await sql<{ name: string }>`
    select column_name as name from information_schema.columns
    where table_schema = current_schema() and table_name = ${table} and is_generated = 'NEVER'
    order by ordinal_position`.execute(db)).rows.map((r) => r.name);
}

const PAGE = 5000;
/** SHA-256 of no bytes: the manifest's hash of an empty table's file. */
const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/**
 * Write the archive of everything in `db` (one consistent read). The archive is built in memory (about the
 * size of the uncompressed rows; BENCHMARKS.md).
 */
export async function writeBackup(
  db: Kysely<Database>,
  kind: "pglite" | "postgres",
  progress: Progress = () => {},
): Promise<{ archive: Uint8Array; manifest: Manifest }> {
  return await db.transaction().setIsolationLevel("repeatable read").setAccessMode("read only").execute(
    async (tx) => {
      const files: Array<{ name: string; data: Uint8Array }> = [];
      const tables: ManifestTable[] = [];
      const enc = new TextEncoder();
      for (const name of await tablesInOrder(tx)) {
        const columns = await columnsOf(tx, name);
        const parts: Uint8Array[] = [];
        let rows = 0;
        // A cursor in the read's snapshot: rows in pages, in one pass over the table.
        const table = sql.table(name);
        await sql`declare dutlab_backup no scroll cursor for select to_jsonb(t)::text as j from ${table} t`
          .execute(tx);
        for (;;) {
          const page = (await sql<{ j: string }>`fetch forward ${sql.raw(String(PAGE))} from dutlab_backup`
            .execute(tx)).rows;
          if (!page.length) break;
          parts.push(enc.encode(page.map((r) => r.j).join("\n") + "\n"));
          rows += page.length;
          if (rows % (PAGE * 20) === 0) progress(`backup: ${name}: ${rows} rows`);
        }
        await sql`close dutlab_backup`.execute(tx);
        const data = concatBytes(parts);
        const file = `tables/${name}.jsonl`;
        files.push({ name: file, data });
        tables.push({ name, file, columns, rows, sha256: await sha256Hex(data) });
        progress(`backup: ${name}: ${rows} rows`);
      }
      const migrations = (await sql<{ name: string }>`select name from kysely_migration order by name`
        .execute(tx)).rows.map((r) => r.name);
      const keys = (await sql<{ k: string }>`
        select distinct split_part(password_enc, '.', 2) as k from devices order by 1`.execute(tx)).rows
        .map((r) => r.k);
      const manifest: Manifest = {
        format: BACKUP_FORMAT,
        version: 1,
        createdAt: new Date().toISOString(),
        database: kind,
        coreVersion: CORE_VERSION,
        migrations,
        credentialKeys: keys,
        tables,
      };
      // The manifest goes last: npm nanotar pads a tar to 10,240 bytes without always leaving the end-of-archive
      // blocks, and its reader skips a header in the last 512 bytes, so an empty table's file written last was
      // lost whenever the size fell on that boundary. The manifest is never empty, so its header never is there.
      files.push({ name: "manifest.json", data: enc.encode(JSON.stringify(manifest, null, 2) + "\n") });
      return { archive: tarGzip(files), manifest };
    },
  );
}

/**
 * One tar record (10,240 bytes) of zeros: the end-of-archive marker (at least two zero blocks). npm nanotar
 * 0.3.0's `createTar` leaves it out when the entries fill the last record exactly, and its `parseTar` then
 * skips an empty last file (its loop stops 512 bytes before the end): an archive with one more table (the
 * labs of migration 0016) hit it. Written after the entries, and added on reading for archives made before.
 */
const END_OF_ARCHIVE = new Uint8Array(10_240);

function tarGzip(files: Array<{ name: string; data: Uint8Array }>): Uint8Array {
  return new Uint8Array(gzipSync(concatBytes([createTar(files), END_OF_ARCHIVE])));
}

function untarGzip(archive: Uint8Array): ParsedTarFileItem[] {
  return parseTar(concatBytes([new Uint8Array(gunzipSync(archive)), END_OF_ARCHIVE]));
}

/** An archive read and checked (hashes, row counts, format, migrations): its manifest and table files. */
export interface OpenedBackup {
  manifest: Manifest;
  /** Each table's lines (JSON text of one row each). */
  lines(table: string): string[];
}

/** Read an archive and check it against its manifest; throws {@link RestoreRefused} on any mismatch. */
export async function readBackup(archive: Uint8Array): Promise<OpenedBackup> {
  let files;
  try {
    files = untarGzip(archive);
  } catch (e) {
    throw new RestoreRefused(`Not a dutlab backup (not a tar.gz archive: ${(e as Error).message})`);
  }
  const byName = new Map(files.map((f) => [f.name, f]));
  const m = byName.get("manifest.json");
  if (!m?.data) throw new RestoreRefused("Not a dutlab backup (no manifest.json)");
  let manifest: Manifest;
  try {
    manifest = JSON.parse(new TextDecoder().decode(m.data));
  } catch {
    throw new RestoreRefused("Not a dutlab backup (manifest.json is not JSON)");
  }
  if (manifest.format !== BACKUP_FORMAT || manifest.version !== 1 || !Array.isArray(manifest.tables)) {
    throw new RestoreRefused(`Not a dutlab backup of format version 1 (format "${manifest.format}")`);
  }
  const known = new Set(Object.keys(await migrationProvider.getMigrations()));
  const newer = manifest.migrations.filter((n) => !known.has(n));
  if (newer.length) {
    throw new RestoreRefused(
      `The backup was made by a newer dutlab (migrations ${
        newer.join(", ")
      } unknown here); restore it with that version`,
    );
  }
  const dec = new TextDecoder("utf-8", { fatal: true });
  const text = new Map<string, string[]>();
  for (const t of manifest.tables) {
    // An archive written before the manifest went last may have lost the file of an empty table (see writeBackup):
    // a table the manifest lists with no rows and the hash of no bytes is read as empty.
    const f = byName.get(t.file) ??
      (t.rows === 0 && t.sha256 === EMPTY_SHA256 ? { data: undefined } : undefined);
    if (!f) throw new RestoreRefused(`The archive lacks ${t.file}`);
    const data = f.data ?? new Uint8Array(); // an empty table's file has no data
    const sha = await sha256Hex(data);
    if (sha !== t.sha256) {
      throw new RestoreRefused(`${t.file} is damaged: SHA-256 ${sha}, the manifest says ${t.sha256}`);
    }
    const lines = dec.decode(data).split("\n").filter((l) => l.length);
    if (lines.length !== t.rows) {
      throw new RestoreRefused(`${t.file} has ${lines.length} rows, the manifest says ${t.rows}`);
    }
    text.set(t.name, lines);
  }
  return { manifest, lines: (t) => text.get(t) ?? [] };
}

/** Tables a freshly migrated database already fills (replaced by the backup's rows): `table_versions` only. */
const SEEDED = new Set(["table_versions"]);

/** The target's version rows (migration 0010), deleted to make room for the backup's. */
async function takeVersions(tx: Kysely<Database>): Promise<Array<{ name: string; version: string }>> {
  return (await sql<{ name: string; version: string }>`
    delete from table_versions returning name, version::text as version`.execute(tx)).rows;
}

/**
 * After the backup's version rows: every name the target had is there (a backup written before a version row
 * existed lacks it) and above the target's own version, so that an answer a listing cache
 * (core/src/http/list_cache.ts) kept for the target before the restore is never taken for the restored rows'.
 */
async function keepVersionsAhead(tx: Kysely<Database>, before: Array<{ name: string; version: string }>) {
  for (const b of before) {
    await sql`insert into table_versions (name, version) values (${b.name}, ${b.version}::bigint + 1)
      on conflict (name) do update set version = greatest(table_versions.version, excluded.version)`.execute(
      tx,
    );
  }
}

export interface RestoreOptions {
  /**
   * Throws when the configured credential keys do not decrypt a device's password (called before anything is
   * written, for every device of the backup).
   */
  checkCredential(deviceId: string, passwordEnc: string): Promise<void>;
  progress?: Progress;
}

/** What a restore loaded and checked. */
export interface RestoreSummary {
  tables: Array<{ name: string; rows: number }>;
  payloadsRehashed: number;
  reportsVerified: number;
}

/**
 * Load a checked backup into `db`, which must be empty (migrated, no rows). Nothing is written unless every
 * check passes; the load is one transaction.
 */
export async function restoreBackup(
  db: Kysely<Database>,
  backup: OpenedBackup,
  opts: RestoreOptions,
): Promise<RestoreSummary> {
  const progress = opts.progress ?? (() => {});
  const { manifest } = backup;
  // The credential key before anything else.
  for (const line of backup.lines("devices")) {
    const d = JSON.parse(line) as { id: string; password_enc: string };
    await opts.checkCredential(d.id, d.password_enc);
  }
  const present = new Set(await tablesInOrder(db));
  for (const t of manifest.tables) {
    if (!present.has(t.name)) {
      throw new RestoreRefused(`The target database has no table "${t.name}" (run the same dutlab version)`);
    }
    if (SEEDED.has(t.name)) continue;
    const any = await sql<{ n: number }>`select count(*)::int as n from (select 1 from ${
      sql.table(t.name)
    } limit 1) x`
      .execute(db);
    if (any.rows[0]!.n > 0) {
      throw new RestoreRefused(
        `The target database is not empty (table "${t.name}" has rows); restore into an empty one`,
      );
    }
  }
  return await db.transaction().execute(async (tx) => {
    const loaded: RestoreSummary["tables"] = [];
    for (const t of manifest.tables) {
      const cols = t.columns.map(quote).join(", ");
      const table = sql.table(t.name);
      await sql`alter table ${table} disable trigger user`.execute(tx);
      const versions = SEEDED.has(t.name) ? await takeVersions(tx) : null;
      const lines = backup.lines(t.name);
      for (let i = 0; i < lines.length; i += 1000) {
        const chunk = `[${lines.slice(i, i + 1000).join(",")}]`;
        await sql`insert into ${table} (${sql.raw(cols)}) overriding system value
          select ${sql.raw(cols)} from jsonb_populate_recordset(null::${table}, ${chunk}::jsonb)`.execute(tx);
        if ((i / 1000) % 50 === 49) progress(`restore: ${t.name}: ${i + 1000} of ${lines.length} rows`);
      }
      if (versions) await keepVersionsAhead(tx, versions);
      await sql`alter table ${table} enable trigger user`.execute(tx);
      progress(`restore: ${t.name}: ${lines.length} rows`);
      loaded.push({ name: t.name, rows: lines.length });
    }
    // Identity columns, and columns numbered by a sequence they own (`snapshot_payloads.id`, migration
    // 0017), continue after the highest restored value. The sequence is looked up only for this schema's
    // columns (CASE fixes the order; PostgreSQL may otherwise test the OR before the schema, and did once the
    // catalogs' statistics changed: `pg_get_serial_sequence('information_schema_catalog_name', …)` failed
    // the restore with "relation does not exist"), and by qualified name.
    const ids = (await sql<{ t: string; c: string }>`
      select table_name as t, column_name as c from information_schema.columns
      where table_schema = current_schema()
        and (is_identity = 'YES' or case when table_schema = current_schema()
          then pg_get_serial_sequence(format('%I.%I', table_schema, table_name), column_name) end is not null)`
      .execute(tx)).rows;
    for (const { t, c } of ids) {
      await sql`select setval(pg_get_serial_sequence(${quote(t)}, ${c}),
        coalesce((select max(${sql.ref(c)}) from ${sql.table(t)}), 1),
        (select max(${sql.ref(c)}) from ${sql.table(t)}) is not null)`.execute(tx);
    }
    // Re-hash every payload and verify every report before committing.
    let payloadsRehashed = 0;
    let after = "";
    for (;;) {
      const page = await tx.selectFrom("snapshot_payloads").select(["sha256", "payload"]).where(
        "sha256",
        ">",
        after,
      )
        .orderBy("sha256").limit(1000).execute();
      if (!page.length) break;
      for (const p of page) {
        if (await sha256Hex(p.payload) !== p.sha256) {
          throw new RestoreRefused(`Payload ${p.sha256} does not re-hash to its recorded SHA-256`);
        }
      }
      payloadsRehashed += page.length;
      after = page[page.length - 1]!.sha256;
    }
    let reportsVerified = 0;
    const reports = await tx.selectFrom("test_runs").select(["execution_id", "report_json", "report_sha256"])
      .where("report_json", "is not", null).execute();
    for (const r of reports) {
      const v = await verifyReport(JSON.parse(r.report_json!));
      if (!v.ok || v.reportSha256 !== r.report_sha256) {
        throw new RestoreRefused(`The report of run ${r.execution_id} does not verify`);
      }
      reportsVerified++;
    }
    progress(`restore: ${payloadsRehashed} payload(s) re-hashed, ${reportsVerified} report(s) verified`);
    return { tables: loaded, payloadsRehashed, reportsVerified };
  });
}
