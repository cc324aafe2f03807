/**
 * The JSON of snapshots as the API sends them, written from their rows without decoding the payloads.
 *
 * A payload is stored as its canonical JSON text (RFC 8785), which is already JSON: it goes into the page
 * as it is, where the API used to `JSON.parse` every payload and `JSON.stringify` the page again (issue 34
 * point 3: that decoding and re-encoding was the largest cost of the latest-100 listing). The result is the
 * same JSON value as `JSON.stringify(toSnapshotView(row))`: the same fields in the same order, the same
 * strings and numbers. It is also the same bytes, but for one detail: in an object whose keys look like
 * array indexes ("0", "10"), the canonical order (by UTF-16 code units: "10" before "9") is kept, where
 * `JSON.parse` + `JSON.stringify` put such keys first in numeric order. JSON objects are unordered, and the
 * canonical order is the one `payloadSha256` is computed over.
 *
 * @module
 */
import type { SnapshotRow } from "./store.ts";

const str = JSON.stringify;

/**
 * One snapshot's JSON text: the fields of `SnapshotView`, in its order; without `payloadJson` when
 * `withPayload` is false (the listing's `payload=omit`).
 */
export function snapshotJson(r: SnapshotRow, withPayload = true): string {
  return `{"id":${str(r.id)},"deviceId":${str(r.device_id)},"endpointLabel":${str(r.endpoint_label)},` +
    (withPayload ? `"payloadJson":${r.payload},` : "") + `"payloadSha256":${str(r.payload_sha256)},` +
    `"collectedAt":"${isoTime(r.collected_at)}",` +
    `"testRunExecutionId":${r.test_run_execution_id === null ? "null" : str(r.test_run_execution_id)},` +
    `"adapterModule":${str(r.adapter_module)},"adapterVersion":${str(r.adapter_version)}}`;
}

/** `toISOString()` of a timestamp (a `Date` from node-postgres, text from PGlite). */
function isoTime(t: Date | string): string {
  return (t instanceof Date ? t : new Date(t)).toISOString();
}

/** A page's JSON text: `{"snapshots":[…],"nextCursor":…}` (`SnapshotPage`). */
export function snapshotPageJson(
  rows: readonly SnapshotRow[],
  nextCursor: string | null,
  withPayload = true,
): string {
  let body = '{"snapshots":[';
  for (let i = 0; i < rows.length; i++) body += (i ? "," : "") + snapshotJson(rows[i]!, withPayload);
  return `${body}],"nextCursor":${nextCursor === null ? "null" : str(nextCursor)}}`;
}
