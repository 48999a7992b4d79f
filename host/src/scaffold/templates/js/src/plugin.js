/**
 * The `@GROUP@` plugin: a namespaced `@KIND@` (plural `@PLURAL@`) served in `v1` with create, get, list, watch,
 * update, patch and delete, and its own `kubectl get` columns.
 *
 * - The schema ({@link SCHEMA}) gives `spec.message` (a required string) and `spec.replicas` (an integer of at least
 *   0, default 1); the server enforces it and applies its defaults before any hook runs.
 * - Create and update: `spec.message` is trimmed, then must not be blank (422 Invalid otherwise).
 * - `kubectl get @PLURAL@` shows Name, Message, Replicas and Age.
 *
 * `wit/world.wit` names the exported interfaces; the server serves a verb exactly when the component exports the
 * interface behind it. The helpers are in `sdk/` (see `sdk/README.md`).
 */

import { definePlugin, field, isObject, path } from '../sdk/wasm-apiserver.js';

/** The API group. */
export const GROUP = '@GROUP@';
/** The kind. */
export const KIND = '@KIND@';
/** The plural resource name, used in URLs. */
export const PLURAL = '@PLURAL@';
/** The longest message, in characters. */
export const MAX_MESSAGE_LENGTH = 200;

/**
 * The OpenAPI v3 schema of a v1 @KIND@ (the server adds apiVersion, kind and metadata). Its `example` is what
 * `wasm-apiserver plugin check` runs every hook on.
 */
export const SCHEMA = {
  type: 'object',
  description: '@KIND@ is an object of the @GROUP@ API. Describe what it stands for here.',
  example: { spec: { message: 'Hello from a @KIND@', replicas: 2 } },
  properties: {
    spec: {
      type: 'object',
      description: 'The desired state of the @KIND@.',
      required: ['message'],
      properties: {
        message: {
          type: 'string',
          maxLength: MAX_MESSAGE_LENGTH,
          description: 'What the @KIND@ says. Required and not blank; leading and trailing spaces are removed.',
        },
        replicas: {
          type: 'integer',
          format: 'int32',
          minimum: 0,
          default: 1,
          description: 'How many copies of the @KIND@ there should be. At least 0; defaults to 1.',
        },
      },
    },
  },
};

/**
 * Removes leading and trailing spaces from the message (before validation, on create and update).
 *
 * @param {any} object A @KIND@.
 */
export function prepare(object) {
  if (isObject(object.spec) && typeof object.spec.message === 'string') {
    object.spec.message = object.spec.message.trim();
  }
}

/**
 * The field errors of a @KIND@: the message must not be blank. (Types, `required`, `maxLength` and `minimum` are the
 * schema's, checked by the server before this runs.)
 *
 * @param {any} object A @KIND@ (prepared).
 * @returns {import('../sdk/core.js').FieldError[]}
 */
export function validate(object) {
  const message = object.spec?.message;
  if (typeof message !== 'string' || message.trim() === '') {
    return [field.required(path('spec', 'message'), `a ${KIND} needs a message that is not blank`)];
  }
  return [];
}

export const { scheme, createStrategy, updateStrategy, deleteStrategy, lister, tableConvertor } = definePlugin({
  group: GROUP,
  resources: [
    {
      kind: KIND,
      plural: PLURAL,
      singular: '@SINGULAR@',
      scope: 'namespaced',
      versions: [{ name: 'v1', served: true, storage: true, schema: SCHEMA }],
      prepareForCreate: prepare,
      validate,
      prepareForUpdate: prepare,
      validateUpdate: validate,
      columns: [
        { name: 'Message', type: 'string', value: 'spec.message', description: 'What the object says.' },
        { name: 'Replicas', type: 'integer', value: 'spec.replicas', description: 'How many copies there should be.' },
        {
          name: 'Age',
          type: 'date',
          value: 'metadata.creationTimestamp',
          description: 'The time since the object was created.',
        },
      ],
    },
  ],
});
