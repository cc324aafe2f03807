/**
 * Named (prepared) statements on node-postgres connections, for the statements marked {@link PREPARED}.
 *
 * @module
 */
// @ts-types="@types/pg"
import type pg from "pg";

/**
 * The marker of a statement worth preparing: a comment with `prepared` as its text, in the first 40
 * characters (`sql.raw(PREPARED)` after `select` in a raw statement, `.modifyFront(sql.raw(PREPARED))` in a
 * built one). A statement run often whose planning costs more than its execution (the dashboard's short
 * listings: planning through the `snapshots` view was 0.40 ms of a 0.62 ms statement, measured with
 * `log_min_duration_statement`) is sent as a named statement: PostgreSQL parses it once per connection and,
 * after five runs, keeps a generic plan when that plan is no dearer than the custom ones. Only marked
 * statements, whose text is fixed (values as `$n` parameters, lists as one array), so a connection holds a
 * handful of them; naming every statement would keep one per distinct `in (…)` list. A pooler in front of
 * PostgreSQL must pass named statements through (PgBouncer 1.21+ with `max_prepared_statements`; docs/deploy-postgres.md).
 */
export const PREPARED = "/*prepared*/";

/** Sends a marked statement (see {@link PREPARED}) as a named one on this connection. */
export function preparing(client: pg.PoolClient) {
  const query = client.query.bind(client) as (...a: unknown[]) => unknown;
  const names = new Map<string, string>();
  (client as { query: unknown }).query = (text: unknown, values?: unknown, cb?: unknown) => {
    if (typeof text !== "string" || !text.slice(0, 40).includes(PREPARED) || typeof values === "function") {
      return query(text, values, cb);
    }
    let name = names.get(text);
    if (name === undefined) {
      name = `dutlab_${names.size + 1}`;
      names.set(text, name);
    }
    return query({ name, text, values }, cb);
  };
}
