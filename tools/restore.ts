/**
 * `deno task restore FILE`: load a backup (`deno task backup`) into the configured database, which must be
 * empty: `DATABASE_URL`, or the embedded data directory (`DUT_DATA_DIR`, with `serve` stopped). docs/data.md
 * "Backup and restore".
 *
 * The archive does not hold the credential key: its manifest names the key ids the devices' passwords were
 * encrypted with, and the restore needs that key in `DUT_CRED_ENC_KEY` (or `DUT_CRED_ENC_KEY_PREVIOUS`; for an
 * embedded target without them, the one of the data directory's secrets.json). Every check (archive hashes,
 * row counts, format, migrations, the key decrypting every device's password, an empty target) passes before
 * anything is written; the load is one transaction that re-hashes every payload and verifies every report
 * before it commits. An embedded target keeps the key in its secrets.json so `serve` reads the credentials.
 * Exit 0 restored, 1 refused or failed, 2 bad arguments.
 */
import { z } from "zod";
import { exitOnStartupError } from "@dutlab/core/runtime";
import { migrate, openForTool, parseEnv } from "../core/ops.ts";
import { appliedMigrations, migrateUpTo } from "../core/ops.ts";
import { readBackup, restoreBackup, RestoreRefused } from "../core/ops.ts";
import { type CredentialKey, decryptSecret, importCredentialKey, keyIdOf } from "../core/ops.ts";

const USAGE = "usage: deno task restore FILE";
const HEX64 = /^[0-9a-fA-F]{64}$/;

async function keys(): Promise<
  { keys: CredentialKey[]; fromSecrets: string | null; dataDir: string | null }
> {
  const env = Deno.env.toObject();
  const parsed = parseEnv(env, { entry: "database" });
  const dataDir = parsed.DATABASE_URL ? null : parsed.DUT_DATA_DIR;
  const Key = z.string().regex(HEX64, "must be exactly 64 hex characters (32 bytes)");
  const hexes: string[] = [];
  for (const name of ["DUT_CRED_ENC_KEY", "DUT_CRED_ENC_KEY_PREVIOUS"]) {
    const v = env[name] || undefined;
    if (v === undefined) continue;
    const parsed = Key.safeParse(v);
    if (!parsed.success) {
      console.error(`${name}: must be exactly 64 hex characters (32 bytes)`);
      Deno.exit(2);
    }
    hexes.push(parsed.data);
  }
  let stored: string | null = null;
  if (dataDir) {
    try {
      const s = JSON.parse(await Deno.readTextFile(`${dataDir}/secrets.json`));
      if (typeof s.credEncKey === "string" && HEX64.test(s.credEncKey)) stored = s.credEncKey;
    } catch { /* none yet */ }
  }
  if (dataDir && stored && hexes.length && !hexes.includes(stored)) {
    throw new RestoreRefused(
      `${dataDir}/secrets.json holds another credential key (id ${(await importCredentialKey(stored)).id}) ` +
        "than DUT_CRED_ENC_KEY; restore into a new data directory, or unset DUT_CRED_ENC_KEY",
    );
  }
  if (!hexes.length && stored) hexes.push(stored);
  return {
    keys: await Promise.all(hexes.map(importCredentialKey)),
    fromSecrets: dataDir && !stored ? hexes[0] ?? null : null,
    dataDir,
  };
}

if (import.meta.main) {
  const [file, ...rest] = Deno.args;
  if (!file || rest.length || file.startsWith("-")) {
    console.error(USAGE);
    Deno.exit(2);
  }
  const progress = (line: string) => console.error(line);
  try {
    const backup = await readBackup(await Deno.readFile(file));
    const m = backup.manifest;
    progress(
      `restore: backup of ${m.createdAt} from ${m.database} (core ${m.coreVersion}), ` +
        `${m.tables.reduce((n, t) => n + t.rows, 0)} rows; credentials need key id(s) ${
          m.credentialKeys.join(", ") || "(no devices)"
        }`,
    );
    const k = await keys();
    const have = k.keys.map((x) => x.id);
    const missing = m.credentialKeys.filter((id) => !have.includes(id));
    if (missing.length) {
      throw new RestoreRefused(
        `The backup's device credentials are encrypted with key id(s) ${
          missing.join(", ")
        }; the configured ` +
          `key(s) are ${have.join(", ") || "none"}: set DUT_CRED_ENC_KEY to the key the backup needs`,
      );
    }
    // The backup is loaded at the schema it was made with; newer migrations then run on its rows, as in an
    // upgrade (a migration that fills a column from existing rows fills it for the restored ones too).
    const store = await openForTool(undefined, { migrate: false }).catch(exitOnStartupError);
    try {
      const archived = new Set(m.migrations);
      const ahead = (await appliedMigrations(store.db.kysely)).filter((n) => !archived.has(n));
      if (ahead.length) {
        throw new RestoreRefused(
          `The target database has migrations the backup predates (${
            ahead.join(", ")
          }): restore into a new ` +
            "PostgreSQL database or schema, or with the dutlab version that made the backup, then upgrade",
        );
      }
      const last = [...m.migrations].sort().at(-1);
      if (last) await migrateUpTo(store.db.kysely, last);
      const summary = await restoreBackup(store.db.kysely, backup, {
        progress,
        async checkCredential(id, enc) {
          try {
            await decryptSecret(k.keys, id, enc);
          } catch {
            throw new RestoreRefused(
              `Device ${id}'s credential (key id ${
                keyIdOf(enc)
              }) does not decrypt with the configured key(s) ` +
                `${have.join(", ")}: set DUT_CRED_ENC_KEY to the key the backup needs`,
            );
          }
        },
      });
      const upgraded = await migrate(store.db.kysely);
      if (upgraded.length) progress(`restore: applied the newer migrations ${upgraded.join(", ")}`);
      if (k.dataDir && k.fromSecrets) {
        const path = `${k.dataDir}/secrets.json`;
        let s: Record<string, unknown> = {};
        try {
          s = JSON.parse(await Deno.readTextFile(path));
        } catch { /* none yet */ }
        await Deno.writeTextFile(path, JSON.stringify({ ...s, credEncKey: k.fromSecrets }, null, 2) + "\n", {
          mode: 0o600,
        });
        await Deno.chmod(path, 0o600);
      }
      console.log(JSON.stringify(summary));
    } finally {
      await store.close();
    }
  } catch (e) {
    console.error(
      e instanceof RestoreRefused
        ? `restore refused: ${e.message}`
        : `restore failed: ${(e as Error).message}`,
    );
    Deno.exit(1);
  }
}
