import { isUuid } from '../ids.js';

/**
 * The topics broadcast and presence work on (CONTRACTS "Realtime"): `team:<id>`, `project:<id>`,
 * `document:<id>`, for members of that team. supabase-js prefixes every channel name with
 * `realtime:`; the part after it is the sub-topic.
 */
export type MemberTopic = { kind: 'team' | 'project' | 'document'; id: string };

export const TOPIC_PREFIX = 'realtime:';

/** The sub-topic of a channel topic, or null when it is not a `realtime:` topic. */
export function subTopicOf(topic: string): string | null {
  return topic.startsWith(TOPIC_PREFIX) ? topic.slice(TOPIC_PREFIX.length) : null;
}

/**
 * The member topic a sub-topic names; null for any other name (usable only for postgres_changes).
 * `team:not-a-uuid` is still a member topic (refused at join like another team's), so a typo
 * never silently becomes an open room.
 */
export function memberTopicOf(subTopic: string): MemberTopic | null {
  const match = /^(team|project|document):(.*)$/.exec(subTopic);
  if (!match) return null;
  return { kind: match[1] as MemberTopic['kind'], id: match[2]! };
}

export const isWellFormedMemberTopic = (topic: MemberTopic): boolean => isUuid(topic.id);
