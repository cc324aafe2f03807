import assert from "node:assert/strict";
import { lockDataDir, parseLock, processStart } from "./datadir.ts";
import { StartupError } from "../errors.ts";

/** A live process that is not this one, standing in for whoever got a stale lock's PID. */
async function withOtherProcess(fn: (pid: number) => Promise<void>) {
  const child = new Deno.Command("sleep", { args: ["60"], stdin: "null", stdout: "null" }).spawn();
  try {
    await fn(child.pid);
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
}

const isInUse = (e: unknown) => e instanceof StartupError && e.code === "DATA_DIR_IN_USE";

Deno.test("the lock file records the owner's PID and start time, and release removes it", async () => {
  const dir = await Deno.makeTempDir();
  const lock = await lockDataDir(dir);
  const owner = parseLock(await Deno.readTextFile(`${dir}/dutlab.pid`));
  assert.equal(owner?.pid, Deno.pid);
  assert.match(owner?.start ?? "", /^\d+$/, "Linux: the start time from /proc");
  assert.equal(owner?.start, await processStart(Deno.pid));
  lock.release();
  await assert.rejects(Deno.stat(`${dir}/dutlab.pid`), Deno.errors.NotFound);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a lock whose PID now belongs to another live process is stale and taken over", async () => {
  const dir = await Deno.makeTempDir();
  await withOtherProcess(async (pid) => {
    const start = await processStart(pid);
    assert.ok(start);
    // The lock was written by an earlier process with this PID: it started at another time.
    const earlier = String(Number(start) - 1000);
    await Deno.writeTextFile(`${dir}/dutlab.pid`, JSON.stringify({ pid, start: earlier }));
    const lock = await lockDataDir(dir);
    assert.equal(parseLock(await Deno.readTextFile(`${dir}/dutlab.pid`))?.pid, Deno.pid);
    lock.release();
  });
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a lock held by a live process (same PID and start time) is refused with DATA_DIR_IN_USE", async () => {
  const dir = await Deno.makeTempDir();
  await withOtherProcess(async (pid) => {
    const body = JSON.stringify({ pid, start: await processStart(pid) });
    await Deno.writeTextFile(`${dir}/dutlab.pid`, body);
    await assert.rejects(lockDataDir(dir), isInUse);
    assert.equal(await Deno.readTextFile(`${dir}/dutlab.pid`), body, "the owner's lock is untouched");
    // An old-form lock file (a bare PID) of a live process is refused too.
    await Deno.writeTextFile(`${dir}/dutlab.pid`, String(pid));
    await assert.rejects(lockDataDir(dir), isInUse);
  });
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a lock left by a dead process is taken over", async () => {
  const dir = await Deno.makeTempDir();
  const child = new Deno.Command("true").spawn();
  const pid = child.pid;
  await child.status;
  await Deno.writeTextFile(`${dir}/dutlab.pid`, JSON.stringify({ pid, start: "1" }));
  const lock = await lockDataDir(dir);
  assert.equal(parseLock(await Deno.readTextFile(`${dir}/dutlab.pid`))?.pid, Deno.pid);
  lock.release();
  await Deno.remove(dir, { recursive: true });
});
