import { DataApiError, parseError, unsupported } from './errors.js';
import {
  parseColumnsParam, parseCondition, parseLogicTree, parseNonNegativeInteger, parseOnConflict, parseOrder, parseRangeHeader, parseSelect,
  type SelectItem,
} from './grammar.js';
import { DATA_API_SCHEMA } from './relations.js';
import { emptyModifiers, type LevelModifiers } from './sql-builder.js';

// The HTTP side of a PostgREST request: query parameters sorted into the select list, per-level
// modifiers (root '' and embed paths), write options; the Prefer, Accept, profile and Range headers.

export type Headers = Record<string, string | string[] | undefined>;

export interface QueryParts {
  select: SelectItem[];
  modifiers: Map<string, LevelModifiers>;
  onConflict: string[] | null;
  columns: string[] | null;
  /** Parameters that are neither reserved nor filters' syntax: RPC arguments on GET. */
  plain: Map<string, string>;
}

const RESERVED = new Set(['select', 'order', 'limit', 'offset', 'on_conflict', 'columns', 'or', 'and', 'not.or', 'not.and']);
const LEVEL_KEYS = /^(.+)\.(order|limit|offset|or|and|not\.or|not\.and)$/;

function levelOf(modifiers: Map<string, LevelModifiers>, path: string): LevelModifiers {
  let level = modifiers.get(path);
  if (!level) modifiers.set(path, (level = emptyModifiers()));
  return level;
}

function applyLevelKey(level: LevelModifiers, key: string, value: string): void {
  if (key === 'order') level.order.push(...parseOrder(value));
  else if (key === 'limit') level.limit = parseNonNegativeInteger(value, 'limit');
  else if (key === 'offset') level.offset = parseNonNegativeInteger(value, 'offset');
  else {
    const negated = key.startsWith('not.');
    level.filters.push(parseLogicTree(negated ? (key.slice(4) as 'and' | 'or') : (key as 'and' | 'or'), negated, value));
  }
}

/** Sorts the query string. `filtersAllowed: false` (RPC) keeps non-reserved parameters as plain values. */
export function parseQuery(query: URLSearchParams, options: { filtersAllowed: boolean }): QueryParts {
  const parts: QueryParts = { select: [{ kind: 'star' }], modifiers: new Map(), onConflict: null, columns: null, plain: new Map() };
  const seen = new Set<string>();
  for (const [key, value] of query) {
    if (key === 'apikey') continue;
    if (['select', 'limit', 'offset', 'on_conflict', 'columns'].includes(key)) {
      if (seen.has(key)) throw parseError(`"${key}" is given more than once`);
      seen.add(key);
    }
    if (key === 'select') parts.select = parseSelect(value);
    else if (key === 'on_conflict') parts.onConflict = parseOnConflict(value);
    else if (key === 'columns') parts.columns = parseColumnsParam(value);
    else if (RESERVED.has(key)) applyLevelKey(levelOf(parts.modifiers, ''), key, value);
    else if (!options.filtersAllowed) {
      if (parts.plain.has(key)) throw parseError(`"${key}" is given more than once`);
      parts.plain.set(key, value);
    } else {
      const level = LEVEL_KEYS.exec(key);
      if (level) applyLevelKey(levelOf(parts.modifiers, level[1]!), level[2]!, value);
      else {
        const dot = key.lastIndexOf('.');
        const path = dot < 0 ? '' : key.slice(0, dot);
        levelOf(parts.modifiers, path).filters.push(parseCondition(dot < 0 ? key : key.slice(dot + 1), value));
      }
    }
  }
  return parts;
}

const header = (headers: Headers, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
};

export interface Preferences {
  representation: boolean;
  count: boolean;
  resolution: 'merge' | 'ignore' | null;
  missingDefault: boolean;
}

/** `Prefer: return=…, count=…, resolution=…, missing=…` (supabase-js appends several, comma-separated). */
export function parsePrefer(headers: Headers): Preferences {
  const prefs: Preferences = { representation: false, count: false, resolution: null, missingDefault: false };
  const text = header(headers, 'prefer');
  if (!text) return prefs;
  let strict = false;
  const unknown: string[] = [];
  for (const raw of text.split(',')) {
    const item = raw.trim();
    if (item === '') continue;
    const [name, value] = item.split('=', 2).map((s) => s.trim());
    if (name === 'return') {
      if (value === 'representation') prefs.representation = true;
      else if (value === 'minimal' || value === 'headers-only') prefs.representation = false;
      else unknown.push(item);
    } else if (name === 'count') {
      // planned and estimated are answered with the exact count: a correct estimate.
      if (value === 'exact' || value === 'planned' || value === 'estimated') prefs.count = true;
      else unknown.push(item);
    } else if (name === 'resolution') {
      if (value === 'merge-duplicates') prefs.resolution = 'merge';
      else if (value === 'ignore-duplicates') prefs.resolution = 'ignore';
      else unknown.push(item);
    } else if (name === 'missing') {
      prefs.missingDefault = value === 'default';
    } else if (name === 'handling') {
      strict = value === 'strict';
    } else if (name === 'tx' || name === 'max-affected' || name === 'timezone' || name === 'params') {
      throw unsupported(`Prefer: ${item}`);
    } else unknown.push(item);
  }
  if (strict && unknown.length) throw new DataApiError(400, 'PGRST122', `Invalid preferences given with handling=strict`, `Invalid preferences: ${unknown.join(', ')}`);
  return prefs;
}

/** `application/vnd.pgrst.object+json` asks for one object (`.single()`); JSON arrays otherwise. */
export function parseAccept(headers: Headers): { single: boolean } {
  const text = header(headers, 'accept');
  if (!text) return { single: false };
  const types = text.split(',').map((t) => t.trim().toLowerCase());
  for (const type of types) {
    const [media = '', ...params] = type.split(';').map((s) => s.trim());
    const stripped = params.some((p) => p.replace(/\s/g, '') === 'nulls=stripped');
    if (media === 'application/vnd.pgrst.object+json' || media === 'application/vnd.pgrst.object') {
      if (stripped) throw notAcceptable(type);
      return { single: true };
    }
    if (media === 'application/json' || media === 'application/vnd.pgrst.array+json' || media === '*/*' || media === 'application/*') {
      if (stripped) throw notAcceptable(type);
      return { single: false };
    }
  }
  throw notAcceptable(text);
}

const notAcceptable = (type: string) => new DataApiError(406, 'PGRST107', `None of these media types are available: ${type}`, null, 'This data API answers JSON: application/json or application/vnd.pgrst.object+json.');

/** Accept-Profile (reads) / Content-Profile (writes): only the one exposed schema. */
export function checkProfile(headers: Headers, method: string): void {
  const name = method === 'GET' || method === 'HEAD' ? 'accept-profile' : 'content-profile';
  const profile = header(headers, name);
  if (profile !== undefined && profile !== DATA_API_SCHEMA) {
    throw new DataApiError(406, 'PGRST106', `The schema must be one of the following: ${DATA_API_SCHEMA}`);
  }
}

/** `Range` with `Range-Unit: items` (GET only), applied to the root level. */
export function applyRangeHeader(headers: Headers, root: LevelModifiers): void {
  const range = header(headers, 'range');
  if (!range) return;
  const unit = header(headers, 'range-unit');
  if (unit !== undefined && unit !== 'items') throw unsupported(`Range-Unit ${unit}`);
  if (root.limit !== null || root.offset > 0) throw unsupported('a Range header together with limit or offset');
  const { offset, limit } = parseRangeHeader(range);
  root.offset = offset;
  root.limit = limit;
}
