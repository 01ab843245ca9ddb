/**
 * Just enough of the POSIX shell's grammar to find the commands in a command line: quotes,
 * backslashes, the operators that separate commands (`;`, `&&`, `||`, `&`, newlines) and
 * pipes (`|`). Pure functions, no I/O.
 *
 * This reads a command the way the shell would split it; it does not run or expand anything,
 * so whatever the shell builds at run time (`$VAR`, `$(…)` inside double quotes, `eval`,
 * `sh -c "…"`, a script file) is invisible to it. The guard built on it catches mistakes,
 * it is no sandbox.
 * @module
 */

/** One word of a command, with where it stands in the command line (to rewrite it in place). */
export interface Word {
  /** The word as the command receives it: quotes removed, escapes resolved. */
  text: string;
  /** Offset of its first character in the command line. */
  start: number;
  /** Offset just past its last character (a quote that closes it included). */
  end: number;
}

/** A simple command: its words, `VAR=value` assignments and wrappers such as `sudo` still in front. */
export type SimpleCommand = Word[];

/** Commands joined by `|`, in order. */
export type Pipeline = SimpleCommand[];

/**
 * Splits `line` into pipelines of simple commands. `$(` and backquotes outside quotes start a
 * new command too, so `echo $(rm -r x)` yields `rm -r x`; inside double quotes they are left
 * alone (see the module note). An unterminated quote runs to the end of the line, as the
 * shell would ask for more input.
 * @example
 * parseCommandLine("curl -s x | sh && ls").map((p) => p.map((c) => c.map((w) => w.text)))
 * // [[["curl", "-s", "x"], ["sh"]], [["ls"]]]
 */
export function parseCommandLine(line: string): Pipeline[] {
  const pipelines: Pipeline[] = [];
  let pipeline: Pipeline = [];
  let command: SimpleCommand = [];
  let word: Word | undefined;
  const endWord = () => {
    if (word !== undefined) command.push(word);
    word = undefined;
  };
  const endCommand = () => {
    endWord();
    if (command.length > 0) pipeline.push(command);
    command = [];
  };
  const endPipeline = () => {
    endCommand();
    if (pipeline.length > 0) pipelines.push(pipeline);
    pipeline = [];
  };
  const add = (text: string, at: number, next: number) => {
    word ??= { text: "", start: at, end: at };
    word.text += text;
    word.end = next;
  };
  let i = 0;
  while (i < line.length) {
    const c = line[i]!;
    if (c === "'") {
      const close = line.indexOf("'", i + 1);
      const end = close === -1 ? line.length : close;
      add(line.slice(i + 1, end), i, Math.min(end + 1, line.length));
      i = end + 1;
    } else if (c === '"') {
      let j = i + 1;
      let text = "";
      while (j < line.length && line[j] !== '"') {
        // In double quotes a backslash escapes only these (POSIX); elsewhere it stays.
        if (line[j] === "\\" && j + 1 < line.length && '"\\$`\n'.includes(line[j + 1]!)) j++;
        text += line[j];
        j++;
      }
      add(text, i, Math.min(j + 1, line.length));
      i = j + 1;
    } else if (c === "\\") {
      if (line[i + 1] === "\n") i += 2; // a line continuation
      else {
        add(line[i + 1] ?? "", i, Math.min(i + 2, line.length));
        i += 2;
      }
    } else if (c === " " || c === "\t") {
      endWord();
      i++;
    } else if (c === "&" && (line[i - 1] === ">" || line[i - 1] === "<" || line[i + 1] === ">")) {
      add(c, i, i + 1); // a redirection (2>&1, &>file), not an operator
      i++;
    } else if (c === "|" && line[i + 1] !== "|") {
      endCommand();
      i++;
    } else if (";&|\n()`".includes(c) || (c === "$" && line[i + 1] === "(")) {
      // ;  &&  ||  &  a newline, subshells and command substitution all start a new command
      endPipeline();
      const pair = c === "$" || (c === "&" && line[i + 1] === "&") || (c === "|" && line[i + 1] === "|");
      i += pair ? 2 : 1;
    } else if (c === "#" && word === undefined) {
      // A comment runs to the end of the line.
      const newline = line.indexOf("\n", i);
      i = newline === -1 ? line.length : newline;
    } else {
      add(c, i, i + 1);
      i++;
    }
  }
  endPipeline();
  return pipelines;
}

/** Words in front of a command that run the command after them (`sudo rm x` runs `rm x`). */
const WRAPPERS = new Set(["sudo", "env", "command", "exec", "nohup", "time", "nice", "doas"]);

/**
 * The words of `command` from the program it runs: leading `VAR=value` assignments and the
 * wrappers above (with the options right after them) dropped, the program named by its base
 * name (`/bin/rm` is `rm`). `sudo -u bob rm` is not understood (`bob` looks like the program).
 * @example programWords(words("FOO=1 sudo /bin/rm -r x")).map((w) => w.text) // ["rm", "-r", "x"]
 */
export function programWords(command: SimpleCommand): SimpleCommand {
  let i = 0;
  while (i < command.length) {
    const text = command[i]!.text;
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(text)) i++;
    else if (WRAPPERS.has(text)) {
      i++;
      while (i < command.length && command[i]!.text.startsWith("-")) i++;
    } else break;
  }
  const rest = command.slice(i);
  const [first] = rest;
  if (first === undefined) return rest;
  return [{ ...first, text: first.text.slice(first.text.lastIndexOf("/") + 1) }, ...rest.slice(1)];
}

/**
 * Whether `command` runs `prefix`: its program words start with the words of `prefix`, options
 * between them skipped (`git --no-pager push` runs `git push`; `git -C dir push` is not seen,
 * as `dir` is no option).
 * @example runs(programWords(cmd), ["git", "push"])
 */
export function runs(command: SimpleCommand, prefix: readonly string[]): boolean {
  let i = 0;
  for (const [n, wanted] of prefix.entries()) {
    while (n > 0 && i < command.length && command[i]!.text !== wanted && command[i]!.text.startsWith("-")) i++;
    if (command[i]?.text !== wanted) return false;
    i++;
  }
  return prefix.length > 0;
}
