import { z } from 'zod';

export const planCodes = ['free', 'pro', 'business', 'infrastructure'] as const;
export const teamRoles = ['owner', 'admin', 'member'] as const;

export const emailSchema = z.string().trim().toLowerCase().pipe(z.email());
export const displayNameSchema = z.string().trim().min(1).max(200);
/** E.164: a plus sign, then 8 to 15 digits. */
export const phoneSchema = z.string().trim().regex(/^\+[1-9]\d{7,14}$/, 'expected E.164, e.g. +8613800138000');
export const planCodeSchema = z.enum(planCodes);
export const teamRoleSchema = z.enum(teamRoles);
