import type { Group } from '../harness.ts'; export const httpGroup: Group = { name: 'http', title: 'todo', run: () => Promise.resolve([]) };
