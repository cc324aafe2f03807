/**
 * For fault tests against a `serve` child process (`ServeProcess` in core/harness/serve.ts): a load generator
 * whose requests each have a time limit, and a /readyz sampler.
 */
import { TEST_ADMIN_TOKEN } from "./app.ts";

export interface Outcome {
  path: string;
  start: number;
  end: number;
  status: number | "timeout" | "network";
  type?: string;
  retryAfter?: string | null;
}

/** GET/PATCH load on the API until stopped; every request is cut off after `limitMs`. */
export function startLoad(base: string, deviceIds: string[], opts: { workers: number; limitMs: number }) {
  const outcomes: Outcome[] = [];
  let running = true;
  const auth = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };
  const one = async (i: number) => {
    const id = deviceIds[i % deviceIds.length];
    const [path, init]: [string, RequestInit] = i % 3 === 0
      ? ["/api/admin/dut/devices", { headers: auth }]
      : i % 3 === 1
      ? [`/api/admin/dut/snapshots?deviceId=${id}&limit=5`, { headers: auth }]
      : [`/api/admin/dut/devices/${id}`, {
        method: "PATCH",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ notes: `load ${i}` }),
      }];
    const start = Date.now();
    try {
      const r = await fetch(base + path, { ...init, signal: AbortSignal.timeout(opts.limitMs) });
      const text = await r.text();
      const o: Outcome = {
        path,
        start,
        end: Date.now(),
        status: r.status,
        retryAfter: r.headers.get("retry-after"),
      };
      if (r.headers.get("content-type")?.startsWith("application/problem+json")) {
        o.type = JSON.parse(text).type;
      }
      outcomes.push(o);
    } catch (e) {
      const status = (e as Error).name === "TimeoutError" ? "timeout" : "network";
      outcomes.push({ path, start, end: Date.now(), status });
      if (status === "network") await new Promise((r) => setTimeout(r, 50));
    }
  };
  const loops = Array.from({ length: opts.workers }, async (_, w) => {
    for (let i = w; running; i += opts.workers) {
      await one(i);
      await new Promise((r) => setTimeout(r, 20)); // a busy client, not a flood: the machine is shared
    }
  });
  return {
    outcomes,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** /readyz at `base()` (a service's base URL may change until it is ready) sampled every `everyMs` until stopped. */
export function sampleReadyz(base: () => string, everyMs = 100) {
  const samples: Outcome[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const start = Date.now();
      try {
        const r = await fetch(`${base()}/readyz`, { signal: AbortSignal.timeout(15_000) });
        await r.body?.cancel();
        samples.push({ path: "/readyz", start, end: Date.now(), status: r.status });
      } catch (e) {
        samples.push({
          path: "/readyz",
          start,
          end: Date.now(),
          status: (e as Error).name === "TimeoutError" ? "timeout" : "network",
        });
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    samples,
    async stop() {
      running = false;
      await loop;
    },
  };
}
