// Unit tests of the helper module, run under Node.js: `node --test test/` in guest-sdk/js (Node.js >= 20.19).
// The WIT exports are called the way componentize-js calls them: with JSON text, awaiting the result, and treating
// a thrown `{ tag, val }` (or an object with such a `payload`) as the `err` case.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  decode,
  definePlugin,
  encode,
  errors,
  field,
  FieldPath,
  path,
  PluginError,
  setHookErrorLog,
  toValidation,
  toWitError,
  valueAt,
  versionOf,
} from '../wasm-apiserver.js';
import { checkWorld } from '../define-plugin.js';

/** Runs `fn` and returns what it threw (failing when it throws nothing). */
async function thrown(fn) {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  assert.fail('expected an exception');
}

describe('JSON', () => {
  it('decodes objects and refuses other JSON and malformed text as bad requests', () => {
    assert.deepEqual(decode('{"a":1}'), { a: 1 });
    for (const text of ['[1]', '"x"', 'null', '{"a":']) {
      assert.throws(
        () => decode(text),
        (e) => e instanceof PluginError && e.payload.tag === 'bad-request',
        text,
      );
    }
    assert.throws(
      () => decode('[1]', 'old object'),
      (e) => e.payload.val === 'cannot decode the old object: expected a JSON object, got array',
    );
    assert.equal(encode({ a: [1, true] }), '{"a":[1,true]}');
  });

  it('reads dotted paths and versions', () => {
    const object = { apiVersion: 'g.example.com/v2', spec: { a: { b: 0 } } };
    assert.equal(valueAt(object, 'spec.a.b'), 0);
    assert.equal(valueAt(object, 'spec.x.b'), undefined);
    assert.equal(valueAt(object, 'apiVersion.length'), undefined);
    assert.equal(versionOf(object), 'v2');
    assert.equal(versionOf({ apiVersion: 'v1' }), 'v1');
    assert.equal(versionOf({}), '');
  });
});

describe('field paths and errors', () => {
  it('render paths like Kubernetes', () => {
    const spec = path('spec');
    assert.equal(String(spec), 'spec');
    assert.equal(String(spec.child('containers').index(0).child('name')), 'spec.containers[0].name');
    assert.equal(String(path('metadata', 'labels').key('app')), 'metadata.labels[app]');
    assert.equal(String(spec.child('a').index(0).key('b').index(2)), 'spec.a[0][b][2]');
    assert.equal(String(new FieldPath()), '');
    assert.equal(String(spec), 'spec', 'children leave the parent unchanged');
  });

  it('build WIT field errors with details like Go', () => {
    const p = path('spec', 'x');
    assert.deepEqual(field.required(p), { kind: 'required', field: 'spec.x', detail: '' });
    assert.deepEqual(field.invalid('spec.x', 'a"b', 'must be short'), {
      kind: 'invalid',
      field: 'spec.x',
      detail: '"a\\"b": must be short',
    });
    assert.equal(field.invalid(p, 5, 'too big').detail, '5: too big');
    assert.equal(field.invalid(p, undefined).detail, 'null');
    const unsupported = field.notSupported(p, 'Foo', ['Flunder', 'Fischer']);
    assert.equal(unsupported.kind, 'not-supported');
    assert.equal(unsupported.detail, '"Foo": supported values: "Flunder", "Fischer"');
    assert.equal(field.notSupported(p, 'Foo').detail, '"Foo"');
    assert.deepEqual(field.forbidden(p, 'may not be set'), { kind: 'forbidden', field: 'spec.x', detail: 'may not be set' });
    assert.equal(field.duplicate(p, 'x').detail, '"x"');
    assert.equal(field.tooLong(p, 100).detail, 'may not be more than 100 bytes');
    assert.equal(field.tooLong(p, 1).detail, 'may not be more than 1 byte');
    assert.equal(field.tooLong(p, 1, 'characters').detail, 'may not be more than 1 character');
    assert.equal(field.tooLong(p, 1, 'characters').kind, 'too-long');
    assert.equal(field.tooMany(p, 5, 3).detail, '5: must have at most 3 items');
    assert.equal(field.internal(p, 'boom').kind, 'internal');
    assert.throws(() => field.error('bogus', p), TypeError);
  });
});

describe('errors', () => {
  it('carry the WIT error variant in an own payload property', () => {
    const e = errors.forbidden('no');
    assert.ok(e instanceof Error);
    assert.ok(Object.hasOwn(e, 'payload'));
    assert.deepEqual(e.payload, { tag: 'forbidden', val: 'no' });
    assert.deepEqual(errors.badRequest('b').payload.tag, 'bad-request');
    assert.deepEqual(errors.notFound('n').payload.tag, 'not-found');
    assert.deepEqual(errors.conflict('c').payload.tag, 'conflict');
    assert.deepEqual(errors.internal('i').payload.tag, 'internal');
    const invalid = errors.invalid([field.required('spec.a')]);
    assert.deepEqual(invalid.payload, { tag: 'invalid', val: [{ kind: 'required', field: 'spec.a', detail: '' }] });
    assert.throws(() => new PluginError('teapot', 'x'), TypeError);
  });

  it('turn anything thrown into a WIT error', () => {
    assert.deepEqual(toWitError(errors.conflict('busy')), { tag: 'conflict', val: 'busy' });
    assert.deepEqual(toWitError({ tag: 'not-found', val: 'gone' }), { tag: 'not-found', val: 'gone' });
    // A host import's ComponentError: an Error whose own `payload` is the variant.
    const hostError = Object.defineProperty(new Error('x'), 'payload', { value: { tag: 'forbidden', val: 'undeclared' } });
    assert.deepEqual(toWitError(hostError), { tag: 'forbidden', val: 'undeclared' });
    assert.deepEqual(toWitError(new TypeError('bad')), { tag: 'internal', val: 'TypeError: bad' });
    assert.deepEqual(toWitError('oops'), { tag: 'internal', val: 'thrown: "oops"' });
    assert.deepEqual(toWitError({ tag: 'invalid', val: 'not a list' }).tag, 'internal');
  });

  it('normalise validation results', () => {
    const e = field.required('spec.a');
    assert.deepEqual(toValidation(undefined), { errors: [], warnings: [] });
    assert.deepEqual(toValidation([e]), { errors: [e], warnings: [] });
    assert.deepEqual(toValidation({ warnings: ['w'] }), { errors: [], warnings: ['w'] });
  });

  it('refuse what is no validation, instead of taking it as no errors', () => {
    const e = field.required('spec.a');
    for (const [result, says] of [
      ['spec.a is required', /not "spec.a is required"$/],
      [false, /not false$/],
      [0, /not 0$/],
      [e, /\(one field error: return it in an array\)$/],
      [['spec.a is required'], /^TypeError: the array\[0\] is not a field error/],
      [{ errors: e }, /errors are an array of field errors/],
      [{ errors: [], warnings: 'w' }, /warnings are an array of strings/],
    ]) {
      assert.throws(() => toValidation(result), (thrownError) => {
        assert.ok(thrownError instanceof TypeError);
        assert.match(String(thrownError), says);
        return true;
      });
    }
  });
});

/** A small plugin exercising every hook. */
function widgets(overrides = {}) {
  return definePlugin({
    group: 'widgets.example.com',
    reads: [{ group: 'widgets.example.com', resource: 'gadgets' }],
    resources: [
      {
        kind: 'Widget',
        plural: 'widgets',
        shortNames: ['wg'],
        versions: [
          { name: 'v2', schema: { type: 'object' }, storage: true },
          { name: 'v1', schema: '{"type":"object"}', storage: false, deprecated: true, deprecationWarning: 'old' },
        ],
        default(object, version) {
          object.spec ??= {};
          object.spec.size ??= version === 'v2' ? 'medium' : 'M';
        },
        prepareForCreate: (object) => ({ ...object, status: { ready: false } }),
        validate: (object) => (object.spec?.size ? [] : [field.required(path('spec', 'size'))]),
        prepareForUpdate(object, old) {
          object.status = old.status;
        },
        allowUnconditionalUpdate: true,
        validateDelete(object) {
          if (object.spec?.pinned) {
            throw errors.forbidden('pinned');
          }
        },
        selectableFields: ['spec.size', 'spec.pinned'],
        columns: [{ name: 'Size', type: 'string', value: (o) => o.spec.size.toUpperCase(), priority: 1 }],
        convert(object, toVersion, fromVersion) {
          const sizes = { v1: ['S', 'M', 'L'], v2: ['small', 'medium', 'large'] };
          object.spec.size = sizes[toVersion][sizes[fromVersion].indexOf(object.spec.size)];
        },
        ...overrides,
      },
      {
        kind: 'Gadget',
        plural: 'gadgets',
        scope: 'cluster',
        versions: [{ name: 'v1', schema: { type: 'object' } }],
      },
    ],
    admission: {
      mutating: {
        rules: [{ group: 'widgets.example.com', resources: ['widgets'], operations: ['create'] }],
        admit: (request) => (request.object.metadata.name === 'keep' ? undefined : { ...request.object, touched: true }),
      },
      validating: {
        rules: [{ group: '*', resources: ['*'], operations: ['delete'] }],
        validate: (request) => [`deleting ${request.oldObject.metadata.name}`],
      },
    },
  });
}

const widget = (spec, extra = {}) =>
  encode({ apiVersion: 'widgets.example.com/v2', kind: 'Widget', metadata: { name: 'w', uid: 'u1' }, spec, ...extra });

describe('definePlugin', () => {
  it('describes the scheme with defaults filled in', () => {
    const info = widgets().scheme.info();
    assert.equal(info.group, 'widgets.example.com');
    assert.deepEqual(info.reads, [{ group: 'widgets.example.com', resource: 'gadgets' }]);
    const [w, g] = info.resources;
    assert.deepEqual(
      { kind: w.kind, plural: w.plural, singular: w.singular, shortNames: w.shortNames, scope: w.scope },
      { kind: 'Widget', plural: 'widgets', singular: 'widget', shortNames: ['wg'], scope: 'namespaced' },
    );
    assert.deepEqual(w.categories, []);
    assert.deepEqual(w.versions[0], {
      name: 'v2',
      served: true,
      storage: true,
      deprecated: false,
      deprecationWarning: undefined,
      schema: '{"type":"object"}',
    });
    assert.equal(w.versions[1].deprecationWarning, 'old');
    assert.equal(g.scope, 'cluster');
    assert.equal(g.versions[0].storage, true, 'a single version is the storage version');
  });

  it('refuses malformed definitions with a TypeError naming the problem', () => {
    const version = { name: 'v1', schema: {} };
    const cases = [
      [{}, /group/],
      [{ group: 'g', resources: [] }, /resources/],
      [{ group: 'g', resources: [{ plural: 'xs', versions: [version] }] }, /resources\[0\] \(xs\)\.kind/],
      [{ group: 'g', resources: [{ kind: 'X', plural: 'xs', versions: [] }] }, /versions must be a non-empty/],
      [{ group: 'g', resources: [{ kind: 'X', plural: 'xs', versions: [{ name: 'v1' }] }] }, /schema/],
      [
        { group: 'g', resources: [{ kind: 'X', plural: 'xs', versions: [version, { ...version, name: 'v2' }] }] },
        /exactly one storage version, not 0/,
      ],
      [
        {
          group: 'g',
          resources: [{ kind: 'X', plural: 'xs', versions: [{ ...version, storage: true }, { ...version, name: 'v2' }] }],
        },
        /needs a `convert` hook/,
      ],
      [{ group: 'g', resources: [{ kind: 'X', plural: 'xs', scope: 'global', versions: [version] }] }, /scope/],
      [
        { group: 'g', resources: [{ kind: 'X', plural: 'xs', versions: [version], columns: [{ name: 'A', type: 'text' }] }] },
        /columns\[0\]/,
      ],
      [
        { group: 'g', resources: [{ kind: 'X', plural: 'xs', versions: [version], selectableFields: ['metadata.name'] }] },
        /selectableFields/,
      ],
      [
        {
          group: 'g',
          resources: [
            { kind: 'X', plural: 'xs', versions: [version] },
            { kind: 'Y', plural: 'xs', versions: [version] },
          ],
        },
        /used twice/,
      ],
    ];
    for (const [definition, message] of cases) {
      assert.throws(() => definePlugin(definition), (e) => e instanceof TypeError && message.test(e.message));
    }
  });

  it('defaults, prepares and validates creates', async () => {
    const plugin = widgets();
    const defaulted = decode(await plugin.defaulter.default('widgets', widget(undefined)));
    assert.equal(defaulted.spec.size, 'medium');
    const v1 = decode(await plugin.defaulter.default('widgets', widget({}, { apiVersion: 'widgets.example.com/v1' })));
    assert.equal(v1.spec.size, 'M', 'the hook is told the version');
    const gadget = await plugin.defaulter.default('gadgets', '{"a":1}');
    assert.equal(gadget, '{"a":1}', 'resources without the hook are unchanged');

    const prepared = decode(await plugin.createStrategy.prepareForCreate('widgets', widget({ size: 'small' })));
    assert.deepEqual(prepared.status, { ready: false });
    assert.deepEqual(await plugin.createStrategy.validate('widgets', widget({ size: 'small' })), { errors: [], warnings: [] });
    assert.deepEqual(await plugin.createStrategy.validate('widgets', widget({})), {
      errors: [{ kind: 'required', field: 'spec.size', detail: '' }],
      warnings: [],
    });
    assert.deepEqual(await plugin.createStrategy.validate('gadgets', '{}'), { errors: [], warnings: [] });
  });

  it('turns exceptions into WIT errors: bad JSON, unknown resources, bugs in hooks', async () => {
    const plugin = widgets({
      validate: () => {
        throw new RangeError('broken');
      },
      prepareForCreate: () => {
        throw errors.invalid([field.forbidden('spec.size', 'nope')]);
      },
    });
    const malformed = await thrown(() => plugin.defaulter.default('widgets', '{'));
    assert.equal(malformed.tag, 'bad-request');
    assert.match(malformed.val, /^cannot decode the object: /);
    const unknown = await thrown(() => plugin.createStrategy.prepareForCreate('gizmos', '{}'));
    assert.deepEqual(unknown, { tag: 'not-found', val: 'the plugin for widgets.example.com serves no resource "gizmos"' });
    assert.deepEqual(await thrown(() => plugin.createStrategy.prepareForCreate('widgets', '{}')), {
      tag: 'invalid',
      val: [{ kind: 'forbidden', field: 'spec.size', detail: 'nope' }],
    });
    // A validation cannot carry an error: a bug in a validator is thrown on (the instance traps: a 500 naming the
    // plugin and the call), not turned into a field error at the root (a 422, as if the object were at fault).
    const broken = await thrown(() => plugin.createStrategy.validate('widgets', '{}'));
    assert.ok(broken instanceof RangeError, String(broken));
    const forbidding = widgets({ validate: () => { throw errors.forbidden('no'); } });
    const misused = await thrown(() => forbidding.createStrategy.validate('widgets', '{}'));
    assert.match(String(misused), /^TypeError: validate threw forbidden \(no\): a validation answers with field errors only/);
    const refusing = widgets({ validate: () => { throw errors.invalid([field.required('spec.size')]); } });
    assert.deepEqual((await refusing.createStrategy.validate('widgets', '{}')).errors[0].field, 'spec.size');
    const bug = widgets({ default: (o) => o.spec.missing.deeper });
    const e = await thrown(() => bug.defaulter.default('widgets', '{}'));
    assert.equal(e.tag, 'internal');
    assert.match(e.val, /^TypeError: /);
    assert.ok(!(e instanceof Error), 'a plain variant, which componentize-js returns as err instead of trapping');
  });

  it('writes the stack of a bug in a hook to the log host.js sets, and not the answers hooks throw', async () => {
    const logged = [];
    setHookErrorLog((message) => logged.push(message));
    try {
      const plugin = widgets({
        default: function defaultWidget(o) {
          return o.spec.missing.deeper;
        },
        validate: function validateWidget() {
          throw new RangeError('broken');
        },
        prepareForCreate: () => {
          throw errors.forbidden('no');
        },
        validateDelete: () => {
          throw { tag: 'conflict', val: 'busy' };
        },
      });
      await thrown(() => plugin.defaulter.default('widgets', '{"spec":{}}'));
      await thrown(() => plugin.createStrategy.validate('widgets', '{}'));
      await thrown(() => plugin.createStrategy.prepareForCreate('widgets', '{}'));
      await thrown(() => plugin.deleteStrategy.validateDelete('widgets', '{}'));
      await thrown(() => plugin.defaulter.default('widgets', '{'));
      assert.equal(logged.length, 2, logged.join('\n---\n'));
      assert.match(logged[0], /^default raised:\nTypeError: .*\n/);
      assert.match(logged[0], /defaultWidget/, 'the stack names the hook function');
      assert.match(logged[1], /^validate raised:\nRangeError: broken\n/);
      assert.match(logged[1], /validateWidget/);
    } finally {
      setHookErrorLog(undefined);
    }
  });

  it('prepares and validates updates, and answers the update flags', async () => {
    const plugin = widgets({
      validateUpdate: (object, old) =>
        object.spec.size === old.spec.size ? { warnings: ['no change'] } : [field.forbidden('spec.size', 'immutable')],
    });
    const old = widget({ size: 'small' }, { status: { ready: true } });
    const prepared = decode(await plugin.updateStrategy.prepareForUpdate('widgets', widget({ size: 'large' }), old));
    assert.deepEqual(prepared.status, { ready: true });
    assert.deepEqual(await plugin.updateStrategy.validateUpdate('widgets', widget({ size: 'small' }), old), {
      errors: [],
      warnings: ['no change'],
    });
    const changed = await plugin.updateStrategy.validateUpdate('widgets', widget({ size: 'large' }), old);
    assert.deepEqual(changed.errors.map((e) => e.kind), ['forbidden']);
    // Without validateUpdate, updates are validated like creates.
    const fallback = await widgets().updateStrategy.validateUpdate('widgets', widget({}), old);
    assert.deepEqual(fallback.errors.map((e) => e.field), ['spec.size']);
    assert.equal(plugin.updateStrategy.allowUnconditionalUpdate('widgets'), true);
    assert.equal(plugin.updateStrategy.allowCreateOnUpdate('widgets'), false);
    assert.equal(plugin.updateStrategy.allowUnconditionalUpdate('gadgets'), false);
    assert.equal(plugin.updateStrategy.allowUnconditionalUpdate('gizmos'), false);
  });

  it('serves /status and /scale for the resources that declare them', async () => {
    const plugin = widgets({
      status: {
        prepareForUpdate(object) {
          object.status.seen = true;
        },
        validate: (object) => (object.status.ready === 'yes' ? [field.invalid('status.ready', 'yes', 'a boolean')] : []),
      },
      scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' },
    });
    assert.deepEqual(plugin.statusStrategy.resources(), ['widgets']);
    const old = widget({ size: 'small' }, { status: { ready: false } });
    const prepared = decode(
      await plugin.statusStrategy.prepareForStatusUpdate('widgets', widget({ size: 'small' }, { status: {} }), old),
    );
    assert.deepEqual(prepared.status, { seen: true });
    const invalid = await plugin.statusStrategy.validateStatusUpdate(
      'widgets',
      widget({}, { status: { ready: 'yes' } }),
      old,
    );
    assert.deepEqual(invalid.errors.map((e) => e.field), ['status.ready']);
    assert.deepEqual(plugin.scaler.scalePaths('widgets'), {
      specReplicasPath: '.spec.replicas',
      statusReplicasPath: '.status.replicas',
      labelSelectorPath: undefined,
    });
    assert.equal(plugin.scaler.scalePaths('gadgets'), undefined);
    // `status: true` serves /status with no hooks of its own.
    const plain = widgets({ status: true });
    const same = decode(await plain.statusStrategy.prepareForStatusUpdate('widgets', widget({}, { status: { a: 1 } }), old));
    assert.deepEqual(same.status, { a: 1 });
    assert.deepEqual((await plain.statusStrategy.validateStatusUpdate('widgets', widget({}), old)).errors, []);
    assert.deepEqual(widgets().statusStrategy.resources(), []);
    assert.throws(() => widgets({ scale: { specReplicasPath: 'spec.replicas' } }), /scale\.specReplicasPath/);
    assert.throws(() => widgets({ status: 'yes' }), /status must be true/);
    assert.throws(() => widgets({ status: { validte: () => [] } }), /status: unknown key "validte" \(did you mean "validate"\?\)/);
  });

  it('refuses misspelt hooks, naming the likely one', () => {
    assert.throws(() => widgets({ valdiate: () => [] }), /unknown key "valdiate" \(did you mean "validate"\?\)/);
    assert.throws(() => widgets({ prepareForUpdat: (o) => o }), /did you mean "prepareForUpdate"/);
    assert.throws(() => widgets({ somethingElse: 1 }), /unknown key "somethingElse"$/);
  });

  it('names the hooks whose interface the world does not export', () => {
    const definition = {
      group: 'widgets.example.com',
      resources: [{ kind: 'Widget', plural: 'widgets', default: () => {}, validate: () => {}, columns: [] }],
      admission: { validating: { rules: [], validate: () => [] } },
    };
    assert.deepEqual(
      checkWorld(definition, ['scheme', 'create-strategy', 'update-strategy', 'defaulter', 'table-convertor',
        'validating-admission']),
      [],
    );
    const problems = checkWorld(definition, ['scheme', 'update-strategy']);
    assert.equal(problems.length, 3, problems.join('\n'));
    assert.match(problems[0], /^widgets\.default is a hook of the defaulter interface, which the world does not export, so it would never run: add `export wasm-apiserver:plugin\/defaulter@0\.1\.1;`/);
    assert.match(problems[1], /^widgets\.columns is a hook of the table-convertor interface.*export tableConvertor from/);
    assert.match(problems[2], /^admission\.validating is a hook of the validating-admission interface/);
    // validate runs through update-strategy too (validateUpdate's default).
    assert.ok(!problems.some((p) => p.startsWith('widgets.validate ')));
  });

  it('refuses deletions by throwing', async () => {
    const plugin = widgets();
    assert.equal(await plugin.deleteStrategy.validateDelete('widgets', widget({ size: 'small' })), undefined);
    assert.deepEqual(await thrown(() => plugin.deleteStrategy.validateDelete('widgets', widget({ pinned: true }))), {
      tag: 'forbidden',
      val: 'pinned',
    });
  });

  it('lists selectable fields and reads their values', async () => {
    const plugin = widgets();
    assert.deepEqual(plugin.lister.selectableFields('widgets'), ['spec.size', 'spec.pinned']);
    assert.deepEqual(plugin.lister.selectableFields('gadgets'), []);
    assert.deepEqual(await plugin.lister.getAttrs('widgets', widget({ size: 'small', pinned: false })), [
      ['spec.size', 'small'],
      ['spec.pinned', 'false'],
    ]);
    assert.deepEqual(await plugin.lister.getAttrs('widgets', widget({})), [
      ['spec.size', ''],
      ['spec.pinned', ''],
    ]);
    const custom = widgets({ getAttrs: (o) => ({ 'spec.size': o.spec.size.length }) });
    assert.deepEqual(await custom.lister.getAttrs('widgets', widget({ size: 'small' })), [['spec.size', '5']]);
  });

  it('builds table columns and rows, with Name first', async () => {
    const plugin = widgets();
    const columns = plugin.tableConvertor.columns('widgets');
    assert.deepEqual(
      columns.map((c) => [c.name, c.type, c.format, c.priority]),
      [
        ['Name', 'string', 'name', 0],
        ['Size', 'string', '', 1],
      ],
    );
    assert.equal(await plugin.tableConvertor.row('widgets', widget({ size: 'small' })), '["w","SMALL"]');
    const gadgets = plugin.tableConvertor.columns('gadgets');
    assert.deepEqual(gadgets.map((c) => [c.name, c.type]), [
      ['Name', 'string'],
      ['Created At', 'date'],
    ]);
    const row = await plugin.tableConvertor.row('gadgets', '{"metadata":{"name":"g"}}');
    assert.equal(row, '["g",null]', 'a missing value is a null cell');
    assert.deepEqual(plugin.tableConvertor.columns('gizmos'), []);
  });

  it('converts between versions, setting apiVersion and keeping metadata', async () => {
    const plugin = widgets({
      convert(object) {
        object.spec.size = 'L';
        object.metadata.name = 'renamed';
        return { ...object, apiVersion: 'wrong/v9' };
      },
    });
    const converted = decode(await plugin.converter.convert('widgets', widget({ size: 'large' }), 'v1'));
    assert.equal(converted.apiVersion, 'widgets.example.com/v1');
    assert.equal(converted.spec.size, 'L');
    assert.deepEqual(converted.metadata, { name: 'w', uid: 'u1' });
    const same = decode(await widgets().converter.convert('gadgets', '{"apiVersion":"widgets.example.com/v1"}', 'v1'));
    assert.equal(same.apiVersion, 'widgets.example.com/v1');
    assert.deepEqual(await thrown(() => widgets().converter.convert('gadgets', '{"apiVersion":"x/v1"}', 'v2')), {
      tag: 'internal',
      val: 'no conversion of gadgets from v1 to v2',
    });
    const roundTrip = decode(await widgets().converter.convert('widgets', widget({ size: 'large' }), 'v1'));
    assert.equal(roundTrip.spec.size, 'L');
  });

  it('wraps admission hooks with parsed requests', async () => {
    const plugin = widgets();
    assert.deepEqual(plugin.mutatingAdmission.rules(), [
      { group: 'widgets.example.com', resources: ['widgets'], operations: ['create'] },
    ]);
    const request = (name) => ({
      operation: 'create',
      group: 'widgets.example.com',
      version: 'v2',
      resource: 'widgets',
      subresource: '',
      namespace: 'default',
      name,
      object: encode({ metadata: { name } }),
      oldObject: undefined,
      dryRun: false,
      user: { name: 'system:anonymous', groups: [] },
    });
    assert.equal(await plugin.mutatingAdmission.admit(request('keep')), undefined);
    assert.deepEqual(decode(await plugin.mutatingAdmission.admit(request('w'))), { metadata: { name: 'w' }, touched: true });
    const deletion = { ...request('w'), operation: 'delete', object: undefined, oldObject: encode({ metadata: { name: 'w' } }) };
    assert.deepEqual(await plugin.validatingAdmission.validate(deletion), ['deleting w']);
    const none = definePlugin({ group: 'g', resources: [{ kind: 'X', plural: 'xs', versions: [{ name: 'v1', schema: {} }] }] });
    assert.deepEqual(none.mutatingAdmission.rules(), []);
    assert.equal(await none.mutatingAdmission.admit(request('w')), undefined);
    assert.deepEqual(await none.validatingAdmission.validate(request('w')), []);
  });
});
