/**
 * Readiness at reserving time (issue 52, docs/reservations.md "Readiness"): the devices are polled now (a
 * fresh snapshot each), then the plan's pre-flight is evaluated over them alone. Any check that does not
 * pass on a device (fail, error, or skipped for want of a snapshot) refuses the reservation before anything
 * is granted, naming each check and device; with `markOutOfService` each failing device is disabled and the
 * evidence is put in its notes, so a broken device is never hidden inside a held reservation. The devices are
 * polled at once, at most `DUT_POLL_CONCURRENCY` at a time (a testbed of 40 devices is not 40 polls in a row).
 * A refusal is also a webhook event (`dutlab.reservation.not_ready`, written after any out-of-service marking).
 *
 * @module
 */
import type { Services } from "../runtime/services.ts";
import { runPreflight } from "../preflight/engine.ts";
import { HttpProblem, problems } from "./problem.ts";
import { reservationNotReady } from "../reservations/notify.ts";
import type { WebhookEventMap } from "../notify/types.ts";

/** Run `fn` over `items`, at most `limit` at a time; rejects with the first failure after all settled. */
async function eachBounded<T>(items: readonly T[], limit: number, fn: (x: T) => Promise<unknown>) {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  const lanes = await Promise.allSettled(
    Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane),
  );
  const failed = lanes.find((l) => l.status === "rejected");
  if (failed) throw (failed as PromiseRejectedResult).reason;
}

/** A failing (check, device) pair of a readiness check: the shape its `dutlab.reservation.not_ready` event carries. */
export type NotReady = WebhookEventMap["dutlab.reservation.not_ready"]["notReady"][number];

/** Poll the devices, evaluate the plan over them; throw a 422 naming every failure, or return. */
export async function checkReadiness(
  svc: Services,
  deviceIds: string[],
  opts: { planIdentifier: string; markOutOfService?: boolean; holder?: string; testbed?: string | null },
): Promise<void> {
  const plan = svc.registry.plan(opts.planIdentifier);
  if (!plan) throw problems.notFound(`No plan with identifier "${opts.planIdentifier}"`);
  await eachBounded(deviceIds, svc.config.DUT_POLL_CONCURRENCY, (id) => svc.poller.poll(id));
  const r = await runPreflight(svc.db.kysely, svc.registry, plan, new Date(), {
    selection: {
      deviceIds: new Set(deviceIds),
      checkIds: null,
      given: { devices: deviceIds, checks: null, tags: null },
    },
  });
  const failed: NotReady[] = r.checks.filter((c) => c.status !== "pass").map((c) => ({
    checkId: c.checkId,
    deviceId: c.deviceId,
    hostname: c.deviceHostname,
    status: c.status,
    detail: c.detail,
    snapshotId: c.evidence?.snapshotId ?? null,
  }));
  if (!failed.length) return;
  const marked: string[] = [];
  if (opts.markOutOfService) {
    for (const id of new Set(failed.map((f) => f.deviceId))) {
      const row = await svc.devices.get(id);
      const evidence = failed.filter((f) => f.deviceId === id)
        .map((f) =>
          `${f.checkId} ${f.status}: ${f.detail}${f.snapshotId ? ` (snapshot ${f.snapshotId})` : ""}`
        );
      const note = `out of service since ${new Date().toISOString()} (readiness for ${plan.identifier}): ` +
        evidence.join("; ");
      await svc.devices.update(id, {
        enabled: false,
        notes: `${row.notes ? `${row.notes}\n` : ""}${note}`.slice(-4000),
      });
      await svc.events.publish("device.changed", { deviceId: id, hostname: row.hostname, change: "updated" });
      marked.push(row.hostname);
    }
  }
  await svc.db.kysely.transaction().execute((tx) =>
    reservationNotReady(tx, {
      holder: opts.holder ?? "unknown",
      testbed: opts.testbed ?? null,
      planIdentifier: plan.identifier,
      deviceIds,
      notReady: failed,
      markedOutOfService: marked,
    })
  );
  const each = failed.slice(0, 5).map((f) => `${f.checkId} ${f.status} on ${f.hostname}: ${f.detail}`);
  if (failed.length > 5) each.push(`${failed.length - 5} more`);
  throw new HttpProblem(
    422,
    "not-ready",
    "Not ready",
    `Nothing reserved: ${each.join("; ")}${
      marked.length ? `; marked out of service: ${marked.join(", ")}` : ""
    }`,
    {
      notReady: failed,
      markedOutOfService: marked,
      errors: failed.map((f) => ({ field: f.hostname, message: `${f.checkId} ${f.status}: ${f.detail}` })),
    },
  );
}
