import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';

// Custom search attributes: what an operator filters executions by in the Temporal UI and CLI
// (`temporal workflow list --query "WfTeamId='…'"`). Keyword = exact match. Every server the service
// talks to must have them registered (the dev server through `--search-attribute`, docker-compose
// through its one-shot `temporal-namespace` service, the topology at each start), or starts that set them are refused.
// Safe in workflow code: only @temporalio/common, no I/O.

export const searchAttributeKeys = {
  teamId: defineSearchAttributeKey('WfTeamId', SearchAttributeType.KEYWORD),
  projectId: defineSearchAttributeKey('WfProjectId', SearchAttributeType.KEYWORD),
  deploymentId: defineSearchAttributeKey('WfDeploymentId', SearchAttributeType.KEYWORD),
  documentId: defineSearchAttributeKey('WfDocumentId', SearchAttributeType.KEYWORD),
  triggerSource: defineSearchAttributeKey('WfTriggerSource', SearchAttributeType.KEYWORD),
} as const;

/**
 * Set by an app run while it waits on a `wait` or `approval` block (the block's type), removed when
 * it goes on (docs/long-runs.md): `WfWaiting='approval'` lists the runs waiting for a person. Not a
 * start field: the workflow sets it itself, and only runs that wait ever do.
 */
export const waitingSearchAttribute = defineSearchAttributeKey('WfWaiting', SearchAttributeType.KEYWORD);

/** Every custom search attribute of the service, to register on a Temporal server. */
export const searchAttributeDefinitions: ReadonlyArray<{ name: string; type: SearchAttributeType }> =
  [...Object.values(searchAttributeKeys), waitingSearchAttribute].map(({ name, type }) => ({ name, type }));

/** The type names the Temporal CLI takes (`--search-attribute Name=Keyword`, `--type Keyword`). */
export const temporalCliTypeName: Record<SearchAttributeType, string> = {
  TEXT: 'Text', KEYWORD: 'Keyword', INT: 'Int', DOUBLE: 'Double', BOOL: 'Bool', DATETIME: 'Datetime', KEYWORD_LIST: 'KeywordList',
};

/** `WfTeamId` of the service's own workflows (the platform probe): team ids are UUIDs, so it never collides. */
export const PLATFORM_TEAM_ID = 'platform';

export interface WorkflowSearchMeta {
  teamId: string;
  projectId?: string | null;
  deploymentId?: string | null;
  documentId?: string | null;
  /** How the execution was started: `api`, `webhook`, `schedule`, `doctor` … */
  triggerSource?: string | null;
}

/**
 * The `typedSearchAttributes` of a start (`client.workflow.start`, `executeChild`, a schedule
 * action): one Keyword per known field; null, undefined and empty fields are left out.
 */
export function workflowSearchAttributes(meta: WorkflowSearchMeta): SearchAttributePair[] {
  const pairs: SearchAttributePair[] = [];
  for (const field of Object.keys(searchAttributeKeys) as Array<keyof typeof searchAttributeKeys>) {
    const value = meta[field];
    if (value === null || value === undefined || value === '') continue;
    pairs.push({ key: searchAttributeKeys[field], value });
  }
  return pairs;
}

/** One line, at most `max` characters, for a `staticSummary` (the UI shows it next to the workflow id). */
function oneLine(text: string, max = 80): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** `staticSummary` of an app run: `Run of "My App" v1.2`. */
export function runSummary(appName: string, version: string): string {
  const v = version.trim();
  return `Run of "${oneLine(appName)}" ${/^v/i.test(v) ? v : `v${v}`}`;
}

/** `staticSummary` of a binding's polling workflow: `New mail → "Triage"`. */
export function connectorPollSummary(appName: string): string {
  return `New mail → "${oneLine(appName)}"`;
}

/** `staticSummary` of the runs a schedule starts: `Scheduled run of "nightly"`. */
export function scheduledRunSummary(scheduleName: string): string {
  return `Scheduled run of "${oneLine(scheduleName)}"`;
}
