// Unit tests of the @NAME@ plugin, run under Node.js by build.sh before every build (PLUGIN_SKIP_TESTS=1 skips them),
// or with `npm test`.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { createStrategy, GROUP, KIND, PLURAL, prepare, SCHEMA, scheme, validate } from '../src/@NAME@.js';

/** A v1 @KIND@. */
const object = (spec) => ({ apiVersion: `${GROUP}/v1`, kind: KIND, metadata: { name: 'x' }, spec });

describe('@NAME@', () => {
  it('serves one namespaced resource in v1', () => {
    const [resource] = scheme.info().resources;
    assert.deepEqual([resource.kind, resource.plural, resource.scope], [KIND, PLURAL, 'namespaced']);
  });

  it('trims the message, which may not be blank', () => {
    const ok = object({ message: '  hello  ' });
    prepare(ok);
    assert.equal(ok.spec.message, 'hello');
    assert.deepEqual(validate(ok), []);
    const blank = object({ message: '   ' });
    prepare(blank);
    assert.deepEqual(validate(blank).map((e) => e.field), ['spec.message']);
  });

  it('accepts the schema example through the exported create strategy', async () => {
    const text = JSON.stringify(object(SCHEMA.example.spec));
    const prepared = await createStrategy.prepareForCreate(PLURAL, text);
    assert.deepEqual(await createStrategy.validate(PLURAL, prepared), { errors: [], warnings: [] });
  });
});
