/** Database error helpers shared by the rooms that write (both drivers: PGlite and postgres.js). */

/** True when `e` is a unique-constraint violation (SQLSTATE 23505). */
export function isUniqueViolation(e: unknown): boolean {
  const err = e as { code?: string; message?: string };
  return err?.code === "23505" || /duplicate key value violates unique constraint/i.test(err?.message ?? "");
}
