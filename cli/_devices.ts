import type { components } from "./generated/dutlab-api.ts";
import type { Command, Ctx } from "./_command.ts";
import { ok, problemLine, refused, type Service } from "./_client.ts";
import { CliError, EXIT } from "./_exit.ts";
import { bounded, BoundedProgress, out, printJson, readIn, readJson, SCREENFUL, table } from "./_output.ts";

type Device = components["schemas"]["Device"];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Every device (the list without `limit` answers all of them). */
async function allDevices(svc: Service): Promise<Device[]> {
  return ok(await svc.api.GET("/api/admin/dut/devices", {})).devices;
}

/** A device by id or hostname (exit 4 when none has it). */
export async function resolveDevice(svc: Service, ref: string): Promise<Device> {
  if (UUID.test(ref)) {
    return ok(await svc.api.GET("/api/admin/dut/devices/{id}", { params: { path: { id: ref } } }));
  }
  const d = (await allDevices(svc)).find((x) => x.hostname === ref);
  if (!d) throw new CliError(`No device with hostname ${JSON.stringify(ref)}`, EXIT.notFound);
  return d;
}

/** Devices by id or hostname, in the order given (one list read for all the hostnames). */
async function resolveDevices(svc: Service, refs: string[]): Promise<Device[]> {
  if (refs.every((r) => UUID.test(r))) return await Promise.all(refs.map((r) => resolveDevice(svc, r)));
  const byHost = new Map((await allDevices(svc)).map((d) => [d.hostname, d]));
  const byId = new Map([...byHost.values()].map((d) => [d.id.toLowerCase(), d]));
  return refs.map((r) => {
    const d = byId.get(r.toLowerCase()) ?? byHost.get(r);
    if (!d) {
      throw new CliError(
        `No device with ${UUID.test(r) ? "id" : "hostname"} ${JSON.stringify(r)}`,
        EXIT.notFound,
      );
    }
    return d;
  });
}

const deviceRow = (d: Device) => [
  d.hostname,
  d.vendor,
  d.deviceRole ?? "-",
  d.enabled ? "yes" : "no",
  d.lastPollStatus ?? "never",
  d.lastPollAt ?? "-",
  d.reservation ? `${d.reservation.holder} until ${d.reservation.until}` : "-",
  d.id,
];
const DEVICE_HEADERS = ["hostname", "vendor", "role", "enabled", "status", "last poll", "reserved", "id"];

/**
 * The device table: past a screenful, a summary line first (devices per last poll status), then a screenful
 * of rows and how many more (`--verbose` prints all, `--json` the data; issue 49).
 */
export function deviceListText(devices: Device[], paint: Ctx["paint"], verbose: boolean): string {
  const all = table(DEVICE_HEADERS, devices.map(deviceRow), paint, [4]).split("\n");
  if (verbose || devices.length <= SCREENFUL) return all.join("\n");
  const counts = new Map<string, number>();
  for (const d of devices) {
    counts.set(d.lastPollStatus ?? "never polled", (counts.get(d.lastPollStatus ?? "never polled") ?? 0) + 1);
  }
  const summary = `${devices.length} devices: ${[...counts].map(([s, n]) => `${n} ${s}`).join(", ")}`;
  return [summary, all[0]!, ...bounded(all.slice(1), false, "device(s)")].join("\n");
}

function printDevices(ctx: Ctx, devices: Device[]) {
  out(deviceListText(devices, ctx.paint, ctx.verbose));
}

const str = (v: unknown) => typeof v === "string" ? v : undefined;
const list = (v: unknown) => Array.isArray(v) ? v as string[] : undefined;

/** A whole number flag, or a usage error naming it. */
function int(ctx: Ctx, name: string): number | undefined {
  const v = str(ctx.flags[name]);
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw ctx.usage(`--${name} must be a whole number, not ${JSON.stringify(v)}`);
  return Number(v);
}

/** The device members given as flags (`devices add` and `devices set`). */
async function deviceFields(ctx: Ctx): Promise<Record<string, unknown>> {
  const f = ctx.flags;
  const body: Record<string, unknown> = {};
  if (str(f.hostname) !== undefined) body.hostname = f.hostname;
  if (str(f.vendor) !== undefined) body.vendor = f.vendor;
  if (str(f.role) !== undefined) body.deviceRole = f.role;
  if (str(f["base-url"]) !== undefined) body.baseUrl = f["base-url"];
  if (str(f.username) !== undefined) body.username = f.username;
  const pw = str(f["password-file"]);
  if (pw !== undefined) body.password = (await readIn(pw, "--password-file")).replace(/\r?\n$/, "");
  if (str(f["tls-verify-mode"]) !== undefined) body.tlsVerifyMode = f["tls-verify-mode"];
  const interval = int(ctx, "poll-interval");
  if (interval !== undefined) body.pollIntervalSeconds = interval;
  if (str(f.notes) !== undefined) body.notes = f.notes;
  if (f.disabled === true) body.enabled = false;
  if (f.enabled === true) body.enabled = true;
  // Device tags (issue 29 point 3) are the service's from branch h29s on: sent as `tags`.
  if (list(f.tag) !== undefined) body.tags = f.tag;
  return body;
}

const FIELD_FLAGS = {
  role: {
    type: "string",
    value: "ROLE",
    description: "deviceRole (default: the vendor adapter's first role)",
  },
  "base-url": { type: "string", value: "URL", description: "The device's https:// management URL" },
  username: { type: "string", value: "NAME", description: "Management API user" },
  "password-file": {
    type: "string",
    value: "FILE",
    description: "Read the password from FILE (`-`: stdin); never on the command line",
  },
  "tls-verify-mode": { type: "string", value: "MODE", description: "strict, self-signed or insecure" },
  "poll-interval": { type: "string", value: "SECONDS", description: "pollIntervalSeconds (30-86400)" },
  notes: { type: "string", value: "TEXT", description: "Free text" },
  tag: { type: "string", multiple: true, value: "TAG", description: "Device tag (sent as `tags`)" },
} as const;

export const deviceCommands: Command[] = [
  {
    path: ["devices", "list"],
    summary: "List the registered devices",
    arity: [0, 0],
    flags: {
      vendor: { type: "string", value: "KEY", description: "Only devices of this vendor key" },
      role: { type: "string", value: "ROLE", description: "Only devices with this role" },
      status: {
        type: "string",
        value: "STATUS",
        description: "Only devices whose last poll ended so (or never)",
      },
      q: { type: "string", value: "TEXT", description: "Substring of the hostname or the notes" },
      tag: {
        type: "string",
        multiple: true,
        value: "TAG",
        description: "Only devices with this tag (`?tag=`)",
      },
    },
    async run(ctx) {
      const f = ctx.flags;
      const query: Record<string, string | string[]> = {};
      if (str(f.vendor)) query.vendor = f.vendor as string;
      if (str(f.role)) query.role = f.role as string;
      if (str(f.status)) query.lastPollStatus = f.status as string;
      if (str(f.q)) query.q = f.q as string;
      if (list(f.tag)) query.tag = f.tag as string[];
      const r = ok(await ctx.svc().api.GET("/api/admin/dut/devices", { params: { query: query as never } }));
      if (ctx.json) printJson(r);
      else printDevices(ctx, r.devices);
      return EXIT.ok;
    },
  },
  {
    path: ["devices", "get"],
    summary: "Show one device",
    args: "<device>",
    arity: [1, 1],
    more: "<device> is a device id or a hostname.",
    async run(ctx) {
      const d = await resolveDevice(ctx.svc(), ctx.args[0]!);
      if (ctx.json) printJson(d);
      else {
        const rows = Object.entries(d).map(([k, v]) => [k, v === null ? "-" : String(v)]);
        out(table(["field", "value"], rows, ctx.paint, []));
      }
      return EXIT.ok;
    },
  },
  {
    path: ["devices", "add"],
    summary: "Register a device",
    arity: [0, 0],
    flags: {
      hostname: { type: "string", value: "NAME", description: "Unique hostname (required)" },
      vendor: { type: "string", value: "KEY", description: "Vendor key with an enabled adapter (required)" },
      ...FIELD_FLAGS,
      disabled: { type: "boolean", description: "Register it disabled (not polled)" },
    },
    more: "Required: --hostname, --vendor, --base-url, --username, --password-file.",
    async run(ctx) {
      const body = await deviceFields(ctx);
      const r = ok(await ctx.svc().api.POST("/api/admin/dut/devices", { body: body as never }));
      if (ctx.json) printJson(r);
      else out(`registered ${body.hostname} ${r.deviceId}`);
      return EXIT.ok;
    },
  },
  {
    path: ["devices", "apply"],
    summary: "Register devices from a file, or update those already registered (by hostname)",
    arity: [0, 0],
    flags: {
      file: {
        type: "string",
        short: "f",
        value: "FILE",
        description: "JSON array of devices with the members of POST /api/admin/dut/devices (`-`: stdin)",
      },
    },
    more: "Like kubectl apply: a device whose hostname is registered is updated (PATCH, vendor left out),\n" +
      "any other is registered. One line per device; exit 1 when any was refused.",
    async run(ctx) {
      const file = str(ctx.flags.file);
      if (file === undefined) throw ctx.usage("Missing --file");
      const items = await readJson(file, "--file");
      if (
        !Array.isArray(items) ||
        items.some((x) => !x || typeof x !== "object" || typeof x.hostname !== "string")
      ) {
        throw ctx.usage("--file must hold a JSON array of objects, each with a hostname");
      }
      const svc = ctx.svc();
      const known = new Map((await allDevices(svc)).map((d) => [d.hostname, d]));
      let refusedCount = 0;
      const results: unknown[] = [];
      for (const [i, item] of items.entries()) {
        const head = `[${i + 1}/${items.length}] ${item.hostname}`;
        const found = known.get(item.hostname);
        const { vendor: _vendor, ...patch } = item;
        const r = found
          ? await svc.api.PATCH("/api/admin/dut/devices/{id}", {
            params: { path: { id: found.id } },
            body: patch as never,
          })
          : await svc.api.POST("/api/admin/dut/devices", { body: item as never });
        const done = found ? "updated" : "registered";
        if (r.response.ok) {
          const id = found?.id ?? (r.data as { deviceId: string }).deviceId;
          results.push({ hostname: item.hostname, result: done, deviceId: id });
          if (!ctx.json) out(`${head}  ${ctx.paint("green", done)}  ${id}`);
        } else {
          refusedCount++;
          const line = problemLine(r.response.status, r.error);
          results.push({ hostname: item.hostname, result: "refused", problem: r.error });
          if (!ctx.json) out(`${head}  ${ctx.paint("red", "refused")}  ${line}`);
        }
      }
      if (ctx.json) printJson(results);
      else out(`${items.length} devices: ${items.length - refusedCount} applied, ${refusedCount} refused`);
      return refusedCount ? EXIT.failed : EXIT.ok;
    },
  },
  {
    path: ["devices", "set"],
    summary: "Change a device (only the given fields)",
    args: "<device>",
    arity: [1, 1],
    flags: {
      hostname: { type: "string", value: "NAME", description: "New hostname" },
      ...FIELD_FLAGS,
      enabled: { type: "boolean", description: "Enable polling" },
      disabled: { type: "boolean", description: "Disable polling" },
      "clear-pin": { type: "boolean", description: "Forget the pinned certificate" },
    },
    async run(ctx) {
      const body = await deviceFields(ctx);
      if (ctx.flags["clear-pin"] === true) body.pinnedCertSha256 = null;
      if (ctx.flags.enabled === true && ctx.flags.disabled === true) {
        throw ctx.usage("--enabled and --disabled exclude each other");
      }
      if (Object.keys(body).length === 0) throw ctx.usage("Nothing to change: give at least one field flag");
      const svc = ctx.svc();
      const d = await resolveDevice(svc, ctx.args[0]!);
      const r = ok(
        await svc.api.PATCH("/api/admin/dut/devices/{id}", {
          params: { path: { id: d.id } },
          body: body as never,
        }),
      );
      if (ctx.json) printJson(r);
      else printDevices(ctx, [r]);
      return EXIT.ok;
    },
  },
  {
    path: ["devices", "rm"],
    summary: "Delete a device and all its snapshots",
    args: "<device>",
    arity: [1, 1],
    more: "The device's snapshots are deleted with it. To keep them, stop polling it instead:\n" +
      "dutlab devices set <device> --disabled.",
    async run(ctx) {
      const svc = ctx.svc();
      const d = await resolveDevice(svc, ctx.args[0]!);
      const r = ok(await svc.api.DELETE("/api/admin/dut/devices/{id}", { params: { path: { id: d.id } } }));
      if (ctx.json) printJson(r);
      else out(`deleted ${d.hostname} ${d.id}`);
      return EXIT.ok;
    },
  },
  {
    path: ["devices", "test"],
    summary: "Test the connection to a device (log in, read one endpoint; nothing stored)",
    args: "<device>",
    arity: [1, 1],
    more: "Exit 1 when the test failed.",
    async run(ctx) {
      const svc = ctx.svc();
      const d = await resolveDevice(svc, ctx.args[0]!);
      const r = ok(
        await svc.api.POST("/api/admin/dut/devices/{id}/test", { params: { path: { id: d.id } } }),
      );
      if (ctx.json) printJson(r);
      else {
        out(table(
          ["device", "ok", "latency ms", "detail"],
          [[
            d.hostname,
            String(r.ok),
            String(r.latencyMs),
            r.detail,
          ]],
          ctx.paint,
          [1],
        ));
      }
      return r.ok ? EXIT.ok : EXIT.failed;
    },
  },
  {
    path: ["snapshot"],
    summary:
      "Snapshot devices now (every label of each): progress lines (past 20 devices the failures) and a summary",
    args: "<device>... | --all",
    arity: [0, Infinity],
    flags: { all: { type: "boolean", description: "Every enabled device" } },
    more: "Exit 1 when any device's poll did not end `ok`. With --json, progress goes to stderr.",
    async run(ctx) {
      const svc = ctx.svc();
      const all = ctx.flags.all === true;
      if (all === ctx.args.length > 0) throw ctx.usage("Give device ids or hostnames, or --all (not both)");
      const devices = all
        ? (await allDevices(svc)).filter((d) => d.enabled)
        : await resolveDevices(svc, ctx.args);
      const results: Array<{ hostname: string; id: string } & Record<string, unknown>> = [];
      const progress = new BoundedProgress(
        devices.length,
        ctx.verbose,
        ctx.json ? (s: string) => Deno.stderr.writeSync(new TextEncoder().encode(s + "\n")) : out,
      );
      let failed = 0;
      for (const [i, d] of devices.entries()) {
        const head = `[${i + 1}/${devices.length}] ${d.hostname}`;
        const r = await svc.api.POST("/api/admin/dut/devices/{id}/snapshot", {
          params: { path: { id: d.id } },
        });
        if (!r.response.ok) {
          if (r.response.status === 401 || r.response.status === 403) refused(r.response.status, r.error);
          failed++;
          results.push({ hostname: d.hostname, id: d.id, ok: false, problem: r.error });
          progress.line(
            `${head}  ${ctx.paint("red", "refused")}  ${problemLine(r.response.status, r.error)}`,
            true,
          );
          continue;
        }
        const s = r.data!;
        if (s.lastPollStatus !== "ok") failed++;
        results.push({ hostname: d.hostname, id: d.id, ...s });
        const status = ctx.paint(s.lastPollStatus === "ok" ? "green" : "red", s.lastPollStatus);
        progress.line(
          `${head}  ${status}${s.lastPollError ? `  ${s.lastPollError.replace(/\s+/g, " ")}` : ""}`,
          s.lastPollStatus !== "ok",
        );
      }
      progress.end();
      const summary = `${devices.length} devices: ${devices.length - failed} ok, ${failed} failed`;
      if (ctx.json) printJson({ devices: results, ok: devices.length - failed, failed });
      else out(summary);
      return failed ? EXIT.failed : EXIT.ok;
    },
  },
];
