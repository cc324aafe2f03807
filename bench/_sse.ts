/**
 * A dashboard's stream for the benchmarks: follows `GET /api/events` on its own connection until `signal`
 * aborts, calling `onFrame` with each complete frame's event type and id (null for frames without one).
 *
 * @module
 */
import { TOKEN } from "./_util.ts";

export async function followEvents(
  base: string,
  signal: AbortSignal,
  onFrame: (event: string, id: number | null) => void,
): Promise<void> {
  const client = Deno.createHttpClient({});
  try {
    const r = await fetch(`${base}/api/events`, {
      headers: { authorization: `Bearer ${TOKEN}` },
      signal,
      client,
    });
    const reader = r.body!.pipeThrough(new TextDecoderStream()).getReader();
    // Aborting the fetch does not always end a body piped through a stream: cancel the reader too.
    signal.addEventListener("abort", () => reader.cancel().catch(() => {}), { once: true });
    let rest = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += value;
      const frames = rest.split("\n\n");
      rest = frames.pop()!; // the incomplete tail (empty after a whole frame)
      for (const f of frames) {
        const event = /^event: (.*)$/m.exec(f)?.[1];
        const id = /^id: (\d+)$/m.exec(f)?.[1];
        if (event) onFrame(event, id === undefined ? null : Number(id));
      }
    }
  } catch {
    /* aborted */
  } finally {
    client.close();
  }
}
