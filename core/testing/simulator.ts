import { type CertificateBundle, certificates } from "./certs.ts";

/** Options of {@link startSimulator}. */
export interface SimulatorOptions {
  /**
   * Answers every request that no injected fault answers first: the request, its body already read as text,
   * and the simulator (for its state and faults).
   */
  handler: (req: Request, body: string, sim: Simulator) => Response | Promise<Response>;
  /** Address to listen on; default `127.0.0.1`. */
  hostname?: string;
  /** Port to listen on; default 0 (a free port chosen by the system). */
  port?: number;
  /** Certificate to serve; a fresh self-signed one when omitted. */
  certificate?: CertificateBundle;
  /** Common name of the fresh self-signed certificate when `certificate` is omitted. */
  name?: string;
}

/**
 * An HTTPS device simulator on loopback: serves `handler` with its own certificate, records requests,
 * injects faults and rotates its certificate on the same port.
 */
export class Simulator implements AsyncDisposable {
  /** Every request received since start or the last {@link Simulator.clearLog}, oldest first, as the simulator saw it. */
  readonly requests: Array<{
    /** When the request arrived (`Date.now()`, ms since the epoch). */
    at: number;
    /** HTTP method, e.g. `GET`. */
    method: string;
    /** URL path, without the query. */
    path: string;
    /** Query parameters. */
    query: URLSearchParams;
    /** Request headers. */
    headers: Headers;
    /** Request body as text (empty when none). */
    body: string;
    /** `bearer`, `basic`, `cookie`, `x-auth-token` or `none`: how the request authenticated. */
    authStyle: "bearer" | "basic" | "cookie" | "x-auth-token" | "none";
  }> = [];
  /** Faults applied to every response; change the fields in place (all off at start). */
  readonly faults: {
    /** Added delay before answering, in ms. */
    latencyMs: number;
    /** When set, every request is answered with this status (e.g. 503) and an empty JSON body. */
    status: number | null;
    /** When true, requests never get an answer (until the simulator closes). */
    hang: boolean;
  } = { latencyMs: 0, status: null, hang: false };
  #server!: Deno.HttpServer<Deno.NetAddr>;
  #hangs = new Set<() => void>();
  #port = 0;
  #hostname: string;
  /** The certificate being served (changes with {@link Simulator.rotateCertificate}). */
  certificate!: CertificateBundle;

  private constructor(private opts: SimulatorOptions) {
    this.#hostname = opts.hostname ?? "127.0.0.1";
  }

  /** Start a simulator listening on `opts.port` (default: a free port). Same as {@link startSimulator}. */
  static async start(opts: SimulatorOptions): Promise<Simulator> {
    const sim = new Simulator(opts);
    sim.certificate = opts.certificate ?? await certificates.selfSigned({ commonName: opts.name });
    sim.#listen(opts.port ?? 0);
    return sim;
  }

  #listen(port: number) {
    this.#server = Deno.serve({
      hostname: this.#hostname,
      port,
      cert: this.certificate.certPem,
      key: this.certificate.keyPem,
      onListen: () => {},
      onError: (e) => Response.json({ error: String(e) }, { status: 500 }),
    }, (req) => this.#handle(req));
    this.#port = this.#server.addr.port;
  }

  async #handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const body = req.body ? await req.text() : "";
    const auth = req.headers.get("authorization") ?? "";
    this.requests.push({
      at: Date.now(),
      method: req.method,
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      body,
      authStyle: /^bearer /i.test(auth)
        ? "bearer"
        : /^basic /i.test(auth)
        ? "basic"
        : req.headers.has("x-auth-token")
        ? "x-auth-token"
        : req.headers.has("cookie")
        ? "cookie"
        : "none",
    });
    if (this.faults.hang) {
      await new Promise<void>((resolve) => this.#hangs.add(resolve));
      return new Response(null, { status: 503 });
    }
    if (this.faults.latencyMs > 0) await new Promise((r) => setTimeout(r, this.faults.latencyMs));
    if (this.faults.status !== null) return Response.json({}, { status: this.faults.status });
    return streamed(await this.opts.handler(req, body, this));
  }

  /** `https://127.0.0.1:<port>` */
  get url(): string {
    return `https://${this.#hostname}:${this.#port}`;
  }
  /** The port the simulator listens on. */
  get port(): number {
    return this.#port;
  }
  /** SHA-256 (hex) of the certificate being served. */
  get fingerprint(): string {
    return this.certificate.sha256;
  }

  /** Forget recorded requests. */
  clearLog(): void {
    this.requests.length = 0;
  }

  /** Serve a new certificate (fresh self-signed unless given) on the same port; returns its SHA-256. */
  async rotateCertificate(next?: CertificateBundle): Promise<string> {
    await this.relisten({
      certificate: next ?? await certificates.selfSigned({ commonName: this.opts.name }),
    });
    return this.fingerprint;
  }

  /**
   * Serve on `port` (0: any free port) with `certificate` (the current one when omitted), e.g. to keep a
   * simulator's address and certificate across restarts of the lab. Throws when the port is taken.
   */
  async relisten(opts: { port?: number; certificate?: CertificateBundle }): Promise<void> {
    this.#releaseHangs();
    if (this.#down === null) await this.#server.shutdown();
    if (opts.certificate) this.certificate = opts.certificate;
    const port = opts.port ?? this.#port;
    if (this.#down !== null) this.#down = port;
    else this.#listen(port);
  }

  /** Port kept while the simulated device is down (not listening); null while it is up. */
  #down: number | null = null;

  /** Whether the simulated device is down: its port refuses connections, as a powered-off device's does. */
  get down(): boolean {
    return this.#down !== null;
  }

  /** Take the simulated device down (stop listening) or bring it back up on the same port. */
  async setDown(down: boolean): Promise<void> {
    if (down === this.down) return;
    if (down) {
      this.#releaseHangs();
      this.#down = this.#port;
      await this.#server.shutdown();
    } else {
      const port = this.#down!;
      this.#down = null;
      this.#listen(port);
    }
  }

  #releaseHangs() {
    for (const r of this.#hangs) r();
    this.#hangs.clear();
  }

  /** Release hanging requests and stop listening. */
  async close(): Promise<void> {
    this.#releaseHangs();
    if (this.#down === null) await this.#server.shutdown();
  }

  /** Same as {@link Simulator.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * Re-send a buffered body as one stream chunk. Deno.serve over TLS writes a fixed-length answer's
 * head and body separately; with Nagle on the server and delayed ACKs on the client that costs ~40 ms
 * per response above a few hundred bytes. A streamed body avoids the stall.
 */
function streamed(res: Response): Response {
  if (!res.body || res.status === 204 || res.status === 304) return res;
  const body = res.body;
  const headers = new Headers(res.headers);
  headers.delete("content-length");
  return new Response(
    new ReadableStream({
      async start(ctrl) {
        const buf = new Uint8Array(await new Response(body).arrayBuffer());
        if (buf.length) ctrl.enqueue(buf);
        ctrl.close();
      },
    }),
    { status: res.status, statusText: res.statusText, headers },
  );
}

/** Start an HTTPS simulator on loopback with a fresh self-signed certificate. */
export function startSimulator(opts: SimulatorOptions): Promise<Simulator> {
  return Simulator.start(opts);
}

/**
 * What a vendor's simulator offers the lab (`tools/lab.ts`): each adapter's `sim.ts` exports
 * `labControls(dev: VendorSim): LabControls`, so the lab needs no switch on vendor keys. Settings share
 * their names and values across vendors where the meaning is the same (`decrypt=on|off`,
 * `deploy=ok|pending|failed`, `ha=active|standby|failed`, `ntp=on|off`, `power=on|off`,
 * `health=ok|warning|critical`; README "Five-minute tour" and docs/extending.md "Adding an adapter").
 *
 * @example
 * ```ts
 * import type { LabControls, SimulatedDevice } from "@dutlab/core/testing";
 * interface VendorSim extends SimulatedDevice { state: { ntpServers: string[] } }
 * export function labControls(dev: VendorSim): LabControls {
 *   const ntp = [...dev.state.ntpServers]; // the starting NTP config, which `ntp=on` restores
 *   return {
 *     settings: {
 *       ntp: { values: ["on", "off"], apply: (v) => void (dev.state.ntpServers = v === "on" ? [...ntp] : []) },
 *     },
 *   };
 * }
 * ```
 */
export interface LabControls {
  /**
   * Settings an operator changes with `deno task lab set <vendor> key=value` (besides the generic `down` and
   * `cert`), by key: the values each takes (e.g. `["on", "off"]`) and how the device's simulator applies one
   * (put the simulated device in the state the value names). The lab refuses a value not in `values` before
   * calling `apply`.
   */
  readonly settings: Readonly<
    Record<string, { readonly values: readonly string[]; apply(value: string): void | Promise<void> }>
  >;
  /** Put the device in its lab starting state (e.g. decryption on), called once after start. */
  start?(): void | Promise<void>;
}
