/**
 * Helpers for wasm-apiserver plugins written in JavaScript and built with componentize-js.
 *
 * A plugin is a WebAssembly component exporting the interfaces of the WIT contract (`wit/`, package
 * `wasm-apiserver:plugin@0.1.1`). With this module, a plugin file holds only the logic of its types:
 *
 * ```js
 * import { definePlugin, field, path } from './wasm-apiserver.js';
 *
 * export const { scheme, createStrategy, lister } = definePlugin({
 *   group: 'notes.example.com',
 *   resources: [{
 *     kind: 'Note', plural: 'notes', singular: 'note',
 *     versions: [{ name: 'v1', schema: { type: 'object', properties: { spec: { type: 'object' } } } }],
 *     validate: (note) => (note.spec?.text ? [] : [field.required(path('spec', 'text'))]),
 *   }],
 * });
 * ```
 *
 * What it offers:
 * - JSON: {@link decode} and {@link encode} (a malformed object is a 400 BadRequest).
 * - Field paths and field errors like Go's `k8s.io/apimachinery/pkg/util/validation/field`: {@link FieldPath},
 *   {@link path}, {@link field}.
 * - The contract's error variant: {@link errors} builds a {@link PluginError} to throw; {@link toWitError} turns
 *   anything thrown into the WIT `error` variant.
 * - {@link definePlugin}: the WIT exports (`scheme`, `createStrategy`, `updateStrategy`, `deleteStrategy`, `lister`,
 *   `tableConvertor`, `converter`, `defaulter`, `mutatingAdmission`, `validatingAdmission`) built from plain objects.
 *
 * How componentize-js maps JavaScript onto WIT (0.23): records are objects with camelCase keys, enums are their
 * kebab-case case names as strings (`'not-supported'`), variants are `{ tag, val }`, options are a value or
 * `undefined`, tuples are arrays. An export returning `result<T, error>` returns `T` for `ok`; to return `err`, it
 * throws either a plain `{ tag, val }` object or an object whose own `payload` property is one (jco's
 * `ComponentError` convention, which {@link PluginError} follows). Any other thrown `Error` traps, which the host
 * reports as a 500 InternalError and discards the instance; {@link definePlugin} catches those and returns an
 * `internal` error instead.
 *
 * This module imports nothing from the host, so it also runs under Node.js for unit tests. Host imports (logging,
 * reading declared resources) are in `host.js`.
 *
 * @module wasm-apiserver
 */

export * from './core.js';
export { definePlugin } from './define-plugin.js';
