/**
 * The write-back of a finished run (issue 50 point 4, docs/netbox.md "Writing verdicts back"): an opt-in step
 * that posts, on each device of the run, a NetBox journal entry (`POST /api/extras/journal-entries/`) with the
 * verdict, the report's URL, its SHA-256 and the DSSE envelope's digest. Each device's outcome is stored
 * (`netbox_journal`): posted (with NetBox's entry id: never posted twice) or failed (the reason, the attempts).
 * The run itself is never touched. Calling it again retries only what failed; the client already retries a
 * 429 (after `Retry-After`) and 502/503/504. With DUT_NETBOX_WRITEBACK=on the run's finish queues the rows and
 * the write-back worker (journal_worker.ts) posts them without a call.
 *
 * The NetBox device is the one named by the device's `netbox:<id>` tag (which `lab from-netbox` sets), else
 * the NetBox device of the same name.
 *
 * @module
 */
import type { Kysely } from "kysely";
import type { Database } from "../db/schema.ts";
import { type NetBoxClient, NetBoxError } from "./client.ts";

export interface RunForJournal {
  executionId: string;
  verdict: string | null;
  outcome: string | null;
  reportUrl: string;
  reportSha256: string;
  /** `sha256:` of the report's DSSE envelope, when signed. */
  dsseDigest: string | null;
  devices: Array<{ id: string; hostname: string }>;
}

export interface JournalRow {
  hostname: string;
  netboxDeviceId: number | null;
  /** `pending`: queued by the run's finish, not tried yet (automatic write-back). */
  status: "pending" | "posted" | "failed";
  attempts: number;
  lastError: string | null;
  journalEntryId: number | null;
  updatedAt: string;
  /** When the write-back worker tries it next (queued rows), else null. */
  nextAttemptAt: string | null;
}

/** NetBox's journal kinds: info, success, warning, danger. */
const kindOf = (verdict: string | null) =>
  verdict === "pass" || verdict === "passed"
    ? "success"
    : verdict === "fail" || verdict === "failed"
    ? "danger"
    : verdict === null
    ? "info"
    : "warning";

/** The body of `POST /api/extras/journal-entries/` (NetBox's JournalEntryRequest) for one device. */
export function journalEntryBody(netboxId: number, verdict: string | null, comments: string) {
  return {
    assigned_object_type: "dcim.device",
    assigned_object_id: netboxId,
    kind: kindOf(verdict),
    comments,
  };
}

export function journalComment(run: RunForJournal): string {
  return [
    `dutlab run ${run.executionId}: verdict **${run.verdict ?? "none"}** (outcome ${run.outcome ?? "none"})`,
    `Report: ${run.reportUrl}`,
    `Report SHA-256: ${run.reportSha256}`,
    ...(run.dsseDigest ? [`DSSE envelope: ${run.dsseDigest}`] : []),
  ].join("\n\n");
}

async function netboxIdOf(
  client: NetBoxClient,
  hostname: string,
  tags: string[],
): Promise<number> {
  const tagged = tags.map((t) => /^netbox:(\d+)$/.exec(t)).find((m) => m !== null);
  if (tagged) return Number(tagged[1]);
  const found = await client.list<{ id: number }>(
    "api/dcim/devices/",
    [["name", hostname]],
    `device named ${hostname}`,
  );
  if (found.results.length !== 1) {
    throw new NetBoxError(
      `NetBox has ${found.results.length ? "several devices" : "no device"} named ${hostname}`,
      `device named ${hostname}`,
      404,
      false,
    );
  }
  return found.results[0]!.id;
}

/** One device's attempt: NetBox's device id (when found), the entry's id, or the error. */
export interface PostOutcome {
  netboxId: number | null;
  journalEntryId: number | null;
  error: NetBoxError | null;
}

/** Post one device's journal entry of `run`; a NetBox refusal is returned, never thrown. */
export async function postEntry(
  client: NetBoxClient,
  run: RunForJournal,
  hostname: string,
  tags: string[],
): Promise<PostOutcome> {
  let netboxId: number | null = null;
  try {
    netboxId = await netboxIdOf(client, hostname, tags);
    const r = await client.request(
      "POST",
      client.url("api/extras/journal-entries/"),
      `journal entry of device #${netboxId} (${hostname})`,
      journalEntryBody(netboxId, run.verdict, journalComment(run)),
    );
    const id = (r.json as { id?: unknown })?.id;
    return { netboxId, journalEntryId: typeof id === "number" ? id : null, error: null };
  } catch (e) {
    if (!(e instanceof NetBoxError)) throw e;
    return { netboxId, journalEntryId: null, error: e };
  }
}

/** Posts the journal entries still missing for a run; returns every device's row. */
export async function writeBack(
  db: Kysely<Database>,
  client: NetBoxClient,
  run: RunForJournal,
): Promise<JournalRow[]> {
  const done = new Set(
    (await db.selectFrom("netbox_journal").select("hostname").where("execution_id", "=", run.executionId)
      .where("status", "=", "posted").execute()).map((r) => r.hostname),
  );
  const ids = run.devices.map((d) => d.id);
  const tagsOf = new Map(
    ids.length
      ? (await db.selectFrom("devices").select(["id", "tags"]).where("id", "in", ids).execute()).map((
        r,
      ) => [r.id, r.tags] as const)
      : [],
  );
  for (const d of run.devices) {
    if (done.has(d.hostname)) continue;
    const r = await postEntry(client, run, d.hostname, tagsOf.get(d.id) ?? []);
    const row = r.error === null
      ? { status: "posted" as const, last_error: null, journal_entry_id: r.journalEntryId }
      : { status: "failed" as const, last_error: r.error.message.slice(0, 2000), journal_entry_id: null };
    await db.insertInto("netbox_journal").values({
      execution_id: run.executionId,
      hostname: d.hostname,
      device_id: d.id,
      netbox_device_id: r.netboxId,
      attempts: 1,
      ...row,
    }).onConflict((oc) =>
      oc.columns(["execution_id", "hostname"]).doUpdateSet((eb) => ({
        netbox_device_id: r.netboxId,
        status: row.status,
        last_error: row.last_error,
        journal_entry_id: row.journal_entry_id,
        attempts: eb("netbox_journal.attempts", "+", 1),
        // Posted: out of the write-back queue; failed: a queued row keeps its turn (the worker retries it).
        ...(row.status === "posted" ? { next_at: null, lease_until: null } : {}),
        updated_at: new Date(),
      }))
    ).execute();
  }
  return journalRows(db, run.executionId);
}

/** The stored write-back of a run, by hostname. */
export async function journalRows(db: Kysely<Database>, executionId: string): Promise<JournalRow[]> {
  const rows = await db.selectFrom("netbox_journal").selectAll().where("execution_id", "=", executionId)
    .orderBy("hostname").execute();
  return rows.map((r) => ({
    hostname: r.hostname,
    netboxDeviceId: r.netbox_device_id === null ? null : Number(r.netbox_device_id),
    status: r.status,
    attempts: Number(r.attempts),
    lastError: r.last_error,
    journalEntryId: r.journal_entry_id === null ? null : Number(r.journal_entry_id),
    updatedAt: new Date(r.updated_at as unknown as string).toISOString(),
    nextAttemptAt: r.status !== "posted" && r.next_at !== null
      ? new Date(r.next_at as unknown as string).toISOString()
      : null,
  }));
}
