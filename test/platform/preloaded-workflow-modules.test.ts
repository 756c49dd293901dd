import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { workflowsEntry } from '../../worker/bundle.js';

// The worker bundle preloads the workflows entry and everything it imports (worker/bundle.ts): the
// SDK then evaluates those modules once per reused V8 context and shares them between every
// workflow that runs in it, instead of evaluating them again for each run. That is only safe for
// modules that keep no state of their own between calls; this test holds every module the entry
// reaches to that, so a `let` or a mutable Map at module level fails here, not in a run that reads
// another run's state.

const root = fileURLToPath(new URL('../..', import.meta.url));

/** The project's modules the entry imports for their values (type-only imports are erased), transitively. */
function reachableModules(entry: string): string[] {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
    for (const statement of source.statements) {
      const isImport = ts.isImportDeclaration(statement) && !statement.importClause?.isTypeOnly;
      const isReExport = ts.isExportDeclaration(statement) && !statement.isTypeOnly;
      if (!isImport && !isReExport) continue;
      const specifier = (statement.moduleSpecifier as ts.StringLiteral | undefined)?.text;
      if (!specifier?.startsWith('.')) continue;
      const target = path.resolve(path.dirname(file), specifier.replace(/\.js$/, '.ts'));
      if (existsSync(target)) visit(target);
    }
  };
  visit(entry);
  return [...seen];
}

const mutableContainer = /^new (Map|Set|WeakMap|WeakSet)\b/;

/** Module-level declarations that can carry state from one workflow to the next. */
function moduleState(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    const { flags, declarations } = statement.declarationList;
    for (const declaration of declarations) {
      const name = declaration.name.getText(source);
      const where = `${path.relative(root, file)}: ${name}`;
      if (!(flags & (ts.NodeFlags.Const | ts.NodeFlags.Let))) found.push(`${where} (var)`);
      else if (flags & ts.NodeFlags.Let) found.push(`${where} (let)`);
      else if (declaration.initializer && mutableContainer.test(declaration.initializer.getText(source))
        && !/^Readonly(Map|Set)</.test(declaration.type?.getText(source) ?? '')) found.push(`${where} (a mutable ${declaration.initializer.getText(source).split(/[(<]/)[0]!.slice(4)})`);
    }
  }
  return found;
}

describe('modules the worker bundle preloads and shares between workflows', () => {
  const modules = reachableModules(workflowsEntry);

  it('are every module the workflows entry imports: the run workflow and the pure engine among them', () => {
    const names = modules.map((file) => path.relative(root, file));
    expect(names).toEqual(expect.arrayContaining(['workflows/app-runs/run-app.ts', 'shared/app-runs/evaluate.ts', 'shared/app-runs/block-schedule.ts']));
  });

  it('hold no state at module level: no let or var, no Map or Set that is not read-only', () => {
    expect(modules.flatMap(moduleState)).toEqual([]);
  });

  it('the check sees such state', () => {
    const probe = path.join(root, 'test/platform/fixtures/module-state-probe.ts');
    expect(moduleState(probe)).toEqual([
      'test/platform/fixtures/module-state-probe.ts: counter (let)',
      'test/platform/fixtures/module-state-probe.ts: legacy (var)',
      'test/platform/fixtures/module-state-probe.ts: cache (a mutable Map)',
    ]);
  });
});
