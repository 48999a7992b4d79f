/**
 * The building blocks of the wasm-apiserver JavaScript helpers: JSON, field paths and field errors, the contract's
 * error variant, and validation results. Import them from `wasm-apiserver.js`, which re-exports everything.
 *
 * @module wasm-apiserver/core
 */

// ---------------------------------------------------------------------------------------------------------------
// JSON

/**
 * Parses the JSON text of an object (a whole Kubernetes object, or any JSON object).
 *
 * @param {string} text JSON text.
 * @param {string} [what] What the text is, for the error message.
 * @returns {Record<string, any>} The parsed object.
 * @throws {PluginError} `bad-request` when the text is not JSON or not a JSON object.
 */
export function decode(text, what = 'object') {
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw errors.badRequest(`cannot decode the ${what}: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!isObject(value)) {
    throw errors.badRequest(`cannot decode the ${what}: expected a JSON object, got ${typeName(value)}`);
  }
  return value;
}

/**
 * Serialises a value as JSON text.
 *
 * @param {any} value Any JSON-serialisable value.
 * @returns {string} JSON text.
 */
export function encode(value) {
  return JSON.stringify(value);
}

/**
 * Whether a value is a plain JSON object (not null, not an array).
 *
 * @param {unknown} value Any value.
 * @returns {value is Record<string, any>}
 */
export function isObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The value at a dotted path inside an object, such as `spec.priority` or `metadata.labels.app`; `undefined` when
 * any step is missing.
 *
 * @param {any} object A JSON value.
 * @param {string} dotted A dotted path.
 * @returns {any}
 */
export function valueAt(object, dotted) {
  let value = object;
  for (const step of dotted.split('.')) {
    if (!isObject(value)) {
      return undefined;
    }
    value = value[step];
  }
  return value;
}

/**
 * The version named by an object's `apiVersion` (`tasks.example.com/v1` → `v1`), or `''`.
 *
 * @param {Record<string, any>} object A Kubernetes object.
 * @returns {string}
 */
export function versionOf(object) {
  const apiVersion = typeof object?.apiVersion === 'string' ? object.apiVersion : '';
  return apiVersion.slice(apiVersion.lastIndexOf('/') + 1);
}

/**
 * The JSON type name of a value, for messages: `string`, `number`, `boolean`, `null`, `array` or `object`.
 *
 * @param {unknown} value Any value.
 * @returns {string}
 */
export function typeName(value) {
  if (value === null || value === undefined) {
    return 'null';
  }
  return Array.isArray(value) ? 'array' : typeof value;
}

// ---------------------------------------------------------------------------------------------------------------
// Field paths and field errors

/**
 * The path of a field, like Go's `*field.Path`: `spec.containers[0].env[HOME]`. Paths are immutable: `child`,
 * `index` and `key` return a longer path, so one parent serves many children.
 */
export class FieldPath {
  /** @type {ReadonlyArray<{ kind: 'child' | 'index' | 'key', value: string | number }>} */
  #segments;

  /**
   * @param {ReadonlyArray<{ kind: 'child' | 'index' | 'key', value: string | number }>} [segments]
   */
  constructor(segments = []) {
    this.#segments = Object.freeze([...segments]);
  }

  /**
   * The path of a named field inside this one: `spec` → `spec.name`.
   *
   * @param {string} name
   * @returns {FieldPath}
   */
  child(name) {
    return new FieldPath([...this.#segments, { kind: 'child', value: name }]);
  }

  /**
   * The path of an item of the list at this path: `spec.items` → `spec.items[0]`.
   *
   * @param {number} index
   * @returns {FieldPath}
   */
  index(index) {
    return new FieldPath([...this.#segments, { kind: 'index', value: index }]);
  }

  /**
   * The path of a value of the map at this path: `metadata.labels` → `metadata.labels[app]`.
   *
   * @param {string} key
   * @returns {FieldPath}
   */
  key(key) {
    return new FieldPath([...this.#segments, { kind: 'key', value: key }]);
  }

  /** @returns {string} The path in Kubernetes' notation. */
  toString() {
    return this.#segments
      .map((s, i) => (s.kind === 'child' ? (i === 0 ? String(s.value) : `.${s.value}`) : `[${s.value}]`))
      .join('');
  }
}

/**
 * A path made of named fields, like `field.NewPath("spec", "title")`.
 *
 * @param {...string} names The names, outermost first.
 * @returns {FieldPath}
 */
export function path(...names) {
  return names.reduce((p, name) => p.child(name), new FieldPath());
}

/**
 * A WIT `field-error` record.
 *
 * @typedef {{ kind: FieldErrorKind, field: string, detail: string }} FieldError
 */

/**
 * The WIT `field-error-kind` enum.
 *
 * @typedef {'required' | 'invalid' | 'not-supported' | 'duplicate' | 'forbidden' | 'too-long' | 'too-many'
 *   | 'internal'} FieldErrorKind
 */

/** The cases of the WIT `field-error-kind` enum. */
export const FIELD_ERROR_KINDS = Object.freeze([
  'required',
  'invalid',
  'not-supported',
  'duplicate',
  'forbidden',
  'too-long',
  'too-many',
  'internal',
]);

/**
 * A value as Go's `field` package prints it in a detail: strings quoted, other values as JSON.
 *
 * @param {unknown} value
 * @returns {string}
 */
function printValue(value) {
  if (value === undefined) {
    return 'null';
  }
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return '<unprintable value>';
  }
}

/**
 * `<value>: <detail>`, or just `<value>` without a detail.
 *
 * @param {unknown} value
 * @param {string} detail
 * @returns {string}
 */
function withValue(value, detail) {
  const printed = printValue(value);
  return detail ? `${printed}: ${detail}` : printed;
}

/**
 * Constructors of field errors, one per kind, mirroring Go's `field.Required`, `field.Invalid`, ... The host renders
 * a field error as Kubernetes does, `<field>: <kind>: <detail>` (for example `spec.priority: Unsupported value:
 * "urgent": supported values: "low", "medium", "high"`). WIT field errors carry no value of their own, so the
 * constructors that take one put it, quoted, at the front of the detail, as Go's `ErrorBody` does. A path is a
 * {@link FieldPath} or a string.
 */
export const field = Object.freeze({
  /**
   * A field error of any kind with a ready detail.
   *
   * @param {FieldErrorKind} kind
   * @param {FieldPath | string} fieldPath
   * @param {string} [detail]
   * @returns {FieldError}
   */
  error(kind, fieldPath, detail = '') {
    if (!FIELD_ERROR_KINDS.includes(kind)) {
      throw new TypeError(`"${kind}" is not a field error kind (one of ${FIELD_ERROR_KINDS.join(', ')})`);
    }
    return { kind, field: String(fieldPath), detail: String(detail) };
  },

  /**
   * A required field is empty (`FieldValueRequired`).
   *
   * @param {FieldPath | string} fieldPath
   * @param {string} [detail]
   */
  required(fieldPath, detail = '') {
    return field.error('required', fieldPath, detail);
  },

  /**
   * A value is malformed or out of range (`FieldValueInvalid`).
   *
   * @param {FieldPath | string} fieldPath
   * @param {unknown} value The offending value.
   * @param {string} [detail]
   */
  invalid(fieldPath, value, detail = '') {
    return field.error('invalid', fieldPath, withValue(value, detail));
  },

  /**
   * A value is not one of the supported values (`FieldValueNotSupported`).
   *
   * @param {FieldPath | string} fieldPath
   * @param {unknown} value The offending value.
   * @param {ReadonlyArray<string>} [validValues]
   */
  notSupported(fieldPath, value, validValues = []) {
    const detail = validValues.length ? `supported values: ${validValues.map((v) => JSON.stringify(v)).join(', ')}` : '';
    return field.error('not-supported', fieldPath, withValue(value, detail));
  },

  /**
   * A value repeats one that must be unique (`FieldValueDuplicate`).
   *
   * @param {FieldPath | string} fieldPath
   * @param {unknown} value
   */
  duplicate(fieldPath, value) {
    return field.error('duplicate', fieldPath, withValue(value, ''));
  },

  /**
   * A field may not be set or changed (`FieldValueForbidden`).
   *
   * @param {FieldPath | string} fieldPath
   * @param {string} detail
   */
  forbidden(fieldPath, detail) {
    return field.error('forbidden', fieldPath, detail);
  },

  /**
   * A value is longer than `maxLength` (`FieldValueTooLong`). Go counts bytes; pass another unit (such as
   * `'characters'`) when the plugin counts something else.
   *
   * @param {FieldPath | string} fieldPath
   * @param {number} maxLength
   * @param {string} [unit] The plural unit; the singular drops a final `s` when `maxLength` is 1.
   */
  tooLong(fieldPath, maxLength, unit = 'bytes') {
    const shown = maxLength === 1 ? unit.replace(/s$/, '') : unit;
    return field.error('too-long', fieldPath, `may not be more than ${maxLength} ${shown}`);
  },

  /**
   * A list has `actual` items, more than `max` (`FieldValueTooMany`).
   *
   * @param {FieldPath | string} fieldPath
   * @param {number} actual
   * @param {number} max
   */
  tooMany(fieldPath, actual, max) {
    return field.error('too-many', fieldPath, `${actual}: must have at most ${max} ${max === 1 ? 'item' : 'items'}`);
  },

  /**
   * Something went wrong inside the validator (`InternalError`).
   *
   * @param {FieldPath | string} fieldPath
   * @param {string} detail
   */
  internal(fieldPath, detail) {
    return field.error('internal', fieldPath, detail);
  },
});

// ---------------------------------------------------------------------------------------------------------------
// The contract's error variant

/** The cases of the WIT `error` variant; each renders as a Kubernetes Status. */
export const ERROR_TAGS = Object.freeze(['invalid', 'forbidden', 'bad-request', 'conflict', 'not-found', 'internal']);

/**
 * A WIT `error` variant value: `{ tag: 'invalid', val: FieldError[] }` or `{ tag: 'forbidden', val: string }`, ...
 *
 * @typedef {{ tag: 'invalid', val: FieldError[] } | { tag: 'forbidden' | 'bad-request' | 'conflict' | 'not-found'
 *   | 'internal', val: string }} WitError
 */

/**
 * An error carrying a WIT `error` variant in its own `payload` property. Throw it from an export returning
 * `result<_, error>`: componentize-js (like jco's `ComponentError`) returns the payload as the `err` case.
 */
export class PluginError extends Error {
  /**
   * @param {WitError['tag']} tag The case of the variant.
   * @param {string | FieldError[]} val Its payload: field errors for `invalid`, a message otherwise.
   */
  constructor(tag, val) {
    if (!ERROR_TAGS.includes(tag)) {
      throw new TypeError(`"${tag}" is not a case of the error variant (one of ${ERROR_TAGS.join(', ')})`);
    }
    if (tag === 'invalid' && !Array.isArray(val)) {
      throw new TypeError('the payload of an invalid error is a list of field errors');
    }
    const message = tag === 'invalid' ? val.map((e) => `${e.field}: ${e.detail}`).join('; ') : String(val);
    super(`${tag}: ${message}`);
    this.name = 'PluginError';
    Object.defineProperty(this, 'payload', { value: { tag, val }, enumerable: true });
  }
}

/**
 * Constructors of {@link PluginError}s, one per case of the WIT `error` variant. Throw the result:
 * `throw errors.forbidden('the task is protected')`.
 */
export const errors = Object.freeze({
  /** 422 Invalid with these field errors as causes. @param {FieldError[]} fieldErrors */
  invalid: (fieldErrors) => new PluginError('invalid', [...fieldErrors]),
  /** 403 Forbidden; appended to `<resource>.<group> "<name>" is forbidden: `. @param {string} message */
  forbidden: (message) => new PluginError('forbidden', message),
  /** 400 BadRequest. @param {string} message */
  badRequest: (message) => new PluginError('bad-request', message),
  /** 409 Conflict. @param {string} message */
  conflict: (message) => new PluginError('conflict', message),
  /** 404 NotFound. @param {string} message */
  notFound: (message) => new PluginError('not-found', message),
  /** 500 InternalError. @param {string} message */
  internal: (message) => new PluginError('internal', message),
});

/**
 * Whether a value is a well-formed WIT `error` variant value.
 *
 * @param {unknown} value
 * @returns {value is WitError}
 */
function isWitError(value) {
  if (!isObject(value) || !ERROR_TAGS.includes(value.tag)) {
    return false;
  }
  return value.tag === 'invalid' ? Array.isArray(value.val) : typeof value.val === 'string';
}

/**
 * Turns anything thrown into a WIT `error` variant value: the payload of a {@link PluginError} (or of a host
 * import's `ComponentError`), a thrown `{ tag, val }` as it is, and anything else as `internal` with its message.
 *
 * @param {unknown} thrown
 * @returns {WitError}
 */
export function toWitError(thrown) {
  if (isObject(thrown) && Object.hasOwn(thrown, 'payload') && isWitError(thrown.payload)) {
    return thrown.payload;
  }
  if (isWitError(thrown)) {
    return thrown;
  }
  if (thrown instanceof Error) {
    return { tag: 'internal', val: `${thrown.name}: ${thrown.message}` };
  }
  return { tag: 'internal', val: `thrown: ${printValue(thrown)}` };
}

/** Where {@link logHookError} writes: the host's log once `host.js` is loaded (inside a component), else nowhere. */
let hookErrorLog;

/**
 * Sets where {@link logHookError} writes (a function taking one message). `host.js` sets the host's `error` log when
 * it is loaded, as `build-plugin.sh` makes every component do; unit tests may set their own, or `undefined`.
 *
 * @param {((message: string) => void) | undefined} log
 */
export function setHookErrorLog(log) {
  hookErrorLog = log;
}

/**
 * Writes what a hook threw, with its stack, to the log set by {@link setHookErrorLog}, when it is a bug rather than
 * an answer: a {@link PluginError}, a host import's error and a thrown `{ tag, val }` are answers and are not logged.
 * The client gets one line (the `internal` error); the server's log gets the stack.
 *
 * @param {string} call The WIT function that was called, such as `prepare-for-create`.
 * @param {unknown} thrown What the hook threw.
 */
export function logHookError(call, thrown) {
  const answer = (isObject(thrown) && Object.hasOwn(thrown, 'payload') && isWitError(thrown.payload)) ||
    isWitError(thrown);
  if (answer || !hookErrorLog) {
    return;
  }
  const what = thrown instanceof Error
    ? `${thrown.name}: ${thrown.message}\n${thrown.stack ?? '(no stack)'}`
    : `thrown: ${printValue(thrown)}`;
  try {
    hookErrorLog(`${call} raised:\n${what}`);
  } catch {
    // Logging must not turn the error into another one.
  }
}

/**
 * A WIT `validation` record.
 *
 * @typedef {{ errors: FieldError[], warnings: string[] }} Validation
 */

/**
 * Normalises what a validation hook returns (nothing, an array of field errors, or `{ errors, warnings }`) into a
 * WIT `validation` record. Anything else (a string, `false`, one field error not in an array...) is a mistake that
 * would otherwise pass as "no errors": a `TypeError` saying what was returned.
 *
 * @param {unknown} result
 * @returns {Validation}
 */
export function toValidation(result) {
  if (result === undefined || result === null) {
    return { errors: [], warnings: [] };
  }
  if (Array.isArray(result)) {
    return { errors: fieldErrors(result, 'the array'), warnings: [] };
  }
  if (isObject(result) && !Object.hasOwn(result, 'field') && (Object.hasOwn(result, 'errors') ||
      Object.hasOwn(result, 'warnings'))) {
    const { errors = [], warnings = [] } = result;
    if (!Array.isArray(warnings)) {
      throw new TypeError(`a validation's warnings are an array of strings, not ${printValue(warnings)}`);
    }
    return { errors: fieldErrors(errors, 'errors'), warnings: warnings.map(String) };
  }
  const hint = isObject(result) && Object.hasOwn(result, 'field') ? ' (one field error: return it in an array)' : '';
  throw new TypeError(
    `a validator returns an array of field errors (field.invalid(...)), { errors, warnings } or nothing, not ` +
      `${printValue(result)}${hint}`,
  );
}

/** Checks that `errors` (what a validator returned as `what`) is an array of field errors. */
function fieldErrors(errors, what) {
  if (!Array.isArray(errors)) {
    throw new TypeError(`a validation's errors are an array of field errors, not ${printValue(errors)}`);
  }
  errors.forEach((e, i) => {
    if (!isObject(e) || !FIELD_ERROR_KINDS.includes(e.kind) || typeof e.field !== 'string' ||
        typeof e.detail !== 'string') {
      throw new TypeError(`${what}[${i}] is not a field error (make it with field.invalid(...) and the like): ` +
        `${printValue(e)}`);
    }
  });
  return errors;
}
