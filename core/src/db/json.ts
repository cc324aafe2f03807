/** A jsonb column's value: node-postgres returns it parsed, PGlite as text in some paths; either way an object. */
export function jsonValue<T>(v: unknown): T {
  return (typeof v === "string" ? JSON.parse(v) : v) as T;
}
