/** Whether `s` is a UUID in its textual form (ids of devices and runs; a non-UUID id is simply not found). */
export function isUuid(s: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);
}
