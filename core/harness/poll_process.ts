/**
 * A `deno task poll` process for multi-instance tests: the task's command (`deno run -A poller.ts`), run
 * directly so that a signal (SIGKILL, SIGSTOP, SIGCONT, SIGTERM) reaches deno itself, with its JSON log
 * collected. It gets only what a poller uses (issue 31 point 5): DATABASE_URL, DUT_CRED_ENC_KEY and `env`.
 */
import { childEnv } from "./process.ts";
import { type LogLine, readLogLines } from "./serve.ts";
import { TEST_CRED_KEY } from "./app.ts";

const ROOT = new URL("../../", import.meta.url);

/** The command `deno task poll` runs (asserted against deno.json by the tests). */
export const POLL_TASK = "deno run -A poller.ts";

/** One poll process. */
export class PollProcess {
  readonly lines: LogLine[] = [];
  readonly child: Deno.ChildProcess;
  readonly done: Promise<Deno.CommandStatus>;
  #reading: Promise<void>;

  /** Start `deno run -A poller.ts` against `databaseUrl` with the poller variables in `env`. */
  constructor(readonly name: string, databaseUrl: string, env: Record<string, string> = {}) {
    const all = childEnv({
      DATABASE_URL: databaseUrl,
      DUT_CRED_ENC_KEY: TEST_CRED_KEY,
      DUT_SHUTDOWN_GRACE_SECONDS: "5",
      DUT_LOG_FORMAT: "json",
      DUT_LOG_LEVEL: "debug",
      ...env,
    });
    const child = this.child = new Deno.Command(Deno.execPath(), {
      args: POLL_TASK.split(" ").slice(1),
      cwd: ROOT,
      clearEnv: true,
      env: all,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    this.done = this.child.status;
    this.#reading = readLogLines(child.stderr, this.lines);
  }

  /** The process id (the poll instance id is `host:pid:suffix`). */
  get pid(): number {
    return this.child.pid;
  }

  /** Hostnames this process logged as polled after `after` (ms since the epoch). */
  polls(after = 0): string[] {
    return this.lines.filter((l) => l.message.startsWith("Polled ") && Date.parse(l["@timestamp"]) > after)
      .map((l) => String(l.properties.hostname));
  }

  /** Log lines matching `pattern` after `after`. */
  count(pattern: RegExp, after = 0): number {
    return this.lines.filter((l) => pattern.test(l.message) && Date.parse(l["@timestamp"]) > after).length;
  }

  /** The log, one line per record, prefixed with the process's name. */
  log(): string {
    return this.lines.map((l) => `${this.name} ${l["@timestamp"]} ${l.level} ${l.message}`).join("\n");
  }

  /** Send a signal without waiting (SIGSTOP, SIGCONT); false when the process is gone. */
  signal(signal: Deno.Signal): boolean {
    try {
      this.child.kill(signal);
      return true;
    } catch {
      return false;
    }
  }

  /** Send `signal` (default SIGKILL) and wait for the process to end and its log to be read. */
  async stop(signal: Deno.Signal = "SIGKILL"): Promise<Deno.CommandStatus> {
    this.signal(signal);
    if (signal === "SIGTERM" || signal === "SIGINT") this.signal("SIGCONT");
    const status = await this.done;
    await this.#reading;
    return status;
  }
}
