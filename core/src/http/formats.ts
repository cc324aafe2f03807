/**
 * `?format=` on the results the API serves (docs/runs.md "Result formats"): the query parameter, the OpenAPI
 * content of a formatted answer and the response itself. The renderers are in core/src/formats.
 */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import {
  renderResultSet,
  RESULT_CONTENT_TYPES,
  RESULT_FORMATS,
  RESULT_MEDIA_TYPES,
  type ResultFormat,
  type ResultSet,
} from "../formats/results.ts";
import { jsonBytes } from "../util/json_bytes.ts";

/** The `format` query parameter (default `json`). */
export const FormatQuery = z.object({
  format: z.enum(RESULT_FORMATS, { message: `must be one of ${RESULT_FORMATS.join(", ")}` }).optional()
    .openapi({
      description: "`json` (default), `junit` (JUnit XML, application/xml: one testsuite per device or " +
        "run, one testcase per check, verdict input or run; validates against the windyroad JUnit XSD), " +
        "`markdown` (text/markdown: a summary line and a GFM table) or `csv` (text/csv, RFC 4180, header row)",
    }),
});

/** The OpenAPI content of an answer served as JSON (`schema`) or, with `?format=`, as text. */
export function formattedContent<T>(schema: T) {
  const text = (what: string) => ({ schema: z.string().openapi({ description: what }) });
  return {
    [RESULT_MEDIA_TYPES.json]: { schema },
    [RESULT_MEDIA_TYPES.junit]: text("`?format=junit`: JUnit XML (Apache Ant layout, windyroad JUnit XSD)"),
    [RESULT_MEDIA_TYPES.markdown]: text("`?format=markdown`: a summary line and a GFM table"),
    [RESULT_MEDIA_TYPES.csv]: text("`?format=csv`: RFC 4180 CSV with a header row"),
  };
}

/** The result as JSON, or rendered in `format`, with `status`. */
export function formatted(
  c: Context,
  format: ResultFormat | undefined,
  value: unknown,
  set: () => ResultSet,
  status: 200 | 422,
): Response {
  // The bytes of c.json's text, made without a one-byte summary character turning 1.5 MB into two-byte text.
  if (!format || format === "json") {
    return c.body(jsonBytes(value), status, { "content-type": "application/json" });
  }
  return c.body(renderResultSet(set(), format), status, { "content-type": RESULT_CONTENT_TYPES[format] });
}
