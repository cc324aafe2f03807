import { StartupError } from "./errors.ts";
import { logger } from "./log.ts";
import { generateSigningKey } from "./report/sign.ts";

/**
 * Take the data directory for this process. PGlite is single-process: a second process opening the
 * same directory would corrupt it, so a PID lock file is created atomically; a lock left by a dead
 * process is taken over.
 */
export async function lockDataDir(dir: string): Promise<{ release(): void }> {
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const path = `${dir}/dutlab.pid`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const f = await Deno.open(path, { createNew: true, write: true, mode: 0o600 });
      await f.write(new TextEncoder().encode(String(Deno.pid)));
      f.close();
      return {
        release() {
          try {
            if (Deno.readTextFileSync(path).trim() === String(Deno.pid)) Deno.removeSync(path);
          } catch { /* already gone */ }
        },
      };
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
      const pid = Number((await Deno.readTextFile(path).catch(() => "")).trim());
      if (pid > 0 && pid !== Deno.pid && isAlive(pid)) {
        throw new StartupError(
          "DATA_DIR_IN_USE",
          `Data directory ${dir} is in use by process ${pid}; embedded PGlite allows one process. ` +
            `Stop it, use another DUT_DATA_DIR, or set DATABASE_URL to share a PostgreSQL server`,
        );
      }
      logger("startup").warn("Removing stale lock {path} left by process {pid}", { path, pid });
      await Deno.remove(path).catch(() => {});
    }
  }
  throw new StartupError("DATA_DIR_IN_USE", `Could not lock data directory ${dir}`);
}

function isAlive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch (e) {
    return !(e instanceof Deno.errors.NotFound) && !String(e).includes("ESRCH");
  }
}

/**
 * Embedded mode: read secrets from `<dir>/secrets.json` (mode 0600), generating strong values for the
 * ones the environment does not give (admin token, credential key, report signing key). Returns the file path when it was written.
 */
export async function loadOrCreateSecrets(
  dir: string,
  given: { ADMIN_TOKEN?: string; DUT_CRED_ENC_KEY?: string; DUT_REPORT_SIGNING_KEY?: string },
): Promise<
  {
    adminToken: string;
    credEncKey: string;
    reportSigningKey: string;
    generatedAdminToken: boolean;
    path: string;
  }
> {
  const path = `${dir}/secrets.json`;
  let stored: { adminToken?: string; credEncKey?: string; reportSigningKey?: string } = {};
  try {
    stored = JSON.parse(await Deno.readTextFile(path));
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) {
      throw new StartupError("BAD_SECRETS_FILE", `Cannot read ${path}: ${(e as Error).name}`);
    }
  }
  const hex = (n: number) =>
    Array.from(crypto.getRandomValues(new Uint8Array(n)), (b) => b.toString(16).padStart(2, "0")).join("");
  let changed = false;
  let generatedAdminToken = false;
  if (!given.ADMIN_TOKEN && !stored.adminToken) {
    stored.adminToken = hex(32);
    changed = generatedAdminToken = true;
  }
  if (!given.DUT_CRED_ENC_KEY && !stored.credEncKey) {
    stored.credEncKey = hex(32);
    changed = true;
  }
  if (!given.DUT_REPORT_SIGNING_KEY && !stored.reportSigningKey) {
    stored.reportSigningKey = await generateSigningKey();
    changed = true;
  }
  if (changed) {
    await Deno.writeTextFile(path, JSON.stringify(stored, null, 2) + "\n", { mode: 0o600 });
    await Deno.chmod(path, 0o600);
  }
  return {
    adminToken: given.ADMIN_TOKEN ?? stored.adminToken!,
    credEncKey: given.DUT_CRED_ENC_KEY ?? stored.credEncKey!,
    reportSigningKey: given.DUT_REPORT_SIGNING_KEY ?? stored.reportSigningKey!,
    generatedAdminToken,
    path,
  };
}
