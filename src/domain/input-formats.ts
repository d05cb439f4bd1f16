/**
 * Input formats and size limits (flag, environment, application and organization names, Management
 * Key values, variant keys, tags, ids), shared by the server's validation and the admin web UI
 * (ui/), which bundles this module: no imports, no I/O.
 */

/** Flag names (URL path segment, GraphQL argument). */
export const FLAG_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
/** Environment, application and organization names. */
export const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** Management Key values: 64 lowercase hex characters. */
export const KEY_RE = /^[0-9a-f]{64}$/;
/** Management Key display names: any non-empty string after trimming, at most this long. */
export const KEY_NAME_MAX = 200;
/** Variant keys (and therefore defaultVariantKey, allocation keys, dependency variants). */
export const VARIANT_KEY_MAX = 128;
export const TAG_MAX = 64;
export const TAGS_MAX = 64;
export const DESCRIPTION_MAX = 4096;
export const USER_ID_MAX = 1024;
/** Rule ids and clientIds. */
export const ID_MAX = 128;

export const FLAG_NAME_MSG =
  "must start with a letter or digit and contain only letters, digits, '_', '.', '-' (at most 128 characters)";
export const NAME_MSG =
  "must start with a letter or digit and contain only letters, digits, '_', '.', '-' (at most 64 characters)";
