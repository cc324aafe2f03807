/**
 * The repository's one "start serve + lab" harness for end-to-end tests: a `deno run -A server.ts` child
 * process ({@link ServeProcess}) with its JSON log collected, and the simulated lab (`tools/lab.ts`,
 * {@link startLab}) in its own data directory. Safe when test files run in parallel (`deno test --parallel`):
 * ports come from {@link freePort} and a `serve` that lost its port to another process starts again on a new one.
 */
import { childEnv } from "./process.ts";
import { TEST_ADMIN_TOKEN, TEST_CRED_KEY, TEST_PDF_CERT, TEST_PDF_KEY, TEST_SIGNING_KEY } from "./app.ts";
import type { Db } from "../src/db/open.ts";

/** The repository root (server.ts, tools/lab.ts). */
const ROOT = new URL("../../", import.meta.url);
const dec = new TextDecoder();

/** Ports below the kernel's ephemeral range (32768 and up on Linux), which `listen(0)` and `connect` never hand out. */
const PORT_LOW = 20_000;
const PORT_HIGH = 32_767;

/**
 * A loopback port that is free now. Drawn at random below the ephemeral range, so a port another process got
 * from `listen(0)` or an outgoing connection is never picked; two test processes drawing the same port at the
 * same moment remain possible (rare): {@link ServeProcess} starts again on another port when that happens.
 */
export function freePort(): number {
  for (;;) {
    const port = PORT_LOW + Math.floor(Math.random() * (PORT_HIGH - PORT_LOW + 1));
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
      return port;
    } catch (e) {
      if (!(e instanceof Deno.errors.AddrInUse)) throw e;
    }
  }
}

/** One line of the service's JSON log (`DUT_LOG_FORMAT=json`); a line that is no JSON has level `RAW`. */
export interface LogLine {
  "@timestamp": string;
  level: string;
  message: string;
  properties: Record<string, unknown>;
}

/**
 * Read a process's JSON log (one object a line) into `into` until the stream ends; a line that is no JSON is
 * kept as level `RAW` with the line as its message.
 */
export async function readLogLines(
  stream: Deno.ChildProcess["stderr"],
  into: LogLine[],
): Promise<void> {
  const push = (line: string) => {
    try {
      into.push(JSON.parse(line));
    } catch {
      into.push({ "@timestamp": new Date().toISOString(), level: "RAW", message: line, properties: {} });
    }
  };
  let buf = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buf += chunk;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      push(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
  }
  if (buf) push(buf);
}

/** A log that says the listen address was taken. */
const ADDR_IN_USE = /address already in use|AddrInUse|os error 98/i;

/**
 * `deno run -A server.ts` (what `deno task serve` runs) on `databaseUrl` (null: embedded PGlite in the
 * `DUT_DATA_DIR` that `env` gives), inheriting the environment minus dutlab's own variables, with the test keys,
 * loopback on a free port, JSON logs at debug level collected in {@link lines}. Call {@link ready} before using
 * {@link base}: it waits for `/readyz` and, should another process have taken the port, starts again on another.
 */
/** `url` with its `search_path` set to `schema` (a test schema on TEST_DATABASE_URL). */
export function withSearchPath(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set("search_path", schema);
  return u.toString();
}

export class ServeProcess {
  readonly lines: LogLine[] = [];
  exited: Deno.CommandStatus | null = null;
  #port: number;
  #child: Deno.ChildProcess;
  #reading: Promise<void> = Promise.resolve();

  /** `env.PORT`, when given, is the first port tried; a taken one is replaced like a drawn one. */
  /**
   * `serve` over a `dbTest` database: its PostgreSQL schema, or an embedded data directory `<work>/serve-data`
   * on PGlite.
   */
  static overTestDb(db: Db, work: string, env: Record<string, string> = {}): ServeProcess {
    const pg = db as Db & { url?: string; schema?: string };
    return pg.url && pg.schema
      ? new ServeProcess(withSearchPath(pg.url, pg.schema), env)
      : new ServeProcess(null, { DUT_DATA_DIR: `${work}/serve-data`, ...env });
  }

  constructor(readonly databaseUrl: string | null, readonly env: Record<string, string> = {}) {
    this.#port = env.PORT === undefined ? freePort() : Number(env.PORT);
    this.#child = this.#spawn();
  }

  get port(): number {
    return this.#port;
  }

  get base(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  get child(): Deno.ChildProcess {
    return this.#child;
  }

  #spawn(): Deno.ChildProcess {
    this.exited = null;
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "server.ts"],
      cwd: ROOT,
      clearEnv: true,
      env: childEnv({
        ...(this.databaseUrl === null ? {} : { DATABASE_URL: this.databaseUrl }),
        ADMIN_TOKEN: TEST_ADMIN_TOKEN,
        DUT_CRED_ENC_KEY: TEST_CRED_KEY,
        DUT_REPORT_SIGNING_KEY: TEST_SIGNING_KEY,
        DUT_PDF_SIGNING_CERT: TEST_PDF_CERT,
        DUT_PDF_SIGNING_KEY: TEST_PDF_KEY,
        HOST: "127.0.0.1",
        DUT_LOG_FORMAT: "json",
        DUT_LOG_LEVEL: "debug",
        DUT_SHUTDOWN_GRACE_SECONDS: "5",
        ...this.env,
        PORT: String(this.#port),
      }),
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    child.status.then((s) => {
      if (this.#child === child) this.exited = s;
    });
    this.#reading = readLogLines(child.stderr, this.lines);
    return child;
  }

  /**
   * Resolves when `/readyz` answers 200 (within `attempts` × 100 ms of waiting); throws with the log when the
   * process exits first. A process that exited because its port was taken starts again on a new port (up to
   * five times), so {@link base} may change until this resolves.
   */
  async ready(attempts = 600): Promise<void> {
    let restarts = 0;
    for (let i = 0; i < attempts; i++) {
      if (this.exited) {
        // The exit can be seen before the last log lines are read.
        for (let j = 0; j < 20 && !ADDR_IN_USE.test(this.log()); j++) {
          await new Promise((r) => setTimeout(r, 100));
        }
        if (restarts < 5 && this.exited.code !== 0 && ADDR_IN_USE.test(this.log())) {
          restarts++;
          this.#port = freePort();
          this.#child = this.#spawn();
          continue;
        }
        throw new Error(`serve exited: ${this.log()}`);
      }
      try {
        // Cut off: a port taken by another process may accept and never answer.
        const r = await fetch(`${this.base}/readyz`, { signal: AbortSignal.timeout(5_000) });
        await r.body?.cancel();
        if (r.ok && !this.exited) return;
      } catch { /* not listening yet */ }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`serve not ready: ${this.log()}`);
  }

  /** The collected log, one line per entry. */
  log(): string {
    return this.lines.map((l) => `${l["@timestamp"]} ${l.level} ${l.message}`).join("\n");
  }

  /** Log lines matching `re` logged after `after` (ms since the epoch). */
  count(re: RegExp, after = 0): number {
    return this.lines.filter((l) => re.test(l.message) && Date.parse(l["@timestamp"]) > after).length;
  }

  /** SIGTERM, then the exit status once the log is read to its end. */
  async stop(): Promise<Deno.CommandStatus> {
    try {
      this.#child.kill("SIGTERM");
    } catch { /* already gone */ }
    const s = await this.#child.status;
    await this.#reading;
    return s;
  }
}

/** One simulator of the lab, as `tools/lab.ts show` prints it. */
export interface LabDevice {
  vendor: string;
  hostname: string;
  url: string;
  username: string;
  password: string;
}

/** The simulated lab, running until {@link stop}. */
export interface Lab {
  /** The lab's environment (`DUT_DATA_DIR`), for more `tools/lab.ts` commands. */
  readonly env: Record<string, string>;
  /** `tools/lab.ts …args` in the lab's data directory: exit code, stdout and stderr. */
  run(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  /** `tools/lab.ts …args` in the lab's data directory; its stdout (throws with stderr on a non-zero exit). */
  command(...args: string[]): Promise<string>;
  /** Its simulators. */
  show(): Promise<LabDevice[]>;
  /** `tools/lab.ts set vendor key=value…`. */
  set(vendor: string, ...pairs: string[]): Promise<string>;
  stop(): Promise<void>;
}

/**
 * `tools/lab.ts` (one simulator per enabled adapter) in its own data directory `dataDir`; resolves once its
 * simulators run. The lab's ports are its simulators' own (listen on port 0), so parallel labs never collide.
 */
export async function startLab(dataDir: string): Promise<Lab> {
  const env = { DUT_DATA_DIR: dataDir };
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "tools/lab.ts"],
    cwd: ROOT,
    clearEnv: true,
    env: childEnv(env),
    stdin: "null",
    stdout: "piped",
    // Its log (each setting applied: "lab: <vendor> key=value") goes to the test's output.
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  try {
    let text = "";
    while (!text.includes("simulator(s) running")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`lab exited: ${text}`);
      text += value;
    }
  } catch (e) {
    try {
      child.kill("SIGTERM");
    } catch { /* gone */ }
    await child.status;
    await reader.cancel().catch(() => {});
    throw e;
  }
  // Its stdout is not read past the start line. The stream is locked by the pipe, so it is cancelled through
  // the reader (a cancel of child.stdout itself is refused as locked and left it open: a leak the check found
  // under load); the cancel settles before stop() returns.
  const cancelled = reader.cancel().catch(() => {});
  const run = async (...args: string[]) => {
    const o = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "tools/lab.ts", ...args],
      cwd: ROOT,
      clearEnv: true,
      env: childEnv(env),
      stdout: "piped",
      stderr: "piped",
    }).output();
    return { code: o.code, stdout: dec.decode(o.stdout), stderr: dec.decode(o.stderr) };
  };
  const command = async (...args: string[]) => {
    const o = await run(...args);
    if (o.code !== 0) throw new Error(`tools/lab.ts ${args.join(" ")}: exit ${o.code}: ${o.stderr}`);
    return o.stdout;
  };
  return {
    env,
    run,
    command,
    show: async () => JSON.parse(await command("show")) as LabDevice[],
    set: (vendor, ...pairs) => command("set", vendor, ...pairs),
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch { /* gone */ }
      await child.status;
      await cancelled;
    },
  };
}
