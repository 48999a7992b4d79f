/**
 * The `tasks.example.com` plugin: a namespaced `Task` (a unit of work with a title, a priority, a done flag and an
 * optional assignee) served in `v1`.
 *
 * - Defaulting: `spec.priority` defaults to `medium`, `spec.done` to `false`.
 * - Create and update: the title is trimmed, then validated (required, at most 200 characters); the priority must be
 *   `low`, `medium` or `high`; `done` must be a boolean and `assignee` a string.
 * - Update: a done task cannot be reopened (`spec.done` true → false is forbidden).
 * - Delete: a task labelled `protected=true` cannot be deleted (403 Forbidden).
 * - `/status`: the worker reports `status.state` (Pending, Running, Succeeded, Failed) and `status.message`; the
 *   task's own writes keep the stored status.
 * - Field selectors on `spec.priority` and `spec.done`; `kubectl get tasks` shows Title, Priority, Done, Assignee
 *   and Age.
 *
 * Built into a component by `build.sh` (componentize-js); `wit/world.wit` names the exported interfaces.
 */

import { definePlugin, errors, field, isObject, path } from '../../../guest-sdk/js/wasm-apiserver.js';

/** The API group. */
export const GROUP = 'tasks.example.com';
/** The priorities a task may have, lowest first. */
export const PRIORITIES = Object.freeze(['low', 'medium', 'high']);
/** The priority of a task that names none. */
export const DEFAULT_PRIORITY = 'medium';
/** The longest title, in characters (Unicode code points, as OpenAPI's `maxLength` counts). */
export const MAX_TITLE_LENGTH = 200;
/** The states a task's worker reports in `status.state`, through `/status`. */
export const STATES = Object.freeze(['Pending', 'Running', 'Succeeded', 'Failed']);
/** The label that protects a task from deletion when its value is `true`. */
export const PROTECTED_LABEL = 'protected';

/** The OpenAPI v3 schema of a v1 Task (the host adds apiVersion, kind and metadata). */
const TASK_SCHEMA = {
  type: 'object',
  description: 'Task is a unit of work: something to do, how urgent it is, whether it is done and who does it.',
  example: { spec: { title: 'Write the docs', priority: 'high', assignee: 'alice' } },
  properties: {
    spec: {
      type: 'object',
      description: 'TaskSpec describes the task.',
      required: ['title'],
      properties: {
        title: {
          type: 'string',
          maxLength: MAX_TITLE_LENGTH,
          description: `What is to be done. Required; at most ${MAX_TITLE_LENGTH} characters; leading and trailing spaces are removed.`,
        },
        priority: {
          type: 'string',
          enum: [...PRIORITIES],
          default: DEFAULT_PRIORITY,
          description: 'How urgent the task is: low, medium (the default) or high.',
        },
        done: {
          type: 'boolean',
          default: false,
          description: 'Whether the task is done. Defaults to false; once true, it cannot be set back to false.',
        },
        assignee: {
          type: 'string',
          description: 'Who does the task, if anyone.',
        },
      },
    },
    status: {
      type: 'object',
      description: 'TaskStatus is what the worker reports, through the /status subresource.',
      properties: {
        state: { type: 'string', enum: [...STATES], description: 'Pending, Running, Succeeded or Failed.' },
        message: { type: 'string', description: 'A human-readable detail of the state.' },
      },
    },
  },
};

/**
 * Sets `spec.priority` and `spec.done` when they are missing.
 *
 * @param {any} task A Task.
 */
export function defaultTask(task) {
  if (!isObject(task.spec)) {
    return;
  }
  task.spec.priority ??= DEFAULT_PRIORITY;
  task.spec.done ??= false;
}

/**
 * Removes leading and trailing spaces from the title (before validation, on create and update).
 *
 * @param {any} task A Task.
 */
export function prepareTask(task) {
  if (isObject(task.spec) && typeof task.spec.title === 'string') {
    task.spec.title = task.spec.title.trim();
  }
}

/**
 * The field errors of a Task's spec.
 *
 * @param {any} task A Task (defaulted and prepared).
 * @returns {import('../../../guest-sdk/js/core.js').FieldError[]}
 */
export function validateTask(task) {
  const spec = path('spec');
  if (task.spec === undefined || task.spec === null) {
    return [field.required(spec.child('title'))];
  }
  if (!isObject(task.spec)) {
    return [field.invalid(spec, task.spec, 'must be an object')];
  }
  const { title, priority, done, assignee } = task.spec;
  const fieldErrors = [];
  if (title === undefined || title === null || title === '') {
    fieldErrors.push(field.required(spec.child('title')));
  } else if (typeof title !== 'string') {
    fieldErrors.push(field.invalid(spec.child('title'), title, 'must be a string'));
  } else if ([...title].length > MAX_TITLE_LENGTH) {
    fieldErrors.push(field.tooLong(spec.child('title'), MAX_TITLE_LENGTH, 'characters'));
  }
  if (!PRIORITIES.includes(priority)) {
    fieldErrors.push(field.notSupported(spec.child('priority'), priority, PRIORITIES));
  }
  if (typeof done !== 'boolean') {
    fieldErrors.push(field.invalid(spec.child('done'), done, 'must be a boolean'));
  }
  if (assignee !== undefined && assignee !== null && typeof assignee !== 'string') {
    fieldErrors.push(field.invalid(spec.child('assignee'), assignee, 'must be a string'));
  }
  return fieldErrors;
}

/**
 * The field errors of an update: those of the new task, and reopening a done task.
 *
 * @param {any} task The new Task.
 * @param {any} old The stored Task.
 * @returns {import('../../../guest-sdk/js/core.js').FieldError[]}
 */
export function validateTaskUpdate(task, old) {
  const fieldErrors = validateTask(task);
  if (old.spec?.done === true && task.spec?.done === false) {
    fieldErrors.push(field.forbidden(path('spec', 'done'), 'a done task cannot be reopened; create a new task instead'));
  }
  return fieldErrors;
}

/**
 * Refuses to delete a task labelled `protected=true`.
 *
 * @param {any} task The stored Task.
 * @throws {import('../../../guest-sdk/js/core.js').PluginError} `forbidden`.
 */
export function validateTaskDelete(task) {
  if (task.metadata?.labels?.[PROTECTED_LABEL] === 'true') {
    throw errors.forbidden(`the task is protected: remove the label ${PROTECTED_LABEL}=true before deleting it`);
  }
}

/**
 * The field errors of a status update: the state is one of {@link STATES}, the message a string.
 *
 * @param {any} task The Task with its new status.
 * @returns {import('../../../guest-sdk/js/core.js').FieldError[]}
 */
export function validateTaskStatus(task) {
  const status = path('status');
  if (task.status === undefined || task.status === null) {
    return [];
  }
  if (!isObject(task.status)) {
    return [field.invalid(status, task.status, 'must be an object')];
  }
  const fieldErrors = [];
  const { state, message } = task.status;
  if (state !== undefined && !STATES.includes(state)) {
    fieldErrors.push(field.notSupported(status.child('state'), state, STATES));
  }
  if (message !== undefined && typeof message !== 'string') {
    fieldErrors.push(field.invalid(status.child('message'), message, 'must be a string'));
  }
  return fieldErrors;
}

export const {
  scheme,
  createStrategy,
  updateStrategy,
  deleteStrategy,
  lister,
  tableConvertor,
  defaulter,
  statusStrategy,
} = definePlugin({
  group: GROUP,
  resources: [
    {
      kind: 'Task',
      plural: 'tasks',
      singular: 'task',
      shortNames: ['tk'],
      categories: ['all'],
      scope: 'namespaced',
      versions: [{ name: 'v1', served: true, storage: true, schema: TASK_SCHEMA }],
      default: defaultTask,
      prepareForCreate: prepareTask,
      validate: validateTask,
      prepareForUpdate: prepareTask,
      validateUpdate: validateTaskUpdate,
      allowCreateOnUpdate: false,
      allowUnconditionalUpdate: true,
      validateDelete: validateTaskDelete,
      status: { validate: validateTaskStatus },
      selectableFields: ['spec.priority', 'spec.done'],
      columns: [
        { name: 'Title', type: 'string', value: 'spec.title', description: 'What is to be done.' },
        { name: 'Priority', type: 'string', value: 'spec.priority', description: 'How urgent the task is.' },
        { name: 'Done', type: 'boolean', value: 'spec.done', description: 'Whether the task is done.' },
        { name: 'Assignee', type: 'string', value: 'spec.assignee', description: 'Who does the task.' },
        {
          name: 'Age',
          type: 'date',
          value: 'metadata.creationTimestamp',
          description: 'How long ago the task was created.',
        },
      ],
    },
  ],
});
