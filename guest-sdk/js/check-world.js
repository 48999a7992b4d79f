// Checks, before a plugin is bundled, that every hook its definePlugin definition gives would run: that the plugin's
// world exports the interface behind it (a `default` hook needs `export wasm-apiserver:plugin/defaulter@0.1.1;`).
// Without the export the hook is never called, and nothing else would say so.
//
// Usage: node check-world.js ENTRY.js WIT_DIR WORLD     (build-plugin.sh runs it; WIT_DIR holds the plugin's WIT
// and the contract's, under deps/)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { checkWorld, definitions } from './define-plugin.js';

const [entry, witDir, worldName] = process.argv.slice(2);
if (!entry || !witDir || !worldName) {
  console.error('usage: node check-world.js ENTRY.js WIT_DIR WORLD');
  process.exit(2);
}

/** The .wit files under `dir`. */
function witFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      return witFiles(path);
    }
    return name.endsWith('.wit') ? [path] : [];
  });
}

/** `wasm-apiserver:plugin/crud-plugin@0.1.1`, `%crud-plugin` or `crud-plugin` -> `crud-plugin`. */
const localName = (name) => name.replace(/@.*$/, '').replace(/^.*\//, '').replace(/^%/, '');

/** Every world of the files, by local name: what it includes and exports. */
const worlds = new Map();
for (const file of witFiles(witDir)) {
  const text = readFileSync(file, 'utf8').replace(/\/\/.*$/gm, '');
  for (const [, name, body] of text.matchAll(/\bworld\s+(%?[\w-]+)\s*\{([^}]*)\}/g)) {
    const items = (keyword) => [...body.matchAll(new RegExp(`\\b${keyword}\\s+([^;\\s]+)\\s*;`, 'g'))]
      .map(([, item]) => localName(item));
    worlds.set(localName(name), { includes: items('include'), exports: items('export') });
  }
}

/** The interfaces a world exports, its includes' included. */
function exportsOf(name, seen = new Set()) {
  const world = worlds.get(name);
  if (!world || seen.has(name)) {
    return [];
  }
  seen.add(name);
  return [...world.exports, ...world.includes.flatMap((i) => exportsOf(i, seen))];
}

if (!worlds.has(localName(worldName))) {
  console.error(`error: no world ${worldName} in ${witDir}`);
  process.exit(1);
}
await import(pathToFileURL(resolve(entry)).href);
const exported = exportsOf(localName(worldName));
const problems = definitions.flatMap((definition) => checkWorld(definition, exported));
for (const problem of problems) {
  console.error(`error: ${problem}`);
}
process.exit(problems.length === 0 ? 0 : 1);
