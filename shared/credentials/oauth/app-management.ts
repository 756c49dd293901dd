import type { Selectable } from 'kysely';
import { isPlatformAdmin } from '../../access/service.js';
import type { Database } from '../../db/client.js';
import type { OAuthAppsTable, OAuthClientsTable, OAuthReviewStatus } from '../../db/types.js';
import { AppError, notFound } from '../../errors.js';
import { isUuid, newId } from '../../ids.js';
import { checkClient, newClientId, type NewClient } from './apps.js';
import * as manage from './app-management-repository.js';
import * as repo from './repository.js';

// OAuth apps over HTTP (spec §5.1, §5.2, §3.5; docs/oauth.md "App lifecycle"): a developer creates,
// reads, edits and deletes their own apps; a platform administrator reviews them, forces them
// offline and manages the reserved official ones. Delete, offline and reject revoke every grant and
// token of the app in the same transaction that changes the app.

export interface OAuthClientView {
  clientId: string;
  platform: NewClient['platform'];
  redirectUris: string[];
  scopes: string[];
  createdAt: string;
}

export interface OAuthAppView {
  id: string;
  ownerId: string;
  name: string;
  logoUrl: string | null;
  reviewStatus: OAuthReviewStatus;
  reserved: boolean;
  offline: boolean;
  disabledAt: string | null;
  reviewedAt: string | null;
  reviewNote: string | null;
  createdAt: string;
  clients: OAuthClientView[];
}

/** Who is asking: a signed-in user, and whether they are a platform administrator. */
interface Manager { userId: string; isAdmin: boolean }

type AppRow = Selectable<OAuthAppsTable>;
type ClientRow = Selectable<OAuthClientsTable>;

const appNotFound = (appId: string) => notFound(`OAuth app ${appId}`);
const adminRequired = (action: string) => new AppError(403, 'platform_admin_required', `Only platform administrators may ${action}`);
const reservedApp = () => new AppError(403, 'reserved_app', 'This is a reserved official app: only platform administrators may change it');

function toView(app: AppRow, clients: ClientRow[]): OAuthAppView {
  return {
    id: app.id, ownerId: app.owner_id, name: app.name, logoUrl: app.logo_url, reviewStatus: app.review_status,
    reserved: app.reserved, offline: app.disabled_at !== null, disabledAt: app.disabled_at?.toISOString() ?? null,
    reviewedAt: app.reviewed_at?.toISOString() ?? null, reviewNote: app.review_note, createdAt: app.created_at.toISOString(),
    clients: clients.filter((c) => c.app_id === app.id).map((c) => ({
      clientId: c.client_id, platform: c.platform, redirectUris: c.redirect_uris, scopes: c.allowed_scopes, createdAt: c.created_at.toISOString(),
    })),
  };
}

async function viewOf(db: Database, app: AppRow): Promise<OAuthAppView> {
  return toView(app, await manage.listClientsOfApps(db, [app.id]));
}

async function managerOf(db: Database, userId: string): Promise<Manager> {
  return { userId, isAdmin: await isPlatformAdmin(db, userId) };
}

/** Another user's app answers exactly like a missing one (404); administrators see every app. */
const maySee = (app: AppRow, who: Manager) => who.isAdmin || app.owner_id === who.userId;

/** Editing and deleting: the developer, unless the app is reserved; administrators always. */
function requireMayChange(app: AppRow, who: Manager): void {
  if (!maySee(app, who)) throw appNotFound(app.id);
  if (app.reserved && !who.isAdmin) throw reservedApp();
}

/** Runs `work` on the locked live app the caller may see (404 otherwise). */
async function withLockedApp<T>(db: Database, who: Manager, appId: string, work: (trx: Database, app: AppRow) => Promise<T>): Promise<T> {
  if (!isUuid(appId)) throw appNotFound(appId);
  return db.transaction().execute(async (trx) => {
    const app = await manage.lockLiveApp(trx, appId);
    if (!app || !maySee(app, who)) throw appNotFound(appId);
    return work(trx, app);
  });
}

/** Of the tokens just revoked, the access tokens that were still usable: what `revokedCount` counts. */
const stillUsableAccess = (revoked: Array<{ kind: string; expires_at: Date }>, now: Date) =>
  revoked.filter((t) => t.kind === 'access' && t.expires_at.getTime() > now.getTime()).length;

/** Revokes every grant and token of the app; counts the access tokens that were still usable. */
async function revokeEverything(trx: Database, appId: string, now: Date): Promise<number> {
  return stillUsableAccess(await manage.revokeAppTokens(trx, appId, now), now);
}

function cleanName(name: string): string {
  const trimmed = name.trim();
  if (!trimmed || trimmed.length > 100) throw new AppError(400, 'invalid_request', 'App name must be 1 to 100 characters');
  return trimmed;
}

const dedupe = (scopes: readonly string[]) => [...new Set(scopes)];

export interface CreateAppInput { name: string; logoUrl?: string | null; reserved?: boolean; clients: NewClient[] }

/**
 * A new app with its clients, owned by the caller and private to them until reviewed. A reserved
 * (official) app may only be created by an administrator and is approved at once.
 */
export async function createApp(db: Database, userId: string, input: CreateAppInput): Promise<OAuthAppView> {
  const who = await managerOf(db, userId);
  if (input.reserved && !who.isAdmin) throw adminRequired('create reserved apps');
  const name = cleanName(input.name);
  if (input.clients.length === 0) throw new AppError(400, 'invalid_request', 'An app needs at least one client');
  input.clients.forEach(checkClient);
  return db.transaction().execute(async (trx) => {
    const app = await repo.insertApp(trx, {
      id: newId(), owner_id: userId, name, logo_url: input.logoUrl ?? null,
      review_status: input.reserved ? 'approved' : 'private', reserved: input.reserved ?? false,
      ...(input.reserved ? { reviewed_at: new Date(), reviewed_by: userId } : {}),
    });
    const clients: ClientRow[] = [];
    // Listed in the order given: one transaction's now() would tie, so each client gets its own millisecond.
    const start = Date.now();
    for (const [i, client] of input.clients.entries()) {
      clients.push(await repo.insertClient(trx, {
        id: newId(), app_id: app.id, client_id: newClientId(), platform: client.platform,
        redirect_uris: client.redirectUris, allowed_scopes: dedupe(client.scopes), created_at: new Date(start + i),
      }));
    }
    return toView(app, clients);
  });
}

/**
 * The caller's live apps, newest first; `all` (administrators only, else 403) lists everyone's, so
 * `all` with `reviewStatus: 'private'` is the review queue.
 */
export async function listApps(
  db: Database,
  userId: string,
  query: { all?: boolean; reviewStatus?: OAuthReviewStatus; limit?: number; offset?: number },
): Promise<OAuthAppView[]> {
  if (query.all && !(await managerOf(db, userId)).isAdmin) throw adminRequired('list every app');
  const apps = await manage.listLiveApps(db, {
    ownerId: query.all ? undefined : userId, reviewStatus: query.reviewStatus, limit: query.limit ?? 100, offset: query.offset ?? 0,
  });
  const clients = await manage.listClientsOfApps(db, apps.map((a) => a.id));
  return apps.map((app) => toView(app, clients));
}

export async function getApp(db: Database, userId: string, appId: string): Promise<OAuthAppView> {
  const who = await managerOf(db, userId);
  const app = isUuid(appId) ? await manage.findLiveApp(db, appId) : undefined;
  if (!app || !maySee(app, who)) throw appNotFound(appId);
  return viewOf(db, app);
}

export interface UpdateAppInput {
  name?: string;
  logoUrl?: string | null;
  clients?: Array<{ clientId: string; redirectUris?: string[]; scopes?: string[] }>;
}

/**
 * Name, logo and existing clients' redirect URIs and scopes. A rejected app the developer edits goes
 * back to review (`private`): that is how they answer a rejection. An approved app stays approved.
 */
export async function updateApp(db: Database, userId: string, appId: string, input: UpdateAppInput): Promise<OAuthAppView> {
  const who = await managerOf(db, userId);
  const name = input.name === undefined ? undefined : cleanName(input.name);
  return withLockedApp(db, who, appId, async (trx, app) => {
    requireMayChange(app, who);
    const clients = await manage.listClientsOfApps(trx, [app.id]);
    for (const change of input.clients ?? []) {
      const client = clients.find((c) => c.client_id === change.clientId);
      if (!client) throw notFound(`OAuth client ${change.clientId}`);
      const redirectUris = change.redirectUris ?? client.redirect_uris;
      const scopes = change.scopes ? dedupe(change.scopes) : client.allowed_scopes;
      checkClient({ platform: client.platform, redirectUris, scopes });
      await manage.updateClient(trx, client.id, { redirect_uris: redirectUris, allowed_scopes: scopes });
    }
    const resubmitted = app.review_status === 'rejected' && !who.isAdmin;
    const patch = {
      ...(name !== undefined ? { name } : {}),
      ...(input.logoUrl !== undefined ? { logo_url: input.logoUrl } : {}),
      ...(resubmitted ? { review_status: 'private' as const } : {}),
    };
    // A PATCH of clients only leaves the app's row as it is (an empty SET is not SQL).
    const updated = Object.keys(patch).length ? await manage.updateApp(trx, app.id, patch) : app;
    return viewOf(trx, updated);
  });
}

/** Another independent client id (web, desktop, mobile) of the app; `sub` stays the user's global id. */
export async function addClient(db: Database, userId: string, appId: string, client: NewClient): Promise<OAuthClientView> {
  const who = await managerOf(db, userId);
  checkClient(client);
  return withLockedApp(db, who, appId, async (trx, app) => {
    requireMayChange(app, who);
    const row = await repo.insertClient(trx, {
      id: newId(), app_id: app.id, client_id: newClientId(), platform: client.platform,
      redirect_uris: client.redirectUris, allowed_scopes: dedupe(client.scopes),
    });
    return { clientId: row.client_id, platform: row.platform, redirectUris: row.redirect_uris, scopes: row.allowed_scopes, createdAt: row.created_at.toISOString() };
  });
}

/**
 * Removes one client of the app: its grants and tokens are revoked in the same transaction, its
 * client id is unknown from then on (authorize, token, revoke). An app keeps at least one client
 * (409 `last_client`: delete the app instead). A client that is not one of this app's live clients
 * is 404, as in PATCH.
 */
export async function removeClient(db: Database, userId: string, appId: string, clientId: string): Promise<{ revokedCount: number }> {
  const who = await managerOf(db, userId);
  return withLockedApp(db, who, appId, async (trx, app) => {
    requireMayChange(app, who);
    // The app's row lock serialises removals, so two removals cannot each leave the other's client last.
    const clients = await manage.listClientsOfApps(trx, [app.id]);
    const client = clients.find((c) => c.client_id === clientId);
    if (!client) throw notFound(`OAuth client ${clientId}`);
    if (clients.length === 1) throw new AppError(409, 'last_client', 'An app keeps at least one client: delete the app instead');
    const now = new Date();
    return { revokedCount: stillUsableAccess(await manage.removeClientAndRevoke(trx, client.id, now), now) };
  });
}

/** Soft delete: the app leaves every list, and every grant and token of it is revoked at once. */
export async function deleteApp(db: Database, userId: string, appId: string): Promise<{ revokedCount: number }> {
  const who = await managerOf(db, userId);
  return withLockedApp(db, who, appId, async (trx, app) => {
    requireMayChange(app, who);
    const now = new Date();
    await manage.updateApp(trx, app.id, { deleted_at: now });
    return { revokedCount: await revokeEverything(trx, app.id, now) };
  });
}

/**
 * An administrator's review. Approve: anyone may authorize the app. Reject: nobody may, and every
 * grant and token it has (its author's, while it was private) is revoked.
 */
export async function reviewApp(
  db: Database,
  userId: string,
  appId: string,
  input: { decision: 'approve' | 'reject'; note?: string | null },
): Promise<{ app: OAuthAppView; revokedCount: number }> {
  const who = await managerOf(db, userId);
  // Asked before the app is looked up, so a non-administrator learns nothing about which ids exist.
  if (!who.isAdmin) throw adminRequired('review apps');
  return withLockedApp(db, who, appId, async (trx, app) => {
    const now = new Date();
    const updated = await manage.updateApp(trx, app.id, {
      review_status: input.decision === 'approve' ? 'approved' : 'rejected', reviewed_at: now, reviewed_by: userId, review_note: input.note ?? null,
    });
    const revokedCount = input.decision === 'reject' ? await revokeEverything(trx, app.id, now) : 0;
    return { app: await viewOf(trx, updated), revokedCount };
  });
}

/**
 * An administrator forcing the app offline (every grant and token revoked at once; authorize and
 * refresh refused) or bringing it back (users authorize again: their old tokens stay revoked).
 */
export async function setAppOffline(
  db: Database,
  userId: string,
  appId: string,
  offline: boolean,
): Promise<{ app: OAuthAppView; revokedCount: number }> {
  const who = await managerOf(db, userId);
  if (!who.isAdmin) throw adminRequired(offline ? 'force apps offline' : 'bring apps back online');
  return withLockedApp(db, who, appId, async (trx, app) => {
    const now = new Date();
    const updated = await manage.updateApp(trx, app.id, { disabled_at: offline ? (app.disabled_at ?? now) : null });
    const revokedCount = offline ? await revokeEverything(trx, app.id, now) : 0;
    return { app: await viewOf(trx, updated), revokedCount };
  });
}

