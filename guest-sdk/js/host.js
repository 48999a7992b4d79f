/**
 * The host's imports (`wasm-apiserver:plugin/host@0.1.1`) with JSON handled: logging to the server's log,
 * reading the resources a plugin declared in `reads`, and who makes the request an admission hook admits.
 *
 * This module imports the WIT interface, so it only runs inside a component (componentize-js resolves the import);
 * keep it out of code you unit-test under Node.js, or give Node.js a stand-in for the import. Loading it makes the
 * helpers write the stack of an exception thrown in a hook to the server's log (`build-plugin.sh` loads it in every
 * component).
 *
 * A host error (such as `forbidden` for a resource that was not declared) is thrown as jco's `ComponentError`,
 * whose `payload` is the WIT `error` variant; hooks of `definePlugin` pass it on to the client unchanged.
 *
 * @module wasm-apiserver/host
 */

import {
  get as hostGet,
  list as hostList,
  log as hostLog,
  requestUser as hostRequestUser,
} from 'wasm-apiserver:plugin/host@0.1.1';

import { decode, setHookErrorLog } from './core.js';

// Exceptions in hooks (bugs, not PluginErrors) are written with their stack to the server's log.
setHookErrorLog((message) => hostLog('error', message));

/**
 * Logging to the server's log, tagged with the plugin's name: `log.info('created')`.
 */
export const log = Object.freeze({
  /** @param {string} message */
  trace: (message) => hostLog('trace', String(message)),
  /** @param {string} message */
  debug: (message) => hostLog('debug', String(message)),
  /** @param {string} message */
  info: (message) => hostLog('info', String(message)),
  /** @param {string} message */
  warn: (message) => hostLog('warn', String(message)),
  /** @param {string} message */
  error: (message) => hostLog('error', String(message)),
});

/**
 * Reads one object of a declared resource in its storage version.
 *
 * @param {string} group The API group.
 * @param {string} resource The plural resource name.
 * @param {string | undefined} namespace The namespace, or `undefined` for a cluster-scoped resource.
 * @param {string} name The object's name.
 * @returns {Record<string, any> | undefined} The object, or `undefined` when it does not exist.
 */
export function getObject(group, resource, namespace, name) {
  const text = hostGet(group, resource, namespace ?? undefined, name);
  return text === undefined || text === null ? undefined : decode(text, `${resource} "${name}"`);
}

/**
 * Lists the objects of a declared resource matching a label selector, in their storage version.
 *
 * @param {string} group The API group.
 * @param {string} resource The plural resource name.
 * @param {string | undefined} namespace A namespace, or `undefined` for all namespaces.
 * @param {string} [labelSelector] A label selector such as `app=web` (default: every object).
 * @returns {Array<Record<string, any>>} The objects.
 */
export function listObjects(group, resource, namespace, labelSelector = '') {
  return hostList(group, resource, namespace ?? undefined, labelSelector).map((text) => decode(text, resource));
}

/**
 * The user whose request the current admission hook admits, in full: `{ name, uid, groups, extra }`, `extra` as
 * `[key, values]` pairs; `undefined` outside the `admit` and `validate` hooks of `admission`. The admission request's
 * `user` has the name and groups only. Needs a host serving contract 0.1.1 or later.
 *
 * @returns {{ name: string, uid: string, groups: string[], extra: Array<[string, string[]]> } | undefined}
 */
export function requestUser() {
  return hostRequestUser() ?? undefined;
}
