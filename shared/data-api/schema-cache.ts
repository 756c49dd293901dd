import type { Database } from '../db/client.js';
import { DATA_API_SCHEMA, dataApiFunctions, dataApiRelations } from './relations.js';
import { findColumns, findConstraints, findFunctions, findRelations } from './schema-repository.js';

export interface ColumnInfo { name: string; type: string; visible: boolean }
export interface ForeignKey { name: string; from: string; columns: string[]; to: string; toColumns: string[] }

export interface RelationInfo {
  name: string;
  isView: boolean;
  columns: ReadonlyMap<string, ColumnInfo>;
  /** What `*` means: the columns the `authenticated` role may read (secret columns stay out). */
  visibleColumns: readonly string[];
  primaryKey: readonly string[];
  /** Foreign keys of this relation to other allowlisted relations. */
  outgoing: readonly ForeignKey[];
  /** Foreign keys of other allowlisted relations to this one. */
  incoming: readonly ForeignKey[];
}

export interface FunctionInfo {
  name: string;
  inputArgs: readonly string[];
  /** Inputs without a default. */
  requiredArgs: readonly string[];
  returnsSet: boolean;
  returnsComposite: boolean;
  returnsVoid: boolean;
}

export interface Schema {
  relations: ReadonlyMap<string, RelationInfo>;
  functions: ReadonlyMap<string, readonly FunctionInfo[]>;
}

/**
 * The shape of the allowlisted relations and functions, read from pg_catalog once and kept; it is
 * read again when a statement fails because the schema moved under it (a migration ran:
 * undefined column, table or function), so a deployment needs no restart.
 */
export class SchemaCache {
  private current: Promise<Schema> | null = null;
  private loadedAt = 0;

  constructor(private readonly db: Database) {}

  get(): Promise<Schema> {
    if (!this.current) this.loadedAt = Date.now();
    this.current ??= load(this.db).catch((error: unknown) => {
      this.current = null;
      throw error;
    });
    return this.current;
  }

  /** Read the catalog again on next use; at most every 5 s, so failing requests cannot make it a loop. */
  invalidate(): void {
    if (Date.now() - this.loadedAt >= 5_000) this.current = null;
  }
}

async function load(db: Database): Promise<Schema> {
  const [relationRows, columnRows, constraintRows, functionRows] = await Promise.all([
    findRelations(db, DATA_API_SCHEMA, dataApiRelations),
    findColumns(db, DATA_API_SCHEMA, dataApiRelations),
    findConstraints(db, DATA_API_SCHEMA, dataApiRelations),
    findFunctions(db, DATA_API_SCHEMA, dataApiFunctions),
  ]);
  const present = new Set(relationRows.map((r) => r.name));
  const foreignKeys: ForeignKey[] = constraintRows
    .filter((c) => c.kind === 'f' && c.referenced !== null && present.has(c.referenced))
    .map((c) => ({ name: c.name, from: c.relation, columns: c.columns, to: c.referenced!, toColumns: c.referencedColumns }));
  const relations = new Map<string, RelationInfo>();
  for (const row of relationRows) {
    const columns = columnRows.filter((c) => c.relation === row.name);
    relations.set(row.name, {
      name: row.name,
      isView: row.kind === 'v' || row.kind === 'm',
      columns: new Map(columns.map((c) => [c.name, { name: c.name, type: c.type, visible: c.visible }])),
      visibleColumns: columns.filter((c) => c.visible).map((c) => c.name),
      primaryKey: constraintRows.find((c) => c.relation === row.name && c.kind === 'p')?.columns ?? [],
      outgoing: foreignKeys.filter((fk) => fk.from === row.name),
      incoming: foreignKeys.filter((fk) => fk.to === row.name),
    });
  }
  const functions = new Map<string, FunctionInfo[]>();
  for (const row of functionRows) {
    const modes = row.argModes ?? [];
    const names = row.argNames ?? [];
    // proargnames covers every argument (in, out, table); the inputs are modes i, b, v (or all, when no modes).
    const inputs = names.filter((_, i) => modes.length === 0 || ['i', 'b', 'v'].includes(modes[i]!)).slice(0, row.argCount);
    const info: FunctionInfo = {
      name: row.name,
      inputArgs: inputs,
      requiredArgs: inputs.slice(0, row.argCount - row.defaultCount),
      returnsSet: row.returnsSet,
      returnsComposite: row.returnsComposite,
      returnsVoid: row.returnType === 'void',
    };
    functions.set(row.name, [...(functions.get(row.name) ?? []), info]);
  }
  return { relations, functions };
}
