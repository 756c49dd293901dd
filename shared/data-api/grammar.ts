import { DataApiError, parseError, unsupported } from './errors.js';

// A strict parser for the part of PostgREST's query grammar that supabase-js sends (docs/data-api.md
// "The subset"). It only decomposes text: names are checked against the schema cache later, and
// values only ever become bound parameters. Anything it does not know is a 400 naming it.

/** Plain SQL identifier: what every relation and column of the allowlist looks like. */
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_DEPTH = 8;

export type SelectItem =
  | { kind: 'star' }
  | { kind: 'column'; name: string; alias: string | null }
  | { kind: 'embed'; relation: string; alias: string | null; hint: string | null; inner: boolean; select: SelectItem[] };

export type FilterOperator = 'eq' | 'neq' | 'gt' | 'gte' | 'lt' | 'lte' | 'like' | 'ilike' | 'match' | 'imatch' | 'is' | 'isdistinct' | 'in' | 'cs' | 'cd' | 'ov';

/** `is.` accepts only these (PostgREST: null, not_null, true, false, unknown). */
export type IsValue = 'null' | 'not_null' | 'true' | 'false' | 'unknown';

export type Condition = { kind: 'condition'; column: string; negated: boolean; operator: FilterOperator; value: string | string[] };
export type LogicTree = { kind: 'logic'; operator: 'and' | 'or'; negated: boolean; children: Array<Condition | LogicTree> };
export type Filter = Condition | LogicTree;

export interface OrderTerm { column: string; descending: boolean; nulls: 'first' | 'last' | null }

const OPERATORS: ReadonlySet<string> = new Set(['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike', 'match', 'imatch', 'is', 'isdistinct', 'in', 'cs', 'cd', 'ov']);
const KNOWN_UNSUPPORTED_OPERATORS: ReadonlySet<string> = new Set(['fts', 'plfts', 'phfts', 'wfts', 'sl', 'sr', 'nxl', 'nxr', 'adj', 'all', 'any']);
const IS_VALUES: ReadonlySet<string> = new Set(['null', 'not_null', 'true', 'false', 'unknown']);

/** A column or relation name as written in a request: a plain identifier, nothing else. */
export function parseName(text: string, what: string): string {
  if (NAME.test(text) && text.length <= 63) return text;
  if (text.startsWith('"')) throw unsupported(`quoted identifier ${truncate(text)} in ${what}`, 'Name columns and relations without quotes.');
  if (/->|::/.test(text)) throw unsupported(`JSON paths and casts (${truncate(text)}) in ${what}`);
  throw parseError(`"${truncate(text)}" is not a valid name in ${what}`, 'Names are letters, digits and underscores.');
}

const truncate = (text: string) => (text.length > 60 ? `${text.slice(0, 60)}…` : text);

// ---------------------------------------------------------------------------------------------- select

/**
 * `select=` : items separated by commas; an item is `*`, `[alias:]column` or
 * `[alias:]relation[!hint][!inner](items)`. supabase-js removes whitespace outside quotes.
 */
export function parseSelect(text: string): SelectItem[] {
  let at = 0;
  const peek = () => text[at];

  function token(): string {
    const start = at;
    while (at < text.length && !':!(),'.includes(text[at]!)) at++;
    return text.slice(start, at);
  }

  function items(depth: number): SelectItem[] {
    if (depth > MAX_DEPTH) throw unsupported(`embedding deeper than ${MAX_DEPTH} levels`);
    const list: SelectItem[] = [];
    for (;;) {
      list.push(item(depth));
      if (peek() !== ',') return list;
      at++;
    }
  }

  function item(depth: number): SelectItem {
    if (text.startsWith('...', at)) throw unsupported('spread embeds (...relation)');
    let first = token();
    let alias: string | null = null;
    if (peek() === ':') {
      if (text[at + 1] === ':') throw unsupported(`casts (::) in select`);
      at++;
      alias = parseName(first, 'select (alias)');
      first = token();
    }
    if (first === '*') {
      if (alias) throw parseError('"*" cannot have an alias');
      return { kind: 'star' };
    }
    if (first === '' ) throw parseError(`Empty item in select at position ${at}`, truncate(text));
    const hints: string[] = [];
    while (peek() === '!') {
      at++;
      hints.push(token());
    }
    if (peek() === '(') {
      const relation = parseName(first, 'select (embedded relation)');
      at++;
      if (peek() === ')') throw unsupported(`aggregate or empty embed "${relation}()"`);
      const select = items(depth + 1);
      if (peek() !== ')') throw parseError(`Expected ")" in select at position ${at}`, truncate(text));
      at++;
      let inner = false;
      let hint: string | null = null;
      for (const h of hints) {
        if (h === 'inner') inner = true;
        else if (h === 'left') inner = false;
        else if (hint === null) hint = parseName(h, 'select (embed hint)');
        else throw unsupported(`more than one hint on embed "${relation}"`);
      }
      return { kind: 'embed', relation, alias, hint, inner, select };
    }
    if (hints.length) throw parseError(`"!" is only allowed on embedded relations ("${truncate(first)}")`);
    return { kind: 'column', name: parseName(first, 'select'), alias };
  }

  if (text === '') return [{ kind: 'star' }];
  const result = items(0);
  if (at !== text.length) throw parseError(`Unexpected "${text[at]}" in select at position ${at}`, truncate(text));
  return result;
}

// --------------------------------------------------------------------------------------------- filters

/** `col=[not.]op.value` (the key is the column, the value the operator and operand). */
export function parseCondition(column: string, text: string): Condition {
  return conditionOf(parseName(column, 'filter'), text, false);
}

function conditionOf(column: string, text: string, inLogicTree: boolean): Condition {
  let rest = text;
  let negated = false;
  if (rest.startsWith('not.')) {
    negated = true;
    rest = rest.slice(4);
  }
  const dot = rest.indexOf('.');
  const head = dot < 0 ? rest : rest.slice(0, dot);
  const operatorName = head.replace(/\(.*$/, '');
  if (!OPERATORS.has(head)) {
    if (KNOWN_UNSUPPORTED_OPERATORS.has(operatorName) || /\((any|all)\)$/.test(head)) throw unsupported(`filter operator "${truncate(head)}"`);
    throw parseError(`Unknown filter operator "${truncate(head)}" on "${column}"`, 'Operators: eq, neq, gt, gte, lt, lte, like, ilike, match, imatch, is, isdistinct, in, cs, cd, ov, with not.');
  }
  if (dot < 0) throw parseError(`Filter on "${column}" has no value ("${truncate(text)}")`);
  const operator = head as FilterOperator;
  const operand = rest.slice(dot + 1);
  if (operator === 'is') {
    if (!IS_VALUES.has(operand.toLowerCase())) throw parseError(`"is" takes null, not_null, true, false or unknown, not "${truncate(operand)}"`);
    return { kind: 'condition', column, negated, operator, value: operand.toLowerCase() };
  }
  if (operator === 'in') return { kind: 'condition', column, negated, operator, value: parseList(operand, column) };
  return { kind: 'condition', column, negated, operator, value: inLogicTree ? unquote(operand) : operand };
}

/** `(a,"b,c",d)` → ['a', 'b,c', 'd']; double quotes protect reserved characters, backslash escapes. */
function parseList(text: string, column: string): string[] {
  if (!text.startsWith('(') || !text.endsWith(')')) throw parseError(`"in" on "${column}" takes a list in parentheses: in.(a,b)`);
  const body = text.slice(1, -1);
  if (body === '') return [];
  return splitTopLevel(body).map(unquote);
}

function unquote(text: string): string {
  if (text.length >= 2 && text.startsWith('"') && text.endsWith('"')) return text.slice(1, -1).replace(/\\(.)/g, '$1');
  return text;
}

/** Splits on commas outside double-quoted items and parentheses. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"' && (i === start || '.(,'.includes(text[i - 1]!))) quoted = true; // a quote opens a value, not mid-word
    else if (c === '(' || c === '{' || c === '[') depth++;
    else if (c === ')' || c === '}' || c === ']') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
    if (depth < 0) throw parseError('Unbalanced parentheses in filter');
  }
  if (quoted || depth !== 0) throw parseError('Unbalanced quotes or parentheses in filter');
  parts.push(text.slice(start));
  return parts;
}

/** `or=(a.eq.1,and(b.gt.2,c.is.null))` and `and=(…)`, `not.or=(…)`: key names the operator. */
export function parseLogicTree(operator: 'and' | 'or', negated: boolean, text: string, depth = 0): LogicTree {
  if (depth > MAX_DEPTH) throw unsupported(`logic trees deeper than ${MAX_DEPTH} levels`);
  if (!text.startsWith('(') || !text.endsWith(')')) throw parseError(`"${operator}" takes a list in parentheses: ${operator}=(a.eq.1,b.eq.2)`);
  const children = splitTopLevel(text.slice(1, -1)).map((part): Condition | LogicTree => {
    const nested = /^(not\.)?(and|or)\(/.exec(part);
    if (nested) return parseLogicTree(nested[2] as 'and' | 'or', Boolean(nested[1]), part.slice(nested[0].length - 1), depth + 1);
    const dot = part.indexOf('.');
    if (dot < 0) throw parseError(`"${truncate(part)}" in ${operator}=() is not column.operator.value`);
    return conditionOf(parseName(part.slice(0, dot), `${operator}=()`), part.slice(dot + 1), true);
  });
  return { kind: 'logic', operator, negated, children };
}

// ------------------------------------------------------------------------------------ order and paging

/** `order=a.desc.nullslast,b` */
export function parseOrder(text: string): OrderTerm[] {
  return text.split(',').map((term) => {
    if (term.includes('(')) throw unsupported(`ordering by an embedded relation's column (${truncate(term)})`, 'Order the embedded relation itself with <relation>.order=');
    const [name = '', ...modifiers] = term.split('.');
    const column = parseName(name, 'order');
    let descending = false;
    let nulls: OrderTerm['nulls'] = null;
    for (const modifier of modifiers) {
      if (modifier === 'asc') descending = false;
      else if (modifier === 'desc') descending = true;
      else if (modifier === 'nullsfirst') nulls = 'first';
      else if (modifier === 'nullslast') nulls = 'last';
      else throw parseError(`Unknown order modifier "${truncate(modifier)}" on "${column}"`, 'Use asc, desc, nullsfirst, nullslast.');
    }
    return { column, descending, nulls };
  });
}

export function parseNonNegativeInteger(text: string, what: string): number {
  if (!/^\d{1,15}$/.test(text)) throw parseError(`"${what}" must be a non-negative integer, not "${truncate(text)}"`);
  return Number(text);
}

/** `Range: 0-9` (with Range-Unit: items): rows `from` to `to`, inclusive; `to` may be open (`10-`). */
export function parseRangeHeader(text: string): { offset: number; limit: number | null } {
  const match = /^\s*(\d{1,15})-(\d{0,15})\s*$/.exec(text);
  if (!match) throw parseError(`Range header "${truncate(text)}" is not "from-to"`);
  const from = Number(match[1]);
  if (match[2] === '') return { offset: from, limit: null };
  const to = Number(match[2]);
  if (to < from) throw new DataApiError(416, 'PGRST103', 'Requested range not satisfiable', `Range ${from}-${to} ends before it starts`);
  return { offset: from, limit: to - from + 1 };
}

/** `columns="a","b"` (what supabase-js sends with arrays): plain names, optionally quoted. */
export function parseColumnsParam(text: string): string[] {
  return text.split(',').map((part) => parseName(part.startsWith('"') && part.endsWith('"') && part.length > 2 ? part.slice(1, -1) : part, 'columns'));
}

/** `on_conflict=a,b` */
export function parseOnConflict(text: string): string[] {
  return text.split(',').map((part) => parseName(part, 'on_conflict'));
}
