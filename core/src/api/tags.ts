/** One device tag (docs/devices.md): 1-64 characters of letters, digits, `.`, `_`, `:` and `-`. */
export const TAG_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;
/** At most this many tags per device. */
export const MAX_TAGS = 32;
