/** Small helpers shared by the benchmark scenarios: statistics, /proc readings, child processes. */
import { TEST_PDF_CERT, TEST_PDF_KEY } from "../core/harness/app.ts";
import { freePort } from "../core/harness/serve.ts";

/** One measured figure, with the command that produced it. */
export interface Figure {
  scenario: string;
  name: string;
  value: number | null;
  unit: string;
  /** Parameters the figure depends on (N, backend, rows...). */
  params?: Record<string, unknown>;
  /** Target of the issue, in words, and whether this figure meets it. */
  target?: string;
  pass?: boolean;
  /** The command that produced the figure. */
  command: string;
  note?: string;
}

export const TOKEN = "bench-admin-token-0123456789abcdef0123";
export const CRED_KEY = "ab".repeat(32);
/** Ed25519 report signing key of bench services (base64 PKCS#8 DER; seed 0x02 × 32). */
export const SIGNING_KEY = "MC4CAQAwBQYDK2VwBCIEIAICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIC";
export const PG_URL = Deno.env.get("BENCH_DATABASE_URL") ?? "postgres://postgres@127.0.0.1:5432/test";

/** Percentile (nearest rank) of unsorted numbers. */
export function pct(values: number[], p: number): number {
  if (!values.length) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[i]!; // i is clamped to 0..length-1 and values is not empty
}

export function mean(values: number[]): number {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN;
}

export const round = (v: number, d = 1) => Number.isFinite(v) ? Math.round(v * 10 ** d) / 10 ** d : v;

const CLK_TCK = 100;

/** CPU seconds (user + system) used so far by a process, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number | "self" | "thread-self" = "self"): number {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch {
    return NaN;
  }
}

/** CPU seconds used so far by every PostgreSQL server process (postmaster and backends). */
export function postgresCpuSeconds(): number {
  let total = 0;
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const comm = Deno.readTextFileSync(`/proc/${e.name}/comm`).trim();
      if (comm === "postgres" || comm.startsWith("postgres:")) total += cpuSeconds(Number(e.name));
    } catch { /* gone */ }
  }
  return total;
}

/** A field of /proc/<pid>/status in MiB (VmRSS, VmHWM). */
export function statusMiB(field: "VmRSS" | "VmHWM", pid: number | "self" = "self"): number {
  try {
    const m = Deno.readTextFileSync(`/proc/${pid}/status`).match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** Samples a process's RSS every `ms` until stopped. */
export function rssSampler(pid: number | "self" = "self", ms = 100) {
  const samples: number[] = [];
  const t = setInterval(() => {
    const v = statusMiB("VmRSS", pid);
    if (Number.isFinite(v)) samples.push(v);
  }, ms);
  return {
    stop() {
      clearInterval(t);
      const v = statusMiB("VmRSS", pid);
      if (Number.isFinite(v)) samples.push(v);
      return { peakMiB: Math.max(...samples), meanMiB: mean(samples), samples: samples.length };
    },
  };
}

/** A free loopback port, as the tests pick one (below the ephemeral range, so no `listen(0)` takes it). */
export { freePort };

/** Machine facts for the results file. */
export function machine() {
  const meminfo = Deno.readTextFileSync("/proc/meminfo");
  const cpuinfo = Deno.readTextFileSync("/proc/cpuinfo");
  const kb = (k: string) => Number(meminfo.match(new RegExp(`^${k}:\\s+(\\d+)`, "m"))?.[1] ?? NaN);
  const load = Deno.readTextFileSync("/proc/loadavg").trim().split(" ").slice(0, 3).map(Number);
  return {
    nproc: navigator.hardwareConcurrency,
    cpuModel: cpuinfo.match(/^model name\s*:\s*(.+)$/m)?.[1] ?? "unknown",
    memTotalGiB: round(kb("MemTotal") / 1024 / 1024, 1),
    memAvailableGiB: round(kb("MemAvailable") / 1024 / 1024, 1),
    loadAvg: load,
    kernel: Deno.osRelease(),
    deno: Deno.version.deno,
  };
}

/** Lines of a child's stdout as they come (UTF-8, newline-split). */
export async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let buf = "";
  const dec = new TextDecoder();
  for await (const chunk of stream) {
    buf += dec.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      yield buf.slice(0, i);
      buf = buf.slice(i + 1);
    }
  }
  if (buf) yield buf;
}

/** Shell-quoted command line, for the record. */
export function commandLine(cmd: string, args: string[], env: Record<string, string> = {}): string {
  const q = (s: string) => /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
  const e = Object.entries(env).map(([k, v]) => `${k}=${q(v)}`);
  return [...e, cmd, ...args.map(q)].join(" ");
}

/** Drain a stream into a file (when given); resolves to the last 3,000 characters. */
export async function drainTo(stream: ReadableStream<Uint8Array>, file?: string): Promise<string> {
  const f = file ? await Deno.open(file, { create: true, write: true, truncate: true }) : null;
  let tail = "";
  const dec = new TextDecoder();
  try {
    for await (const chunk of stream) {
      await f?.write(chunk);
      tail = (tail + dec.decode(chunk, { stream: true })).slice(-3000);
    }
  } finally {
    f?.close();
  }
  return tail;
}

/** Wait until `url` answers 200; resolves to the milliseconds since `since`. */
export async function waitFor200(
  url: string,
  since: number,
  timeoutMs = 60_000,
  child?: Deno.ChildProcess,
): Promise<number> {
  let exited: Deno.CommandStatus | null = null;
  child?.status.then((s) => (exited = s));
  while (performance.now() - since < timeoutMs) {
    if (exited) {
      throw new Error(
        `The server exited (code ${(exited as Deno.CommandStatus).code}) before ${url} answered 200`,
      );
    }
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await r.body?.cancel();
      if (r.status === 200) return performance.now() - since;
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
}

/** SIGTERM a child, SIGKILL it after `graceMs`; resolves to the ms it took to exit, or null when killed. */
export async function stopChild(child: Deno.ChildProcess, graceMs = 10_000): Promise<number | null> {
  const t0 = performance.now();
  try {
    child.kill("SIGTERM");
  } catch {
    return 0; // already gone
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const killed = await Promise.race([
    child.status.then(() => false),
    new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs))),
  ]);
  clearTimeout(timer);
  if (killed) {
    try {
      child.kill("SIGKILL");
    } catch { /* exited meanwhile */ }
    await child.status;
    return null;
  }
  return performance.now() - t0;
}

/** The environment of a bench `server.ts` on 127.0.0.1:`port`: the bench's secrets, then `extra`. */
export function serverEnv(port: number, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ADMIN_TOKEN: TOKEN,
    DUT_CRED_ENC_KEY: CRED_KEY,
    DUT_REPORT_SIGNING_KEY: SIGNING_KEY,
    // serve signs report.pdf with an X.509 certificate, configuration with DATABASE_URL (docs/reports.md "PDF").
    DUT_PDF_SIGNING_CERT: TEST_PDF_CERT,
    DUT_PDF_SIGNING_KEY: TEST_PDF_KEY,
    HOST: "127.0.0.1",
    PORT: String(port),
    ...extra,
  };
}

/** `deno run -A server.ts` with `env`; stdout drained, stderr to `logFile`. `logs` settles when it exits. */
export function startServer(
  env: Record<string, string>,
  logFile: string,
): { child: Deno.ChildProcess; logs: Promise<unknown> } {
  // BENCH_PROFILE_DIR=<dir>: a CPU profile of the server (written when it exits), for diagnosis.
  const prof = Deno.env.get("BENCH_PROFILE_DIR");
  // BENCH_V8_FLAGS=<flags>: V8 flags for the server (`--v8-flags=`), to measure a trade-off.
  const v8 = Deno.env.get("BENCH_V8_FLAGS");
  return spawnDrained(
    Deno.execPath(),
    [
      "run",
      "-A",
      ...(v8 ? [`--v8-flags=${v8}`] : []),
      ...(prof ? ["--cpu-prof", `--cpu-prof-dir=${prof}`] : []),
      "server.ts",
    ],
    env,
    logFile,
  );
}

/** `cmd args` with `env`; stdout drained, stderr to `logFile`. `logs` settles when it exits. */
function spawnDrained(
  cmd: string,
  args: string[],
  env: Record<string, string>,
  logFile: string,
): { child: Deno.ChildProcess; logs: Promise<unknown> } {
  const child = new Deno.Command(cmd, { args, env, stdin: "null", stdout: "piped", stderr: "piped" }).spawn();
  return { child, logs: Promise.all([drainTo(child.stdout), drainTo(child.stderr, logFile)]) };
}

/** A bare `Deno.serve` script answering 200: the yardstick every start is divided by (issue 34 point 5). */
export const BARE_SERVE =
  'Deno.serve({ hostname: "127.0.0.1", port: Number(Deno.env.get("PORT")) }, () => new Response("ok"));\n';

/** Milliseconds from spawning a bare `Deno.serve` script ({@link BARE_SERVE}, written to `script`) to its first 200. */
export async function bareStart(script: string): Promise<number> {
  const port = freePort();
  const t0 = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script],
    env: { PORT: String(port) },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  try {
    return await waitFor200(`http://127.0.0.1:${port}/`, t0, 30_000, child);
  } finally {
    await stopChild(child, 5_000);
  }
}

/**
 * `args` (the command first) in its own session and process group (`setsid`; the child's pid is the group's
 * id), so that stopping it stops every layer of a wrapper (npx → node → deno task → deno); stdout drained,
 * stderr to `logFile`. `logs` settles when it exits.
 */
export function startGroup(
  args: string[],
  env: Record<string, string>,
  logFile: string,
): { child: Deno.ChildProcess; logs: Promise<unknown> } {
  return spawnDrained("setsid", args, env, logFile);
}

/**
 * SIGTERM the process group of a {@link startGroup} child, SIGKILL the group after `graceMs`; resolves to the
 * ms until the group's leader exited, or null when it was killed.
 */
export async function stopGroup(child: Deno.ChildProcess, graceMs = 15_000): Promise<number | null> {
  const t0 = performance.now();
  try {
    Deno.kill(-child.pid, "SIGTERM");
  } catch { /* gone */ }
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    try {
      Deno.kill(-child.pid, "SIGKILL");
    } catch { /* gone */ }
  }, graceMs);
  await child.status;
  clearTimeout(timer);
  return killed ? null : performance.now() - t0;
}

/** The processes of process group `pgid` (from /proc): pid, parent pid, state (`Z`: zombie) and command line. */
export function groupProcesses(
  pgid: number,
): Array<{ pid: number; ppid: number; state: string; cmdline: string[] }> {
  const found: Array<{ pid: number; ppid: number; state: string; cmdline: string[] }> = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${e.name}/stat`);
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(f[2]) !== pgid) continue; // field 5, pgrp
      const cmdline = Deno.readTextFileSync(`/proc/${e.name}/cmdline`).split("\0").filter(Boolean);
      found.push({ pid: Number(e.name), ppid: Number(f[1]), state: f[0]!, cmdline });
    } catch { /* gone */ }
  }
  return found;
}

/** The load generator of the HTTP scenarios: autocannon, in its own Node process through npx. */
export const AUTOCANNON = "autocannon@9.0.0";

/** The parts of autocannon's `-j` report the scenarios read. */
export interface Autocannon {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number; max: number };
  throughput: { average: number };
  errors: number;
  timeouts: number;
  non2xx: number;
  "2xx": number;
}

/**
 * `npx -y autocannon@9.0.0 -c <connections> -d <seconds> -j` on `url` with the bench's admin token; the report
 * and the command line (token hidden), for the record.
 */
export async function autocannon(
  url: string,
  seconds: number,
  connections = 50,
): Promise<{ ac: Autocannon; command: string }> {
  const args = [
    "-y",
    AUTOCANNON,
    "-c",
    String(connections),
    "-d",
    String(seconds),
    "-j",
    "-H",
    `authorization=Bearer ${TOKEN}`,
    url,
  ];
  const out = await new Deno.Command("npx", { args, stdout: "piped", stderr: "null" }).output();
  const ac = JSON.parse(new TextDecoder().decode(out.stdout)) as Autocannon;
  return { ac, command: commandLine("npx", args.map((a) => a.replace(TOKEN, "<token>"))) };
}
