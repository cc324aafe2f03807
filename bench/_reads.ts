/**
 * The snapshot reads of issue 34 point 3, as the api and blackbox scenarios load them: the endpoints' names
 * (the figures' names, so that runs pair in `--compare`), one device and label's listing, an endpoint warmed
 * and then loaded by autocannon, and the ratio of each snapshot listing's requests/s to the paged device list's.
 *
 * @module
 */
import { type Autocannon, autocannon, type Figure, round, TOKEN } from "./_util.ts";

/** The unfiltered snapshot listing (the latest 100, payloads included). */
export const LATEST = "GET /api/admin/dut/snapshots (unfiltered: latest 100)";
/** The snapshots of one device and label. */
export const ONE = "GET /api/admin/dut/snapshots?deviceId=…&endpointLabel=… (one device and label)";

/** The listing of one device and label: those of the newest snapshot's. */
export async function oneDevicePath(base: string, client?: Deno.HttpClient): Promise<string> {
  const r = await fetch(`${base}/api/admin/dut/snapshots?limit=1`, {
    headers: { authorization: `Bearer ${TOKEN}` },
    client,
  });
  const s = (await r.json()).snapshots[0] as { deviceId: string; endpointLabel: string };
  return `/api/admin/dut/snapshots?deviceId=${s.deviceId}&endpointLabel=${
    encodeURIComponent(s.endpointLabel)
  }`;
}

/**
 * `url` fetched once (its size; anything but a 200 throws), ten more times to warm it, then loaded by
 * autocannon for `seconds` at `connections`.
 */
export async function loadRead(
  url: string,
  seconds: number,
  connections: number,
  client?: Deno.HttpClient,
): Promise<{ ac: Autocannon; command: string; bytes: number }> {
  const get = () => fetch(url, { headers: { authorization: `Bearer ${TOKEN}` }, client });
  const first = await get();
  const bytes = (await first.arrayBuffer()).byteLength;
  if (first.status !== 200) throw new Error(`${new URL(url).pathname} answered ${first.status}`);
  for (let k = 0; k < 10; k++) await (await get()).arrayBuffer();
  return { ...await autocannon(url, seconds, connections), bytes };
}

/** What an autocannon run counted beside its rates: the figures' `params.measured`. */
export function counted(ac: Autocannon) {
  return { requests: ac.requests.total, non2xx: ac.non2xx, errors: ac.errors, timeouts: ac.timeouts };
}

/**
 * Each of `reads` (endpoint name, short name) that was loaded, as its requests/s ÷ the paged device list's
 * (`paged`) in this run: issue 34's target ≥ 0.3 with a p99 ≤ 100 ms. `params` and `measured` go into every
 * figure (`measured` beside the ratio's inputs); `log` gets one line per ratio.
 */
export function readRatios(opts: {
  scenario: string;
  rps: Map<string, { value: number; p99: number }>;
  paged: string;
  reads: ReadonlyArray<readonly [string, string]>;
  params: Record<string, unknown>;
  measured?: Record<string, unknown>;
  command: string;
  log: (line: string) => void;
}): Figure[] {
  const paged = opts.rps.get(opts.paged);
  if (!paged) return [];
  return opts.reads.flatMap(([name, short]) => {
    const r = opts.rps.get(name);
    if (!r) return [];
    const value = r.value / paged.value;
    opts.log(`${short} ÷ paged device list: ${round(value, 3)} (p99 ${r.p99} ms)`);
    return [{
      scenario: opts.scenario,
      name: `snapshots, ${short} ÷ paged device list, requests/s`,
      value: Math.round(value * 1000) / 1000,
      unit: "ratio",
      params: {
        ...opts.params,
        measured: {
          snapshotsReqPerS: round(r.value),
          pagedReqPerS: round(paged.value),
          p99: r.p99,
          ...opts.measured,
        },
      },
      command: opts.command,
      target: ">= 0.3, p99 <= 100 ms",
      pass: value >= 0.3 && r.p99 <= 100,
    }];
  });
}
