/** The lab apply's outbox event (issue 51): `dutlab.lab.synced` in the apply's transaction, when it changed devices. */
import type { Kysely } from "kysely";
import type { Database } from "../db/schema.ts";
import { enqueueEvent } from "../notify/outbox.ts";

/** Enqueue what an apply created, updated and deleted (hostnames), with the lab's new generation. */
export async function labSynced(
  tx: Kysely<Database>,
  labName: string,
  generation: number,
  touched: ReadonlyArray<{ hostname: string; change: "created" | "updated" | "deleted" }>,
): Promise<void> {
  if (!touched.length) return;
  const of = (c: string) => touched.filter((t) => t.change === c).map((t) => t.hostname);
  await enqueueEvent(tx, "dutlab.lab.synced", labName, {
    labName,
    generation,
    created: of("created"),
    updated: of("updated"),
    deleted: of("deleted"),
  }, { severity: "info" });
}
