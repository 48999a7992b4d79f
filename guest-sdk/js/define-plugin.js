/**
 * {@link definePlugin}: the WIT exports of a plugin, built from plain objects describing its resources.
 *
 * @module wasm-apiserver/define-plugin
 */

import {
  decode,
  encode,
  errors,
  field,
  isObject,
  logHookError,
  toValidation,
  toWitError,
  valueAt,
  versionOf,
} from './core.js';

/** The description of kubectl's Name column, as Kubernetes gives it. */
const NAME_DESCRIPTION =
  'Name must be unique within a namespace. Is required when creating resources, although some resources may allow ' +
  'a client to request the generation of an appropriate name automatically. Name is primarily intended for ' +
  'creation idempotence and configuration definition. Cannot be updated. More info: ' +
  'https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names';

/** The description of the Created At column, as Kubernetes gives it. */
const CREATED_AT_DESCRIPTION =
  'CreationTimestamp is a timestamp representing the server time when this object was created. It is not ' +
  'guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is ' +
  'represented in RFC3339 form and is in UTC.';

/** The OpenAPI types a table column may have. */
const COLUMN_TYPES = ['string', 'integer', 'number', 'boolean', 'date'];

/**
 * One version of a resource.
 *
 * @typedef {object} VersionDefinition
 * @property {string} name The version name, such as `v1`.
 * @property {object | string} schema The OpenAPI v3 schema of the object (an object or its JSON text).
 * @property {boolean} [served] Served over HTTP (default true).
 * @property {boolean} [storage] The storage version (default: true when the resource has one version).
 * @property {boolean} [deprecated] Deprecated (default false).
 * @property {string} [deprecationWarning] The warning sent for a deprecated version.
 */

/**
 * A column of `kubectl get`.
 *
 * @typedef {object} ColumnDefinition
 * @property {string} name The header, such as `Title`; a `date` column named `Age` shows the object's age.
 * @property {'string' | 'integer' | 'number' | 'boolean' | 'date'} type The OpenAPI type.
 * @property {string | ((object: any) => any)} value A dotted path into the object (`spec.title`) or a function
 *   returning the cell; a missing value is a null cell, which kubectl shows as `<none>`.
 * @property {string} [format] An OpenAPI format.
 * @property {string} [description] A description.
 * @property {number} [priority] 0 (default) for columns always shown; higher for `-o wide` only.
 */

/**
 * One resource (kind) and its logic. Every hook is optional and receives parsed objects; a hook that changes an
 * object may change it in place or return a new one. A hook refuses a request by throwing a `PluginError`
 * (`throw errors.forbidden('...')`); anything else it throws becomes a 500 InternalError naming the exception.
 *
 * @typedef {object} ResourceDefinition
 * @property {string} kind The kind, such as `Task`.
 * @property {string} plural The plural, lower-case name used in URLs, such as `tasks`.
 * @property {string} [singular] The singular name (default: the kind in lower case).
 * @property {string[]} [shortNames] Short names for kubectl.
 * @property {string[]} [categories] Categories for kubectl (`all` for `kubectl get all`).
 * @property {'namespaced' | 'cluster'} [scope] Default `namespaced`.
 * @property {VersionDefinition[]} versions Most preferred first; exactly one is the storage version.
 * @property {(object: any, version: string) => any} [default] Sets defaults (the object is in `version`).
 * @property {(object: any) => any} [prepareForCreate] Prepares a new object before validation.
 * @property {(object: any) => ValidationResult} [validate] Validates a new object (and updates, unless
 *   `validateUpdate` is given).
 * @property {(object: any, oldObject: any) => any} [prepareForUpdate] Prepares an updated object.
 * @property {(object: any, oldObject: any) => ValidationResult} [validateUpdate] Validates an update.
 * @property {boolean} [allowCreateOnUpdate] Whether a PUT of a missing object creates it (default false).
 * @property {boolean} [allowUnconditionalUpdate] Whether a PUT without resourceVersion is accepted (default false).
 * @property {(object: any) => void} [validateDelete] Throws to refuse a deletion.
 * @property {string[]} [selectableFields] Dotted paths usable in field selectors, such as `spec.priority`.
 * @property {(object: any) => Record<string, string> | Array<[string, string]>} [getAttrs] The selectable fields'
 *   values (default: read at each dotted path; booleans and numbers as text, missing values as `''`).
 * @property {ColumnDefinition[]} [columns] The columns after Name (which is added unless given); default Created At.
 * @property {(object: any, toVersion: string, fromVersion: string) => any} [convert] Converts between versions;
 *   `apiVersion` and `metadata` are set by the helper.
 * @property {true | StatusDefinition} [status] Gives the resource a `/status` subresource (export `statusStrategy`).
 * @property {ScaleDefinition} [scale] Gives the resource a `/scale` subresource (export `scaler`).
 */

/**
 * The `/status` subresource of a resource: the object's own writes keep the stored status, `/status` writes only
 * the status. Both hooks are optional.
 *
 * @typedef {object} StatusDefinition
 * @property {(object: any, oldObject: any) => any} [prepareForUpdate] Prepares a status update (only `status` of
 *   the result is kept).
 * @property {(object: any, oldObject: any) => ValidationResult} [validate] Validates a status update.
 */

/**
 * The `/scale` subresource of a resource: where its objects keep their replica counts, as JSON paths.
 *
 * @typedef {object} ScaleDefinition
 * @property {string} specReplicasPath The desired replicas, such as `.spec.replicas`.
 * @property {string} statusReplicasPath The observed replicas, such as `.status.replicas`.
 * @property {string} [labelSelectorPath] The label selector in its string form, such as `.status.selector`.
 */

/**
 * What a validation hook returns: nothing, field errors, or field errors and warnings.
 *
 * @typedef {undefined | import('./core.js').FieldError[] |
 *   { errors?: import('./core.js').FieldError[], warnings?: string[] }} ValidationResult
 */

/**
 * An admission hook: the rules of the requests it sees, and the function called for each. The request is the WIT
 * `admission-request` record with `object` and `oldObject` parsed.
 *
 * @typedef {object} AdmissionDefinition
 * @property {Array<{ group: string, resources: string[], operations: Array<'create' | 'update' | 'delete'> }>} rules
 * @property {(request: any) => any} [admit] Mutating: returns the mutated object, or nothing to leave it unchanged.
 * @property {(request: any) => string[] | undefined} [validate] Validating: returns warnings.
 */

/**
 * A whole plugin.
 *
 * @typedef {object} PluginDefinition
 * @property {string} group The API group, such as `tasks.example.com`.
 * @property {ResourceDefinition[]} resources The resources of the group.
 * @property {Array<{ group: string, resource: string }>} [reads] Resources read through the host's imports.
 * @property {{ mutating?: AdmissionDefinition, validating?: AdmissionDefinition }} [admission] Admission hooks.
 */

/** The definitions {@link definePlugin} was given, in order: what {@link checkWorld} checks at build time. */
export const definitions = [];

/** The interfaces whose export runs each hook of a resource definition (any one of them; `validate` also serves
 * updates unless `validateUpdate` is given). */
const RESOURCE_HOOK_INTERFACES = {
  default: ['defaulter'],
  prepareForCreate: ['create-strategy'],
  validate: ['create-strategy', 'update-strategy'],
  prepareForUpdate: ['update-strategy'],
  validateUpdate: ['update-strategy'],
  allowCreateOnUpdate: ['update-strategy'],
  allowUnconditionalUpdate: ['update-strategy'],
  validateDelete: ['delete-strategy'],
  selectableFields: ['lister'],
  getAttrs: ['lister'],
  columns: ['table-convertor'],
  convert: ['converter'],
  status: ['status-strategy'],
  scale: ['scaler'],
};

/**
 * The hooks of `definition` that would never run because the world exports none of their interfaces (`exported`:
 * the world's exported interfaces, such as `defaulter`), each as a message saying what to add.
 *
 * @param {PluginDefinition} definition
 * @param {Iterable<string>} exported
 * @returns {string[]}
 */
export function checkWorld(definition, exported) {
  const world = new Set(exported);
  const problems = [];
  const need = (where, interfaces) => {
    if (!interfaces.some((i) => world.has(i))) {
      problems.push(
        `${where} is a hook of the ${interfaces[0]} interface, which the world does not export, so it would never ` +
          `run: add \`export wasm-apiserver:plugin/${interfaces[0]}@0.1.1;\` to the world in wit/ (and export ` +
          `${camel(interfaces[0])} from the plugin's module), or remove it`,
      );
    }
  };
  for (const r of definition.resources ?? []) {
    for (const [key, interfaces] of Object.entries(RESOURCE_HOOK_INTERFACES)) {
      if (r[key] !== undefined) {
        need(`${r.plural}.${key}`, interfaces);
      }
    }
  }
  for (const [kind, wit] of [['mutating', 'mutating-admission'], ['validating', 'validating-admission']]) {
    if (definition.admission?.[kind] !== undefined) {
      need(`admission.${kind}`, [wit]);
    }
  }
  return problems;
}

/** `table-convertor` -> `tableConvertor`. */
function camel(interfaceName) {
  return interfaceName.replace(/-(.)/g, (_, c) => c.toUpperCase());
}

/**
 * Builds the WIT exports of a plugin from plain objects. Export the ones the plugin's world declares; the host
 * serves a verb exactly when the component exports the interface behind it:
 *
 * ```js
 * export const { scheme, createStrategy, updateStrategy, deleteStrategy, lister, tableConvertor, defaulter } =
 *   definePlugin({ group: 'tasks.example.com', resources: [task] });
 * ```
 *
 * The definition is checked at once: a malformed one throws a `TypeError`, which fails the componentize-js build
 * (the module is evaluated at build time).
 *
 * @param {PluginDefinition} definition
 * @returns {Readonly<Record<string, object>>} `scheme`, `createStrategy`, `updateStrategy`, `deleteStrategy`,
 *   `lister`, `tableConvertor`, `converter`, `defaulter`, `mutatingAdmission`, `validatingAdmission`,
 *   `statusStrategy` and `scaler`.
 */
export function definePlugin(definition) {
  checkPlugin(definition);
  definitions.push(definition);
  const { group } = definition;
  const byPlural = new Map(definition.resources.map((r) => [r.plural, r]));
  const info = pluginInfo(definition);

  /** The resource named by `plural`, or a `not-found` error. */
  const resourceFor = (plural) => {
    const resource = byPlural.get(plural);
    if (!resource) {
      throw errors.notFound(`the plugin for ${group} serves no resource "${plural}"`);
    }
    return resource;
  };
  /** Calls a hook that may change `object`, returning the changed object. */
  const change = async (hook, object, ...rest) => {
    const result = await hook(object, ...rest);
    return result === undefined ? object : result;
  };
  const columnsOf = (resource) => tableColumns(resource);

  return Object.freeze({
    scheme: { info: () => info },

    createStrategy: {
      prepareForCreate: fallible('prepare-for-create', async (plural, text) => {
        const resource = resourceFor(plural);
        const object = decode(text);
        return encode(resource.prepareForCreate ? await change((o) => resource.prepareForCreate(o), object) : object);
      }),
      validate: validating('validate', async (plural, text) => {
        const resource = resourceFor(plural);
        return resource.validate ? resource.validate(decode(text)) : undefined;
      }),
    },

    updateStrategy: {
      prepareForUpdate: fallible('prepare-for-update', async (plural, text, oldText) => {
        const resource = resourceFor(plural);
        const object = decode(text);
        if (!resource.prepareForUpdate) {
          return encode(object);
        }
        const old = decode(oldText, 'old object');
        return encode(await change((o) => resource.prepareForUpdate(o, old), object));
      }),
      validateUpdate: validating('validate-update', async (plural, text, oldText) => {
        const resource = resourceFor(plural);
        if (resource.validateUpdate) {
          return resource.validateUpdate(decode(text), decode(oldText, 'old object'));
        }
        return resource.validate ? resource.validate(decode(text)) : undefined;
      }),
      allowCreateOnUpdate: (plural) => byPlural.get(plural)?.allowCreateOnUpdate === true,
      allowUnconditionalUpdate: (plural) => byPlural.get(plural)?.allowUnconditionalUpdate === true,
    },

    deleteStrategy: {
      validateDelete: fallible('validate-delete', async (plural, text) => {
        const resource = resourceFor(plural);
        if (resource.validateDelete) {
          await resource.validateDelete(decode(text));
        }
      }),
    },

    lister: {
      selectableFields: (plural) => [...(byPlural.get(plural)?.selectableFields ?? [])],
      getAttrs: fallible('get-attrs', async (plural, text) => {
        const resource = resourceFor(plural);
        const object = decode(text);
        if (resource.getAttrs) {
          return attrPairs(await resource.getAttrs(object));
        }
        return (resource.selectableFields ?? []).map((name) => [name, attrText(valueAt(object, name))]);
      }),
    },

    tableConvertor: {
      columns: (plural) => {
        const resource = byPlural.get(plural);
        return resource ? columnsOf(resource).map(witColumn) : [];
      },
      row: fallible('row', async (plural, text) => {
        const resource = resourceFor(plural);
        const object = decode(text);
        return encode(columnsOf(resource).map((column) => cell(column, object)));
      }),
    },

    converter: {
      convert: fallible('convert', async (plural, text, toVersion) => {
        const resource = resourceFor(plural);
        const object = decode(text);
        const fromVersion = versionOf(object);
        let converted = object;
        if (fromVersion !== toVersion) {
          if (!resource.convert) {
            throw errors.internal(`no conversion of ${plural} from ${fromVersion} to ${toVersion}`);
          }
          converted = await change((o) => resource.convert(o, toVersion, fromVersion), decode(text));
        }
        return encode({ ...converted, apiVersion: `${group}/${toVersion}`, metadata: object.metadata });
      }),
    },

    defaulter: {
      default: fallible('default', async (plural, text) => {
        const resource = resourceFor(plural);
        const object = decode(text);
        return encode(resource.default ? await change((o) => resource.default(o, versionOf(o)), object) : object);
      }),
    },

    mutatingAdmission: {
      rules: () => admissionRules(definition.admission?.mutating),
      admit: fallible('admit', async (request) => {
        const hook = definition.admission?.mutating?.admit;
        if (!hook) {
          return undefined;
        }
        const mutated = await hook(parseRequest(request));
        return mutated === undefined || mutated === null ? undefined : encode(mutated);
      }),
    },

    statusStrategy: {
      resources: () => definition.resources.filter((r) => r.status).map((r) => r.plural),
      prepareForStatusUpdate: fallible('prepare-for-status-update', async (plural, text, oldText) => {
        const hook = resourceFor(plural).status?.prepareForUpdate;
        const object = decode(text);
        return encode(hook ? await change((o) => hook(o, decode(oldText, 'old object')), object) : object);
      }),
      validateStatusUpdate: validating('validate-status-update', async (plural, text, oldText) => {
        const hook = resourceFor(plural).status?.validate;
        return hook ? hook(decode(text), decode(oldText, 'old object')) : undefined;
      }),
    },

    scaler: {
      scalePaths: (plural) => {
        const scale = byPlural.get(plural)?.scale;
        if (!scale) {
          return undefined;
        }
        return {
          specReplicasPath: scale.specReplicasPath,
          statusReplicasPath: scale.statusReplicasPath,
          labelSelectorPath: scale.labelSelectorPath,
        };
      },
    },

    validatingAdmission: {
      rules: () => admissionRules(definition.admission?.validating),
      validate: fallible('validate', async (request) => {
        const hook = definition.admission?.validating?.validate;
        const warnings = hook ? await hook(parseRequest(request)) : undefined;
        return [...(warnings ?? [])].map(String);
      }),
    },
  });
}

/**
 * Wraps an export returning `result<T, error>`: anything thrown becomes the WIT `error` variant (a plain
 * `{ tag, val }` thrown value, which componentize-js returns as `err`), so a bug in a hook is a 500 InternalError
 * naming the exception rather than a trap; its stack goes to the server's log ({@link logHookError}).
 *
 * @template {any[]} A
 * @param {string} call The WIT function, such as `prepare-for-create`.
 * @param {(...args: A) => Promise<any>} fn
 * @returns {(...args: A) => Promise<any>}
 */
function fallible(call, fn) {
  return async (...args) => {
    try {
      return await fn(...args);
    } catch (e) {
      logHookError(call, e);
      throw toWitError(e);
    }
  };
}

/**
 * Wraps an export returning a WIT `validation` record: a thrown `invalid` error becomes its field errors. Anything
 * else thrown (a bug, or an answer a validation cannot carry, such as `errors.forbidden`), and a result that is no
 * validation ({@link toValidation}), is logged with its stack and thrown on: the instance traps, and the server
 * answers 500 naming the plugin and the call, with the logged message (a validation has no error to return, and a
 * field error at the root would answer 422 as if the object were at fault).
 *
 * @template {any[]} A
 * @param {string} call The WIT function, such as `validate`.
 * @param {(...args: A) => Promise<any>} fn
 * @returns {(...args: A) => Promise<import('./core.js').Validation>}
 */
function validating(call, fn) {
  return async (...args) => {
    try {
      return toValidation(await fn(...args));
    } catch (e) {
      const error = toWitError(e);
      if (error.tag === 'invalid') {
        return { errors: error.val, warnings: [] };
      }
      const bug = error.tag === 'internal'
        ? e
        : new TypeError(`${call} threw ${error.tag} (${error.val}): a validation answers with field errors only`);
      logHookError(call, bug);
      throw bug;
    }
  };
}

/** The WIT `plugin-info` record of a definition. */
function pluginInfo(definition) {
  return {
    group: definition.group,
    resources: definition.resources.map((r) => ({
      kind: r.kind,
      plural: r.plural,
      singular: r.singular ?? r.kind.toLowerCase(),
      shortNames: [...(r.shortNames ?? [])],
      categories: [...(r.categories ?? [])],
      scope: r.scope ?? 'namespaced',
      versions: r.versions.map((v) => ({
        name: v.name,
        served: v.served ?? true,
        storage: v.storage ?? r.versions.length === 1,
        deprecated: v.deprecated ?? false,
        deprecationWarning: v.deprecationWarning,
        schema: typeof v.schema === 'string' ? v.schema : encode(v.schema),
      })),
    })),
    reads: (definition.reads ?? []).map(({ group, resource }) => ({ group, resource })),
  };
}

/** The columns of a resource's table: Name first (unless given), then the resource's, or Created At. */
function tableColumns(resource) {
  const name = { name: 'Name', type: 'string', format: 'name', description: NAME_DESCRIPTION, value: 'metadata.name' };
  const createdAt = {
    name: 'Created At',
    type: 'date',
    description: CREATED_AT_DESCRIPTION,
    value: 'metadata.creationTimestamp',
  };
  const columns = resource.columns ?? [createdAt];
  return columns.some((c) => c.name === 'Name') ? columns : [name, ...columns];
}

/** The WIT `column` record of a column definition. */
function witColumn(column) {
  return {
    name: column.name,
    type: column.type,
    format: column.format ?? '',
    description: column.description ?? '',
    priority: column.priority ?? 0,
  };
}

/** One cell of a row: the column's value for the object, `null` when missing. */
function cell(column, object) {
  const value = typeof column.value === 'function' ? column.value(object) : valueAt(object, column.value);
  return value === undefined ? null : value;
}

/** A selectable field's value as text: strings as they are, other scalars as JSON, missing values as `''`. */
function attrText(value) {
  if (value === undefined || value === null) {
    return '';
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The (field, value) pairs of a `getAttrs` hook's result (a map or a list of pairs). */
function attrPairs(attrs) {
  const pairs = Array.isArray(attrs) ? attrs : Object.entries(attrs ?? {});
  return pairs.map(([name, value]) => [String(name), attrText(value)]);
}

/** The WIT `admission-rule` records of an admission hook. */
function admissionRules(admission) {
  return (admission?.rules ?? []).map((rule) => ({
    group: rule.group,
    resources: [...rule.resources],
    operations: [...rule.operations],
  }));
}

/** An admission request with its objects parsed. */
function parseRequest(request) {
  return {
    ...request,
    object: request.object === undefined || request.object === null ? undefined : decode(request.object),
    oldObject:
      request.oldObject === undefined || request.oldObject === null ? undefined : decode(request.oldObject, 'old object'),
  };
}

/**
 * Checks a plugin definition, throwing a `TypeError` that names the first problem.
 *
 * @param {PluginDefinition} definition
 */
/** The keys a plugin definition may have. */
const PLUGIN_KEYS = ['group', 'resources', 'reads', 'admission'];
/** The keys a resource definition may have: its description and its hooks. */
const RESOURCE_KEYS = [
  'kind', 'plural', 'singular', 'shortNames', 'categories', 'scope', 'versions', 'default', 'prepareForCreate',
  'validate', 'prepareForUpdate', 'validateUpdate', 'allowCreateOnUpdate', 'allowUnconditionalUpdate',
  'validateDelete', 'selectableFields', 'getAttrs', 'columns', 'convert', 'status', 'scale',
];
/** The hooks of a resource's `status`. */
const STATUS_KEYS = ['prepareForUpdate', 'validate'];

/** The known key closest to `key` (by edit distance), when one is close enough to be a likely misspelling. */
function closest(key, known) {
  const distance = (a, b) => {
    const row = Array.from({ length: b.length + 1 }, (_, i) => i);
    for (let i = 1; i <= a.length; i++) {
      let previous = row[0];
      row[0] = i;
      for (let j = 1; j <= b.length; j++) {
        const current = row[j];
        row[j] = Math.min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
        previous = current;
      }
    }
    return row[b.length];
  };
  const [best] = known.map((k) => [k, distance(key.toLowerCase(), k.toLowerCase())]).sort((x, y) => x[1] - y[1]);
  return best && best[1] <= Math.max(2, Math.floor(key.length / 3)) ? best[0] : undefined;
}

/** Fails on a key that is not among `known`: a misspelt hook (`valdiate`) would otherwise never be called. */
function checkKeys(object, known, where, fail) {
  for (const key of Object.keys(object)) {
    if (!known.includes(key)) {
      const hint = closest(key, known);
      fail(`${where}: unknown key "${key}"${hint ? ` (did you mean "${hint}"?)` : ''}`);
    }
  }
}

function checkPlugin(definition) {
  const fail = (message) => {
    throw new TypeError(`definePlugin: ${message}`);
  };
  if (!isObject(definition) || typeof definition.group !== 'string' || !definition.group) {
    fail('`group` must be a non-empty string');
  }
  checkKeys(definition, PLUGIN_KEYS, 'the plugin', fail);
  if (!Array.isArray(definition.resources) || definition.resources.length === 0) {
    fail('`resources` must be a non-empty array');
  }
  const plurals = new Set();
  for (const [i, r] of definition.resources.entries()) {
    const where = `resources[${i}]${typeof r?.plural === 'string' ? ` (${r.plural})` : ''}`;
    for (const key of ['kind', 'plural']) {
      if (typeof r?.[key] !== 'string' || !r[key]) {
        fail(`${where}.${key} must be a non-empty string`);
      }
    }
    checkKeys(r, RESOURCE_KEYS, where, fail);
    if (isObject(r.status)) {
      checkKeys(r.status, STATUS_KEYS, `${where}.status`, fail);
    }
    if (plurals.has(r.plural)) {
      fail(`${where}: the plural "${r.plural}" is used twice`);
    }
    plurals.add(r.plural);
    if (r.scope !== undefined && r.scope !== 'namespaced' && r.scope !== 'cluster') {
      fail(`${where}.scope must be "namespaced" or "cluster"`);
    }
    checkVersions(r, where, fail);
    for (const [j, c] of (r.columns ?? []).entries()) {
      if (typeof c?.name !== 'string' || !COLUMN_TYPES.includes(c.type)) {
        fail(`${where}.columns[${j}] needs a name and a type among ${COLUMN_TYPES.join(', ')}`);
      }
      if (typeof c.value !== 'string' && typeof c.value !== 'function') {
        fail(`${where}.columns[${j}].value must be a dotted path or a function`);
      }
    }
    if (r.status !== undefined && r.status !== true && !isObject(r.status)) {
      fail(`${where}.status must be true or an object of hooks (prepareForUpdate, validate)`);
    }
    if (r.scale !== undefined) {
      for (const key of ['specReplicasPath', 'statusReplicasPath']) {
        if (typeof r.scale?.[key] !== 'string' || !r.scale[key].startsWith('.')) {
          fail(`${where}.scale.${key} must be a JSON path such as ".spec.replicas"`);
        }
      }
      if (r.scale.labelSelectorPath !== undefined && typeof r.scale.labelSelectorPath !== 'string') {
        fail(`${where}.scale.labelSelectorPath must be a JSON path such as ".status.selector"`);
      }
    }
    for (const name of r.selectableFields ?? []) {
      if (typeof name !== 'string' || name === 'metadata.name' || name === 'metadata.namespace') {
        fail(`${where}.selectableFields: "${name}" must be a dotted path other than metadata.name/namespace`);
      }
    }
  }
}

/** Checks the versions of a resource: named, with a schema, exactly one storage version. */
function checkVersions(resource, where, fail) {
  const versions = resource.versions;
  if (!Array.isArray(versions) || versions.length === 0) {
    fail(`${where}.versions must be a non-empty array`);
  }
  for (const [j, v] of versions.entries()) {
    if (typeof v?.name !== 'string' || !v.name) {
      fail(`${where}.versions[${j}].name must be a non-empty string`);
    }
    if (!isObject(v.schema) && typeof v.schema !== 'string') {
      fail(`${where}.versions[${j}].schema must be an OpenAPI v3 schema (object or JSON text)`);
    }
  }
  const storage = versions.filter((v) => v.storage ?? versions.length === 1).length;
  if (storage !== 1) {
    fail(`${where} must have exactly one storage version, not ${storage}`);
  }
  if (versions.length > 1 && !resource.convert) {
    fail(`${where} has several versions and so needs a \`convert\` hook`);
  }
}
