// Unit tests of the tasks plugin's logic, run under Node.js: `npm test` in plugins/tasks (Node.js >= 20.19).
// The end-to-end behaviour (through the host, HTTP and kubectl) is tested by tests/tests/js_plugin.rs.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  createStrategy,
  defaulter,
  deleteStrategy,
  lister,
  MAX_TITLE_LENGTH,
  scheme,
  statusStrategy,
  tableConvertor,
  updateStrategy,
} from '../src/tasks.js';

/** A v1 Task as JSON text. */
const task = (spec, metadata = {}) =>
  JSON.stringify({ apiVersion: 'tasks.example.com/v1', kind: 'Task', metadata: { name: 't', ...metadata }, spec });

/** The `[field, kind]` pairs of a validation's errors. */
const problems = (validation) => validation.errors.map((e) => [e.field, e.kind]);

describe('tasks', () => {
  it('serves namespaced tasks in v1 with a described schema and a valid example', async () => {
    const info = scheme.info();
    assert.equal(info.group, 'tasks.example.com');
    const [tasks] = info.resources;
    assert.deepEqual(
      [tasks.kind, tasks.plural, tasks.singular, tasks.shortNames, tasks.categories, tasks.scope],
      ['Task', 'tasks', 'task', ['tk'], ['all'], 'namespaced'],
    );
    assert.deepEqual(tasks.versions.map((v) => [v.name, v.served, v.storage]), [['v1', true, true]]);
    const schema = JSON.parse(tasks.versions[0].schema);
    const spec = schema.properties.spec;
    assert.deepEqual(Object.keys(spec.properties).sort(), ['assignee', 'done', 'priority', 'title']);
    for (const [name, property] of Object.entries(spec.properties)) {
      assert.ok(property.description, `spec.${name} has a description`);
    }
    assert.deepEqual(spec.required, ['title']);
    const example = { apiVersion: 'tasks.example.com/v1', kind: 'Task', metadata: { name: 'e' }, ...schema.example };
    const defaulted = await defaulter.default('tasks', JSON.stringify(example));
    assert.deepEqual(await createStrategy.validate('tasks', defaulted), { errors: [], warnings: [] });
  });

  it('defaults priority and done, keeping given values', async () => {
    assert.deepEqual(JSON.parse(await defaulter.default('tasks', task({ title: 'a' }))).spec, {
      title: 'a',
      priority: 'medium',
      done: false,
    });
    const given = { title: 'a', priority: 'high', done: true };
    assert.deepEqual(JSON.parse(await defaulter.default('tasks', task(given))).spec, given);
    assert.equal(JSON.parse(await defaulter.default('tasks', task(undefined))).spec, undefined);
  });

  it('trims the title before validation', async () => {
    const prepared = JSON.parse(await createStrategy.prepareForCreate('tasks', task({ title: '  a b  ' })));
    assert.equal(prepared.spec.title, 'a b');
    const updated = JSON.parse(await updateStrategy.prepareForUpdate('tasks', task({ title: ' c ' }), task({ title: 'a' })));
    assert.equal(updated.spec.title, 'c');
  });

  it('validates the spec', async () => {
    const valid = { title: 'a', priority: 'low', done: false };
    assert.deepEqual(await createStrategy.validate('tasks', task(valid)), { errors: [], warnings: [] });
    assert.deepEqual(await createStrategy.validate('tasks', task({ ...valid, assignee: 'bob' })), {
      errors: [],
      warnings: [],
    });
    assert.deepEqual(problems(await createStrategy.validate('tasks', task(undefined))), [['spec.title', 'required']]);
    assert.deepEqual(problems(await createStrategy.validate('tasks', task('x'))), [['spec', 'invalid']]);
    const bad = await createStrategy.validate('tasks', task({ title: 5, priority: 'urgent', done: 'no', assignee: [] }));
    assert.deepEqual(problems(bad), [
      ['spec.title', 'invalid'],
      ['spec.priority', 'not-supported'],
      ['spec.done', 'invalid'],
      ['spec.assignee', 'invalid'],
    ]);
    assert.equal(bad.errors[1].detail, '"urgent": supported values: "low", "medium", "high"');
    const long = await createStrategy.validate('tasks', task({ ...valid, title: 'x'.repeat(MAX_TITLE_LENGTH + 1) }));
    assert.deepEqual(long.errors, [
      { kind: 'too-long', field: 'spec.title', detail: 'may not be more than 200 characters' },
    ]);
    // Characters, not bytes or UTF-16 units: 200 emoji are fine.
    const emoji = await createStrategy.validate('tasks', task({ ...valid, title: '🦀'.repeat(MAX_TITLE_LENGTH) }));
    assert.deepEqual(emoji.errors, []);
  });

  it('refuses to reopen a done task and validates updates like creates', async () => {
    const done = task({ title: 'a', priority: 'low', done: true });
    const reopened = await updateStrategy.validateUpdate('tasks', task({ title: 'a', priority: 'low', done: false }), done);
    assert.deepEqual(problems(reopened), [['spec.done', 'forbidden']]);
    assert.match(reopened.errors[0].detail, /a done task cannot be reopened/);
    const closing = await updateStrategy.validateUpdate('tasks', done, task({ title: 'a', priority: 'low', done: false }));
    assert.deepEqual(closing.errors, []);
    const invalid = await updateStrategy.validateUpdate('tasks', task({ title: '', priority: 'low', done: true }), done);
    assert.deepEqual(problems(invalid), [['spec.title', 'required']]);
    assert.equal(updateStrategy.allowUnconditionalUpdate('tasks'), true);
    assert.equal(updateStrategy.allowCreateOnUpdate('tasks'), false);
  });

  it('refuses to delete a protected task', async () => {
    assert.equal(await deleteStrategy.validateDelete('tasks', task({ title: 'a' })), undefined);
    assert.equal(
      await deleteStrategy.validateDelete('tasks', task({ title: 'a' }, { labels: { protected: 'false' } })),
      undefined,
    );
    await assert.rejects(
      deleteStrategy.validateDelete('tasks', task({ title: 'a' }, { labels: { protected: 'true' } })),
      (e) => e.tag === 'forbidden' && e.val.includes('remove the label protected=true'),
    );
  });

  it('has a /status whose state and message are checked', async () => {
    assert.deepEqual(statusStrategy.resources(), ['tasks']);
    const withStatus = (status) =>
      JSON.stringify({ apiVersion: 'tasks.example.com/v1', kind: 'Task', metadata: { name: 't' }, status });
    const ok = await statusStrategy.validateStatusUpdate('tasks', withStatus({ state: 'Running' }), task({}));
    assert.deepEqual(ok.errors, []);
    const bad = await statusStrategy.validateStatusUpdate('tasks', withStatus({ state: 'Done', message: 1 }), task({}));
    assert.deepEqual(problems(bad), [
      ['status.state', 'not-supported'],
      ['status.message', 'invalid'],
    ]);
    assert.deepEqual(problems(await statusStrategy.validateStatusUpdate('tasks', withStatus('x'), task({}))), [
      ['status', 'invalid'],
    ]);
  });

  it('selects on priority and done', async () => {
    assert.deepEqual(lister.selectableFields('tasks'), ['spec.priority', 'spec.done']);
    assert.deepEqual(await lister.getAttrs('tasks', task({ title: 'a', priority: 'high', done: true })), [
      ['spec.priority', 'high'],
      ['spec.done', 'true'],
    ]);
  });

  it('shows Name, Title, Priority, Done, Assignee and Age', async () => {
    const columns = tableConvertor.columns('tasks');
    assert.deepEqual(
      columns.map((c) => [c.name, c.type]),
      [
        ['Name', 'string'],
        ['Title', 'string'],
        ['Priority', 'string'],
        ['Done', 'boolean'],
        ['Assignee', 'string'],
        ['Age', 'date'],
      ],
    );
    const row = await tableConvertor.row(
      'tasks',
      task({ title: 'a', priority: 'low', done: false }, { creationTimestamp: '2026-01-02T03:04:05Z' }),
    );
    assert.deepEqual(JSON.parse(row), ['t', 'a', 'low', false, null, '2026-01-02T03:04:05Z']);
  });
});
