/**
 * The idle-memory half of the footprint scenario (issue 34 point 5): `deno run -A server.ts` on an empty
 * PGlite data directory, `n` farm devices registered through the API, `polls` manual snapshots of each
 * (`POST /api/admin/dut/devices/{id}/snapshot`, 8 at a time, as a lab's first hour would), then the server
 * left idle for 15 s and its resident memory read, with the peak (VmHWM) beside it. The log gets the largest
 * resident mappings and the V8 heap figures of `/metrics`, to say where the bytes are.
 *
 * @module
 */
import { startFarm } from "./_farm_proc.ts";
import {
  commandLine,
  type Figure,
  freePort,
  round,
  startServer,
  statusMiB,
  stopChild,
  TOKEN,
  waitFor200,
} from "./_util.ts";
import type { Ctx } from "./main.ts";

/** One device of the farm, as its JSON line gives it. */
export interface FarmDevice {
  i: number;
  vendor: string;
  url: string;
  username: string;
  password: string;
}

/** The process's eight largest resident mappings (MiB resident of MiB mapped, and what), for the log. */
export function largestMappings(pid: number): string[] {
  const maps: Array<{ name: string; rss: number; size: number }> = [];
  for (const line of Deno.readTextFileSync(`/proc/${pid}/smaps`).split("\n")) {
    const m = line.match(/^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/);
    if (m) {
      maps.push({
        name: `${m[4] || "[anon]"} ${m[3]}`,
        rss: 0,
        size: parseInt(m[2]!, 16) - parseInt(m[1]!, 16),
      });
    }
    const r = line.match(/^Rss:\s+(\d+) kB/);
    if (r && maps.length) maps[maps.length - 1]!.rss = Number(r[1]) * 1024;
  }
  const mib = (b: number) => round(b / 2 ** 20);
  return maps.sort((a, b) => b.rss - a.rss).slice(0, 8).map((m) =>
    `${mib(m.rss)} of ${mib(m.size)} ${m.name}`
  );
}

/** Run `work` over `items`, `width` at a time. */
export async function pool<T>(items: T[], width: number, work: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await work(items[next++]!);
  }));
}

/** Register the farm's devices (its JSON lines) through `POST /api/admin/dut/devices`, 8 at a time; their ids. */
export async function registerFarmDevices(base: string, farmDevices: string[]): Promise<string[]> {
  const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
  const devices = farmDevices.map((l) => JSON.parse(l) as FarmDevice);
  const ids: string[] = [];
  await pool(devices, 8, async (d) => {
    const r = await fetch(`${base}/api/admin/dut/devices`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        hostname: `bench-${d.i}`,
        vendor: d.vendor,
        baseUrl: d.url,
        username: d.username,
        password: d.password,
        tlsVerifyMode: "self-signed",
      }),
    });
    const body = await r.json();
    if (r.status !== 201) throw new Error(`register ${d.i}: ${r.status} ${JSON.stringify(body)}`);
    ids.push(body.deviceId);
  });
  return ids;
}

/**
 * `polls` rounds of manual snapshots of every device (`POST /api/admin/dut/devices/{id}/snapshot`, 8 at a
 * time); resolves to the number of answers that were not 2xx.
 */
export async function manualPolls(ctx: Ctx, base: string, ids: string[], polls: number): Promise<number> {
  const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
  let failed = 0;
  for (let k = 0; k < polls; k++) {
    await pool(ids, 8, async (id) => {
      const r = await fetch(`${base}/api/admin/dut/devices/${id}/snapshot`, { method: "POST", headers });
      await r.body?.cancel();
      if (r.status >= 300) failed++;
    });
    ctx.log(`poll round ${k + 1} of ${ids.length} devices done (${failed} failed so far)`);
  }
  return failed;
}

export async function idleAfterPolls(ctx: Ctx, n: number, polls: number): Promise<Figure[]> {
  const farm = await startFarm(ctx, n);
  const dir = await Deno.makeTempDir({ prefix: "dutlab-bench-idle-" });
  const port = freePort();
  const env = { DUT_DATA_DIR: dir, HOST: "127.0.0.1", PORT: String(port), ADMIN_TOKEN: TOKEN };
  const base = `http://127.0.0.1:${port}`;
  const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
  const { child, logs } = startServer(env, `${ctx.tmp}/server-idle.log`);
  try {
    await waitFor200(`${base}/readyz`, performance.now(), 120_000, child);
    const ids = await registerFarmDevices(base, farm.devices);
    const failed = await manualPolls(ctx, base, ids, polls);
    // Idle for 15 s: three periods of the service's idle reclaimer (DUT_IDLE_RECLAIM_SECONDS, default 5).
    await new Promise((r) => setTimeout(r, 15_000));
    const rss = statusMiB("VmRSS", child.pid);
    ctx.log(`largest resident mappings: ${largestMappings(child.pid).join("; ")}`);
    const metrics = await (await fetch(`${base}/metrics`, { headers })).text();
    ctx.log(
      metrics.split("\n").filter((l) => /^(nodejs_heap_size|nodejs_external|process_resident)/.test(l)).join(
        "; ",
      ),
    );
    const hwm = statusMiB("VmHWM", child.pid);
    const note = commandLine("deno", ["run", "-A", "server.ts"], {
      ...env,
      DUT_DATA_DIR: "<empty temp dir>",
    });
    const common = {
      scenario: "footprint",
      command: ctx.command,
      note,
      params: { devices: n, polls, failed },
    };
    return [
      {
        ...common,
        name: `idle server RSS after ${n} devices × ${polls} manual polls (PGlite)`,
        value: round(rss),
        unit: "MiB",
      },
      {
        ...common,
        name: `peak server RSS during ${n} devices × ${polls} manual polls (PGlite)`,
        value: round(hwm),
        unit: "MiB",
      },
    ];
  } finally {
    await stopChild(child, 15_000);
    await logs;
    await farm.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
