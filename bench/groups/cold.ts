import type { Group } from '../harness.ts'; export const coldGroup: Group = { name: 'cold', title: 'todo', run: () => Promise.resolve([]) };
