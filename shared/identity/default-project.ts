import { randomBytes } from 'node:crypto';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { newId, slugify } from '../ids.js';
import { findFirstOwnedTeam, findSystemProjectOf, lockDefaultProjectOf } from './default-project-repository.js';
import { insertProject, insertTeam, upsertTeamMember } from './repository.js';

export const PERSONAL_DEFAULT = 'personal_default' as const;

const names = {
  zh: { team: '我的团队', project: '我的项目' },
  en: { team: 'Personal team', project: 'My project' },
} as const;

/**
 * `lang` from the body, else the first Accept-Language value, else by X-Server-Mode (`cn` servers
 * speak Chinese); used only to name what is created.
 */
export function chooseLanguage(bodyLang: string | undefined, acceptLanguage: string | undefined, serverMode: string | undefined): 'zh' | 'en' {
  const first = bodyLang?.trim() || acceptLanguage?.split(',')[0]?.split(';')[0]?.trim();
  if (first) return first.toLowerCase().startsWith('zh') ? 'zh' : 'en';
  return serverMode?.trim().toLowerCase() === 'cn' ? 'zh' : 'en';
}

export interface DefaultProjectView {
  team: { id: string; slug: string; name: string };
  project: { id: string; team_id: string; slug: string; name: string; system_purpose: typeof PERSONAL_DEFAULT };
  permissions: { storage_write: boolean; deletion_locked: boolean };
}

/**
 * Returns the caller's personal default project, creating it on first use in an active team the
 * caller owns (never a team they were invited to). Serialized per user with an advisory lock, so
 * concurrent first calls create exactly one.
 */
export async function ensureDefaultProject(db: Database, userId: string, lang: 'zh' | 'en'): Promise<DefaultProjectView> {
  return db.transaction().execute(async (trx) => {
    await lockDefaultProjectOf(trx, userId);
    const existing = await findSystemProjectOf(trx, userId, PERSONAL_DEFAULT);
    if (existing) {
      if (existing.owner_id !== userId || existing.team_deleted_at) {
        throw new AppError(409, 'personal_default_project_invalid_team', 'The personal default project sits in a team you no longer own or that was deleted');
      }
      return view({ id: existing.team_id, slug: existing.team_slug, name: existing.team_name }, existing);
    }

    let team = await findFirstOwnedTeam(trx, userId);
    if (!team) {
      const name = names[lang].team;
      team = await insertTeam(trx, { id: newId(), slug: `${slugify(name) === 'item' ? 'team' : slugify(name)}-${randomBytes(3).toString('hex')}`, name, owner_id: userId, plan_code: 'free' });
      await upsertTeamMember(trx, { team_id: team.id, user_id: userId, role: 'owner' });
    }
    const name = names[lang].project;
    const project = await insertProject(trx, {
      id: newId(), team_id: team.id, slug: `default-${randomBytes(3).toString('hex')}`, name,
      created_by: userId, system_purpose: PERSONAL_DEFAULT, deletion_locked: true,
    });
    return view(team, project);
  });
}

function view(team: { id: string; slug: string; name: string }, project: { id: string; team_id: string; slug: string; name: string; deletion_locked: boolean }): DefaultProjectView {
  return {
    team: { id: team.id, slug: team.slug, name: team.name },
    project: { id: project.id, team_id: project.team_id, slug: project.slug, name: project.name, system_purpose: PERSONAL_DEFAULT },
    permissions: { storage_write: true, deletion_locked: project.deletion_locked },
  };
}
