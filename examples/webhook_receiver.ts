/**
 * A webhook receiver for docs/notifications.md: verifies each delivery with the published Standard Webhooks
 * library (`standardwebhooks` on npm), answers 204, and prints the verified CloudEvent as one JSON line.
 * With `--once` it exits after the first verified delivery. A delivery whose signature does not verify gets
 * 401 (dutlab retries it, and the delivery log shows the 401).
 *
 *   WEBHOOK_SECRET=whsec_... npx -y deno@2.9.6 run -A --lock=deno.dev.lock --frozen examples/webhook_receiver.ts
 *
 * Environment: `WEBHOOK_SECRET` (the `secret` of the subscription) or `WEBHOOK_SECRET_FILE` (a JSON file
 * with a `secret` member, read at each delivery), `RECEIVER_PORT` (default 0: any free port; not `PORT`, which names the service's own port), `URL_FILE` (where to
 * write the receiver's URL once it listens).
 */
// deno-lint-ignore no-import-prefix -- an example outside the product: kept out of deno.json and deno.lock
import { Webhook } from "npm:standardwebhooks@1.1.1";

const once = Deno.args.includes("--once");
const secret = async () =>
  Deno.env.get("WEBHOOK_SECRET") ??
    JSON.parse(await Deno.readTextFile(Deno.env.get("WEBHOOK_SECRET_FILE")!)).secret as string;

const ac = new AbortController();
const server = Deno.serve({
  hostname: "127.0.0.1",
  port: Number(Deno.env.get("RECEIVER_PORT") ?? 0),
  signal: ac.signal,
  onListen: async ({ hostname, port }) => {
    const file = Deno.env.get("URL_FILE");
    if (file) await Deno.writeTextFile(file, `http://${hostname}:${port}/dutlab\n`);
    console.error(`listening on http://${hostname}:${port}/dutlab`);
  },
}, async (req) => {
  if (req.method !== "POST") return new Response(null, { status: 405 });
  const body = await req.text();
  let event: unknown;
  try {
    event = new Webhook(await secret()).verify(body, Object.fromEntries(req.headers));
  } catch (e) {
    console.error(`refused a delivery: ${(e as Error).message}`);
    return new Response("bad signature", { status: 401 });
  }
  console.log(JSON.stringify(event));
  if (once) setTimeout(() => ac.abort(), 50);
  return new Response(null, { status: 204 });
});
await server.finished;
