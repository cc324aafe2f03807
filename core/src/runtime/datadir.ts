import { StartupError } from "../errors.ts";
import { logger } from "../util/log.ts";
import { generateSigningKey } from "../report/sign.ts";

/** What a lock file records: the owner's PID and, where the OS tells it, the process's start time. */
interface LockOwner {
  pid: number;
  /** Start time of the process in clock ticks since boot (`/proc/<pid>/stat` field 22); null if unknown. */
  start: string | null;
}

/**
 * Take the data directory for this process. PGlite is single-process: a second process opening the
 * same directory would corrupt it, so a lock file is created atomically. It names the owner by its PID
 * and its start time: a lock whose PID is dead, or whose PID now belongs to another process (PIDs are
 * reused, e.g. after a reboot or in a container, where the owner was PID 1), is stale and taken over.
 * A lock file of the old form (a bare PID) is judged by the PID alone.
 */
export async function lockDataDir(dir: string): Promise<{ release(): void }> {
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const path = `${dir}/dutlab.pid`;
  const me: LockOwner = { pid: Deno.pid, start: await processStart(Deno.pid) };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const f = await Deno.open(path, { createNew: true, write: true, mode: 0o600 });
      await f.write(new TextEncoder().encode(JSON.stringify(me) + "\n"));
      f.close();
      return {
        release() {
          try {
            if (parseLock(Deno.readTextFileSync(path))?.pid === Deno.pid) Deno.removeSync(path);
          } catch { /* already gone */ }
        },
      };
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
      const owner = parseLock(await Deno.readTextFile(path).catch(() => ""));
      if (owner && owner.pid !== Deno.pid && isAlive(owner.pid)) {
        const now = owner.start === null ? null : await processStart(owner.pid);
        if (now === null || now === owner.start) {
          throw new StartupError(
            "DATA_DIR_IN_USE",
            `Data directory ${dir} is in use by process ${owner.pid}; embedded PGlite allows one process. ` +
              `Stop it, use another DUT_DATA_DIR, or set DATABASE_URL to share a PostgreSQL server`,
          );
        }
        logger("startup").warn(
          "Removing stale lock {path}: process {pid} that holds it started after the lock was written " +
            "(its PID was reused)",
          { path, pid: owner.pid },
        );
      } else {
        logger("startup").warn("Removing stale lock {path} left by process {pid}", { path, pid: owner?.pid });
      }
      await Deno.remove(path).catch(() => {});
    }
  }
  throw new StartupError("DATA_DIR_IN_USE", `Could not lock data directory ${dir}`);
}

/** A lock file's owner: `{"pid":…,"start":…}`, or a bare PID (older lock files); null if unreadable. */
export function parseLock(text: string): LockOwner | null {
  const t = text.trim();
  if (/^\d+$/.test(t)) return { pid: Number(t), start: null };
  try {
    const o = JSON.parse(t);
    if (Number.isInteger(o?.pid) && o.pid > 0) {
      return { pid: o.pid, start: typeof o.start === "string" ? o.start : null };
    }
  } catch { /* not a lock */ }
  return null;
}

/** The start time of a process (Linux `/proc/<pid>/stat` field 22), or null where it cannot be read. */
export async function processStart(pid: number): Promise<string | null> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    // Field 2 (the command name) is in parentheses and may hold spaces: count fields after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const start = fields[22 - 3];
    return start && /^\d+$/.test(start) ? start : null;
  } catch {
    return null;
  }
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
 * ones the environment does not give (admin token, credential key, report signing key, and for `serve` a
 * self-signed PDF signing certificate naming the lab, with its key). Returns the file path when it was written.
 */
export async function loadOrCreateSecrets(
  dir: string,
  given: { ADMIN_TOKEN?: string; DUT_CRED_ENC_KEY?: string; DUT_REPORT_SIGNING_KEY?: string },
  /** `serve` (signs PDFs), when the environment gives no PDF certificate: the lab's name for a new one. */
  pdfCertificateFor?: { labName: string },
): Promise<
  {
    adminToken: string;
    credEncKey: string;
    reportSigningKey: string;
    /** The stored (or just generated) PDF signing certificate and key, PEM; null unless asked for. */
    pdfSigning: { certificate: string; privateKey: string } | null;
    generatedAdminToken: boolean;
    /** A new PDF signing certificate was generated (first start of `serve`). */
    generatedPdfCertificate: boolean;
    path: string;
  }
> {
  const path = `${dir}/secrets.json`;
  let stored: {
    adminToken?: string;
    credEncKey?: string;
    reportSigningKey?: string;
    pdfSigningCertificate?: string;
    pdfSigningKey?: string;
  } = {};
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
  let generatedPdfCertificate = false;
  if (pdfCertificateFor && !(stored.pdfSigningCertificate && stored.pdfSigningKey)) {
    const { generatePdfSigningMaterial } = await import("../report/pdf_sign.ts");
    const m = await generatePdfSigningMaterial(pdfCertificateFor.labName);
    stored.pdfSigningCertificate = m.certificate;
    stored.pdfSigningKey = m.privateKey;
    changed = generatedPdfCertificate = true;
  }
  if (changed) {
    await Deno.writeTextFile(path, JSON.stringify(stored, null, 2) + "\n", { mode: 0o600 });
    await Deno.chmod(path, 0o600);
  }
  return {
    adminToken: given.ADMIN_TOKEN ?? stored.adminToken!,
    credEncKey: given.DUT_CRED_ENC_KEY ?? stored.credEncKey!,
    reportSigningKey: given.DUT_REPORT_SIGNING_KEY ?? stored.reportSigningKey!,
    pdfSigning: pdfCertificateFor
      ? { certificate: stored.pdfSigningCertificate!, privateKey: stored.pdfSigningKey! }
      : null,
    generatedAdminToken,
    generatedPdfCertificate,
    path,
  };
}
