/**
 * A `deno task serve` child process for fault tests: JSON logs on stderr collected, liveness tracked, and
 * a load generator whose requests each have a time limit.
 */
import {
  childEnv,
  TEST_ADMIN_TOKEN,
  TEST_CRED_KEY,
  TEST_PDF_CERT,
  TEST_PDF_KEY,
  TEST_SIGNING_KEY,
} from "@dutlab/core/testing";

const ROOT = new URL("..", import.meta.url);

export interface LogLine {
  "@timestamp": string;
  level: string;
  message: string;
  properties: Record<string, unknown>;
}

/** A port on loopback that was free a moment ago. */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/**
 * `deno run -A server.ts` (what `deno task serve` runs) on `databaseUrl` (null: embedded PGlite in the
 * `DUT_DATA_DIR` that `env` gives), inheriting the environment.
 */
export class ServeProcess {
  readonly lines: LogLine[] = [];
  readonly port = freePort();
  readonly base = `http://127.0.0.1:${this.port}`;
  readonly child: Deno.ChildProcess;
  exited: Deno.CommandStatus | null = null;
  #reading: Promise<void>;

  constructor(databaseUrl: string | null, env: Record<string, string> = {}) {
    this.child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "server.ts"],
      cwd: ROOT,
      // The inherited environment minus the service's own settings, which this test controls.
      clearEnv: true,
      env: childEnv({
        ...(databaseUrl === null ? {} : { DATABASE_URL: databaseUrl }),
        ADMIN_TOKEN: TEST_ADMIN_TOKEN,
        DUT_CRED_ENC_KEY: TEST_CRED_KEY,
        DUT_REPORT_SIGNING_KEY: TEST_SIGNING_KEY,
        DUT_PDF_SIGNING_CERT: TEST_PDF_CERT,
        DUT_PDF_SIGNING_KEY: TEST_PDF_KEY,
        PORT: String(this.port),
        HOST: "127.0.0.1",
        DUT_LOG_FORMAT: "json",
        DUT_LOG_LEVEL: "debug",
        DUT_SHUTDOWN_GRACE_SECONDS: "5",
        ...env,
      }),
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    this.child.status.then((s) => this.exited = s);
    const stderr = this.child.stderr;
    this.#reading = (async () => {
      let buf = "";
      for await (const chunk of stderr.pipeThrough(new TextDecoderStream())) {
        buf += chunk;
        let nl;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          try {
            this.lines.push(JSON.parse(line));
          } catch {
            this.lines.push({
              "@timestamp": new Date().toISOString(),
              level: "RAW",
              message: line,
              properties: {},
            });
          }
        }
      }
    })();
  }

  log(): string {
    return this.lines.map((l) => `${l["@timestamp"]} ${l.level} ${l.message}`).join("\n");
  }

  /** Log lines matching `re` logged after `after` (ms since the epoch). */
  count(re: RegExp, after = 0): number {
    return this.lines.filter((l) => re.test(l.message) && Date.parse(l["@timestamp"]) > after).length;
  }

  async stop(): Promise<Deno.CommandStatus> {
    try {
      this.child.kill("SIGTERM");
    } catch { /* already gone */ }
    const s = await this.child.status;
    await this.#reading;
    return s;
  }
}

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

/** /readyz sampled every `everyMs` until stopped. */
export function sampleReadyz(base: string, everyMs = 100) {
  const samples: Outcome[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const start = Date.now();
      try {
        const r = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(15_000) });
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
