import type { ChannelEventReader } from './index.js';

// To be written (issue 22).
export const readChanBEvents: ChannelEventReader = () => [];
