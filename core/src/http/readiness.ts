/**
 * Readiness at reserving time (issue 52, docs/reservations.md "Readiness"): the devices are polled now (a
 * fresh snapshot each), then the plan's pre-flight is evaluated over them alone. Any check that does not
 * pass on a device (fail, error, or skipped for want of a snapshot) refuses the reservation before anything
 * is granted, naming each check and device; with `markOutOfService` each failing device is disabled and the
 * evidence is put in its notes, so a broken device is never hidden inside a held reservation.
 *
 * @module
 */
import type { Services } from "../runtime/services.ts";
import { runPreflight } from "../preflight/engine.ts";
import { HttpProblem, problems } from "./problem.ts";

/** A failing (check, device) pair of a readiness check. */
export interface NotReady {
  checkId: string;
  deviceId: string;
  hostname: string;
  status: string;
  detail: string;
  snapshotId: string | null;
}

/** Poll the devices, evaluate the plan over them; throw a 422 naming every failure, or return. */
export async function checkReadiness(
  svc: Services,
  deviceIds: string[],
  opts: { planIdentifier: string; markOutOfService?: boolean },
): Promise<void> {
  const plan = svc.registry.plan(opts.planIdentifier);
  if (!plan) throw problems.notFound(`No plan with identifier "${opts.planIdentifier}"`);
  for (const id of deviceIds) await svc.poller.poll(id);
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
