/**
 * The device farm (bench/_farm.ts) as a child process of a scenario: its devices (JSON lines), its request
 * counters and its stop.
 *
 * @module
 */
import { commandLine, drainTo, lines } from "./_util.ts";
import type { Ctx } from "./main.ts";

/** The farm process: devices as JSON lines, a `stats` command, stops at end of stdin. */
export async function startFarm(ctx: Ctx, n: number) {
  const captures = `${ctx.tmp}/captures.json`;
  const args = [
    "run",
    "-A",
    "--lock=deno.dev.lock",
    "bench/_farm.ts",
    "--n",
    String(n),
    "--captures",
    captures,
  ];
  const child = new Deno.Command(Deno.execPath(), { args, stdin: "piped", stdout: "piped", stderr: "piped" })
    .spawn();
  const errTail = drainTo(child.stderr, `${ctx.tmp}/farm.log`);
  const out = lines(child.stdout);
  const devices: string[] = [];
  let setupMs = 0;
  for (;;) {
    const { value, done } = await out.next();
    if (done) throw new Error(`Farm exited before it was ready: ${await errTail}`);
    const msg = JSON.parse(value);
    if (msg.type === "device") devices.push(value);
    if (msg.type === "ready") {
      setupMs = msg.setupMs;
      break;
    }
  }
  const writer = child.stdin.getWriter();
  const enc = new TextEncoder();
  return {
    pid: child.pid,
    devices,
    captures,
    setupMs,
    command: commandLine("deno", args),
    async stats(): Promise<{ requests: number; connections: number; unmatched: number }> {
      await writer.write(enc.encode("stats\n"));
      for (;;) {
        const { value, done } = await out.next();
        if (done) throw new Error("Farm exited");
        const msg = JSON.parse(value);
        if (msg.type === "stats") return msg;
      }
    },
    async stop() {
      await writer.close().catch(() => {});
      await child.status;
      await errTail;
    },
  };
}
