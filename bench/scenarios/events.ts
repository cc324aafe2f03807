/**
 * Issue 21 point 6, the live-event target: "an SSE stream with 100 connected clients adds <= 5 % CPU to a
 * polling service". A real polling service (`server.ts` with its poll worker, PostgreSQL) polls a farm of
 * HTTPS devices (bench/_farm.ts: each replays a real adapter's exchange) every 30 s; the devices are
 * registered over one interval so their polls spread evenly, as a lab's do. Server CPU is measured over whole
 * poll intervals without a client, then with 100 clients following `GET /api/events`. Every client must
 * receive every event of the window, once (checked against the events table).
 *
 * @module
 */
import {
  cpuSeconds,
  type Figure,
  freePort,
  PG_URL,
  round,
  serverEnv,
  startServer,
  stopChild,
  TOKEN,
  waitFor200,
} from "../_util.ts";
import { freshDb } from "../_db.ts";
import { startFarm } from "../_farm_proc.ts";
import { followEvents } from "../_sse.ts";
import type { Ctx } from "../main.ts";

const INTERVAL_SECONDS = 30;
const CLIENTS = 100;

interface FarmDevice {
  i: number;
  vendor: string;
  url: string;
  username: string;
  password: string;
}

export async function run(ctx: Ctx): Promise<Figure[]> {
  const n = ctx.quick ? 150 : 300;
  const intervals = ctx.quick ? 1 : 2;
  const farm = await startFarm(ctx, n);
  const db = await freshDb("postgres");
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = serverEnv(port, {
    DATABASE_URL: `${PG_URL}?search_path=${db.where}`,
    DUT_POLL_SCAN_SECONDS: "1",
  });
  const flushMs = Deno.env.get("DUT_EVENTS_FLUSH_MS") ?? "100 (default)";
  const { child: server, logs } = startServer(env, `${ctx.tmp}/server.log`);
  const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
  const figures: Figure[] = [];
  try {
    await waitFor200(`${base}/readyz`, performance.now(), 60_000, server);
    // Register the devices over one interval: their polls then stay spread over every later interval.
    const devices = farm.devices.map((l) => JSON.parse(l) as FarmDevice);
    ctx.log(`registering ${n} farm devices over ${INTERVAL_SECONDS} s (poll interval ${INTERVAL_SECONDS} s)`);
    const t0 = performance.now();
    for (const [k, d] of devices.entries()) {
      const r = await fetch(`${base}/api/admin/dut/devices`, {
        method: "POST",
        headers,
        body: JSON.stringify({
          hostname: `ev-${d.vendor}-${String(d.i).padStart(4, "0")}`,
          vendor: d.vendor,
          baseUrl: d.url,
          username: d.username,
          password: d.password,
          tlsVerifyMode: "self-signed",
          pollIntervalSeconds: INTERVAL_SECONDS,
        }),
      });
      if (r.status !== 201) throw new Error(`register ${d.url}: ${r.status} ${await r.text()}`);
      await r.body?.cancel();
      const due = t0 + ((k + 1) * INTERVAL_SECONDS * 1000) / n;
      await new Promise((r) => setTimeout(r, Math.max(0, due - performance.now())));
    }
    // One more interval: every device polled once (certificates pinned), the database warm.
    await new Promise((r) => setTimeout(r, INTERVAL_SECONDS * 1000));
    const maxId = async () =>
      Number((await db.raw!`select coalesce(max(id), 0)::text as id from events`)[0]!.id);
    const measure = async () => {
      const e0 = await maxId();
      const c0 = cpuSeconds(server.pid);
      const s0 = performance.now();
      await new Promise((r) => setTimeout(r, intervals * INTERVAL_SECONDS * 1000));
      const s = (performance.now() - s0) / 1000;
      const cpuPct = ((cpuSeconds(server.pid) - c0) / s) * 100;
      const e1 = await maxId();
      return { cpuPct, from: e0, to: e1, eventsPerSecond: (e1 - e0) / s };
    };
    ctx.log("measuring the polling service's CPU without clients");
    const without = await measure();
    ctx.log(
      `${round(without.cpuPct)} % CPU, ${
        round(without.eventsPerSecond)
      } events/s; connecting ${CLIENTS} clients`,
    );
    const abort = new AbortController();
    const clients = Array.from({ length: CLIENTS }, () => {
      const got = { ids: [] as number[] };
      const done = followEvents(base, abort.signal, (_, id) => {
        if (id !== null) got.ids.push(id);
      });
      return { got, done };
    });
    await new Promise((r) => setTimeout(r, 2000));
    const withClients = await measure();
    await new Promise((r) => setTimeout(r, 1000)); // the last flush window
    abort.abort();
    await Promise.race([Promise.all(clients.map((c) => c.done)), new Promise((r) => setTimeout(r, 10_000))]);
    // Every client must have every event of the measured window exactly once, in order.
    const expected = withClients.to - withClients.from;
    const bad = clients.filter(({ got }) => {
      const inWindow = got.ids.filter((id) => id > withClients.from && id <= withClients.to);
      const ordered = got.ids.every((id, i) => i === 0 || id > got.ids[i - 1]!);
      return inWindow.length !== expected || !ordered;
    }).length;
    const polls = await db.raw!`select count(*)::int as n from events where type = 'poll.finished'
      and id > ${withClients.from} and id <= ${withClients.to}`;
    const pollsPerSecond = polls[0]!.n / (intervals * INTERVAL_SECONDS);
    const added = withClients.cpuPct - without.cpuPct;
    ctx.log(
      `${round(without.cpuPct)} % CPU without clients, ${round(withClients.cpuPct)} % with ${CLIENTS} ` +
        `(+${round(added)} points, ${round((added / without.cpuPct) * 100)} % more; ` +
        `${round(withClients.eventsPerSecond)} events/s, ${round(pollsPerSecond)} polls/s; ` +
        `${bad} client(s) missed or repeated events)`,
    );
    if (bad > 0) throw new Error(`${bad} of ${CLIENTS} clients did not receive every event once, in order`);
    const params = {
      devices: n,
      pollIntervalSeconds: INTERVAL_SECONDS,
      windowSeconds: intervals * INTERVAL_SECONDS,
      pollsPerSecond: round(pollsPerSecond),
      eventsPerSecond: round(withClients.eventsPerSecond),
      clients: CLIENTS,
      eventsPerClient: expected,
      DUT_EVENTS_FLUSH_MS: flushMs,
    };
    const note = "server.ts polling a device farm (PostgreSQL); every client received every event once";
    const fig = (name: string, value: number, unit: string, target?: string, pass?: boolean): Figure => ({
      scenario: "events",
      name,
      value: round(value),
      unit,
      params,
      command: ctx.command,
      note,
      ...(target ? { target, pass } : {}),
    });
    figures.push(
      fig("polling service: server CPU, no client", without.cpuPct, "% of one core"),
      fig(
        `polling service: server CPU, ${CLIENTS} clients following /api/events`,
        withClients.cpuPct,
        "% of one core",
      ),
      fig(`polling service: CPU added by ${CLIENTS} SSE clients`, added, "% of one core", "<= 5", added <= 5),
      fig(
        `polling service: CPU added by ${CLIENTS} SSE clients, relative to the service's own`,
        (added / without.cpuPct) * 100,
        "%",
      ),
    );
  } finally {
    await stopChild(server, 15_000);
    await logs;
    await farm.stop();
    await db.close();
  }
  return figures;
}
