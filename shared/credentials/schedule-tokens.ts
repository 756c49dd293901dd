import { SignJWT, createLocalJWKSet, importJWK, jwtVerify, type CryptoKey } from 'jose';
import { SERVICE_KEY_ALG, loadOrCreateSigningKey } from './service-keys.js';

/** Schedule tokens are JWTs this service signs for itself, told apart from user JWTs by issuer. */
export const SCHEDULE_TOKEN_ISSUER = 'workflow-app-service/schedules';
const AUDIENCE = 'workflow-app-service/runs';

export interface ScheduleClaims { scheduleId: string; teamId: string; deploymentId: string }

export interface ScheduleTokens {
  issue(claims: ScheduleClaims, ttlSeconds: number): Promise<string>;
  verify(token: string): Promise<ScheduleClaims>;
}

/** Signed with the service key (kept apart from the user IdP key, which may be external). */
export async function createScheduleTokens(dataDir: string): Promise<ScheduleTokens> {
  const privateJwk = await loadOrCreateSigningKey(dataDir, 'service-key');
  const { d: _private, ...publicJwk } = privateJwk;
  const privateKey = (await importJWK(privateJwk, SERVICE_KEY_ALG)) as CryptoKey;
  const keys = createLocalJWKSet({ keys: [{ ...publicJwk, alg: SERVICE_KEY_ALG }] });
  return {
    issue: (claims, ttlSeconds) =>
      new SignJWT({ sch: claims.scheduleId, team: claims.teamId, dep: claims.deploymentId })
        .setProtectedHeader({ alg: SERVICE_KEY_ALG, kid: privateJwk.kid })
        .setIssuer(SCHEDULE_TOKEN_ISSUER).setAudience(AUDIENCE).setSubject(`schedule:${claims.scheduleId}`)
        .setIssuedAt().setExpirationTime(`${ttlSeconds}s`)
        .sign(privateKey),
    async verify(token) {
      const { payload } = await jwtVerify(token, keys, {
        issuer: SCHEDULE_TOKEN_ISSUER, audience: AUDIENCE, algorithms: [SERVICE_KEY_ALG], requiredClaims: ['exp', 'sch', 'team', 'dep'],
      });
      const { sch, team, dep } = payload as { sch: unknown; team: unknown; dep: unknown };
      if (typeof sch !== 'string' || typeof team !== 'string' || typeof dep !== 'string') throw new Error('malformed schedule claims');
      return { scheduleId: sch, teamId: team, deploymentId: dep };
    },
  };
}
