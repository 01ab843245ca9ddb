import type { Group } from '../harness.ts'; export const acpGroup: Group = { name: 'acp', title: 'todo', run: () => Promise.resolve([]) };
