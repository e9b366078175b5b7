/**
 * Small CodeMirror 6 stream parsers for the IR stages: MLIR (TTIR / TTGIR), LLVM IR, PTX and
 * SASS (JupyterLab's language registry has none of them). Python is not here: the source pane
 * uses JupyterLab's own Python language (languages.ts). Token names are @lezer/highlight tag names.
 *
 * CodeMirror calls `token` as a plain function (no `this`), so a parser never refers to itself
 * through `this`; `tokenize` below calls it the same way.
 */
import { StreamParser, StringStream } from '@codemirror/language';

export type Tok =
  | 'comment'
  | 'string'
  | 'number'
  | 'keyword'
  | 'typeName'
  | 'variableName'
  | 'labelName'
  | 'meta'
  | 'atom'
  | 'operator'
  | 'propertyName'
  | 'variableName.definition'
  | 'bool'
  | null;

interface BlockState {
  inBlockComment: boolean;
  lineStart: boolean;
}

function eatString(stream: StringStream, quote: string): void {
  let escaped = false;
  let ch: string | void;
  while ((ch = stream.next()) !== undefined) {
    if (ch === quote && !escaped) {
      return;
    }
    escaped = !escaped && ch === '\\';
  }
}

const MLIR_TYPES =
  /^(?:tensor|memref|vector|ptr|i1|i8|i16|i32|i64|f8E4M3FN|f8E5M2|f16|bf16|f32|f64|f8E4M3FNUZ|f8E5M2FNUZ|index|none|tf32)\b/;
const MLIR_KEYWORDS =
  /^(?:module|func|attributes|loc|to|step|iter_args|unit|true|false|cst|callsite|fused|at|x)\b/;

export const mlirParser: StreamParser<BlockState> = {
  name: 'mlir',
  startState: () => ({ inBlockComment: false, lineStart: true }),
  token(stream, _state): Tok {
    if (stream.eatSpace()) {
      return null;
    }
    if (stream.match('//')) {
      stream.skipToEnd();
      return 'comment';
    }
    const ch = stream.peek();
    if (ch === '"') {
      stream.next();
      eatString(stream, '"');
      return 'string';
    }
    if (stream.match(/^%[\w$.#-]+/)) {
      return 'variableName';
    }
    if (stream.match(/^\^[\w$.-]+/)) {
      return 'labelName';
    }
    if (stream.match(/^@[\w$.-]+/) || stream.match(/^@"[^"]*"/)) {
      return 'variableName.definition';
    }
    if (stream.match(/^#[\w$.]+/)) {
      return 'meta';
    }
    if (stream.match(/^![\w$.]+/)) {
      return 'typeName';
    }
    if (stream.match(/^0x[0-9a-fA-F]+/) || stream.match(/^-?\d+(\.\d+)?([eE][+-]?\d+)?/)) {
      return 'number';
    }
    // Ops: dialect.op (tt.load, ttg.convert_layout, arith.addi, scf.for)
    if (stream.match(/^[a-z_][\w]*\.[\w.]+/)) {
      return 'keyword';
    }
    if (stream.match(MLIR_TYPES)) {
      return 'typeName';
    }
    if (stream.match(MLIR_KEYWORDS)) {
      return 'keyword';
    }
    if (stream.match(/^[A-Za-z_][\w$]*/)) {
      // Attribute keys: `sizePerThread = [...]`
      if (stream.match(/^\s*=/, false)) {
        return 'propertyName';
      }
      return null;
    }
    if (stream.match(/^(->|=|:|<|>|\*)/)) {
      return 'operator';
    }
    stream.next();
    return null;
  },
  languageData: { commentTokens: { line: '//' } }
};

const LLVM_KEYWORDS =
  /^(?:define|declare|call|tail|ret|br|switch|label|load|store|getelementptr|inbounds|alloca|phi|select|icmp|fcmp|add|sub|mul|fadd|fsub|fmul|fdiv|udiv|sdiv|urem|srem|shl|lshr|ashr|and|or|xor|zext|sext|trunc|bitcast|addrspacecast|inttoptr|ptrtoint|fptrunc|fpext|extractelement|insertelement|extractvalue|insertvalue|shufflevector|asm|sideeffect|nuw|nsw|exact|align|to|target|datalayout|triple|attributes|global|constant|private|internal|external|unreachable|eq|ne|slt|sle|sgt|sge|ult|ule|ugt|uge|oeq|one|olt|ole|ogt|oge|une|uno|ord|nnan|ninf|nsz|arcp|contract|afn|reassoc|fast|noundef|nonnull|readonly|writeonly|nocapture|local_unnamed_addr|unnamed_addr|dso_local|convergent|volatile|atomic|syncscope|monotonic|acquire|release|seq_cst|x)\b/;
const LLVM_TYPES = /^(?:void|ptr|half|bfloat|float|double|i\d+|label|metadata|token)\b/;

export const llvmParser: StreamParser<BlockState> = {
  name: 'llvm',
  startState: () => ({ inBlockComment: false, lineStart: true }),
  token(stream): Tok {
    if (stream.eatSpace()) {
      return null;
    }
    if (stream.peek() === ';') {
      stream.skipToEnd();
      return 'comment';
    }
    if (stream.peek() === '"') {
      stream.next();
      eatString(stream, '"');
      return 'string';
    }
    if (stream.sol() && stream.match(/^[\w.$-]+:/)) {
      return 'labelName';
    }
    if (stream.match(/^%[\w.$-]+/) || stream.match(/^%"[^"]*"/)) {
      return 'variableName';
    }
    if (stream.match(/^@[\w.$-]+/) || stream.match(/^@"[^"]*"/)) {
      return 'variableName.definition';
    }
    if (stream.match(/^![\w.$-]+/)) {
      return 'meta';
    }
    if (stream.match(/^#\d+/)) {
      return 'meta';
    }
    if (stream.match(/^0x[0-9a-fA-F]+/) || stream.match(/^-?\d+(\.\d+)?([eE][+-]?\d+)?/)) {
      return 'number';
    }
    if (stream.match(LLVM_TYPES)) {
      return 'typeName';
    }
    if (stream.match(LLVM_KEYWORDS)) {
      return 'keyword';
    }
    if (stream.match(/^(?:true|false|null|undef|poison|zeroinitializer)\b/)) {
      return 'atom';
    }
    if (stream.match(/^[A-Za-z_][\w.$]*/)) {
      return null;
    }
    stream.next();
    return null;
  },
  languageData: { commentTokens: { line: ';' } }
};

function ptxToken(stream: StringStream, state: BlockState): Tok {
  if (stream.sol()) {
    state.lineStart = true;
  }
  if (state.inBlockComment) {
    if (stream.skipTo('*/')) {
      stream.match('*/');
      state.inBlockComment = false;
    } else {
      stream.skipToEnd();
    }
    return 'comment';
  }
  if (stream.eatSpace()) {
    return null;
  }
  if (stream.match('//')) {
    stream.skipToEnd();
    return 'comment';
  }
  if (stream.match('/*')) {
    state.inBlockComment = true;
    return ptxToken(stream, state) ?? 'comment';
  }
  if (stream.peek() === '"') {
    stream.next();
    eatString(stream, '"');
    return 'string';
  }
  if (stream.match(/^@!?%[\w$]+/)) {
    state.lineStart = true; // the opcode still follows the guard predicate
    return 'atom';
  }
  if (stream.match(/^\$?[\w$]+:/)) {
    return 'labelName';
  }
  if (stream.match(/^\.[a-zA-Z_][\w]*/)) {
    state.lineStart = false;
    return 'meta';
  }
  if (stream.match(/^%[\w$]+/)) {
    return 'variableName';
  }
  if (stream.match(/^0[fFdD][0-9a-fA-F]+/) || stream.match(/^0x[0-9a-fA-F]+/) || stream.match(/^-?\d+(\.\d+)?/)) {
    return 'number';
  }
  if (state.lineStart && stream.match(/^[a-z][\w]*(\.[\w:]+)*/)) {
    state.lineStart = false;
    return 'keyword';
  }
  if (stream.match(/^\$?[A-Za-z_][\w$]*/)) {
    return null;
  }
  stream.next();
  return null;
}

export const ptxParser: StreamParser<BlockState> = {
  name: 'ptx',
  startState: () => ({ inBlockComment: false, lineStart: true }),
  token: ptxToken,
  languageData: { commentTokens: { line: '//', block: { open: '/*', close: '*/' } } }
};

export const sassParser: StreamParser<BlockState> = {
  name: 'sass',
  startState: () => ({ inBlockComment: false, lineStart: true }),
  token(stream, state): Tok {
    if (stream.sol()) {
      state.lineStart = true;
    }
    if (stream.eatSpace()) {
      return null;
    }
    // Address and encoding comments: /*0040*/ ... /* 0x000fe2... */
    if (stream.match(/^\/\*[^*]*\*\//)) {
      return 'comment';
    }
    if (stream.match('//')) {
      stream.skipToEnd();
      return 'comment';
    }
    if (stream.peek() === '"') {
      stream.next();
      eatString(stream, '"');
      return 'string';
    }
    if (stream.match(/^\.[\w.$]+:/)) {
      return 'labelName';
    }
    if (stream.match(/^\.[\w.$]+/)) {
      return 'meta';
    }
    if (stream.match(/^@!?U?P(?:T|\d+)\b/)) {
      return 'atom';
    }
    if (state.lineStart && stream.match(/^[A-Z][A-Z0-9_]*(\.[A-Za-z0-9_]+)*/)) {
      state.lineStart = false;
      return 'keyword';
    }
    if (stream.match(/^(?:U?R(?:Z|\d+)|U?P(?:T|\d+)|B\d+|SR_[\w.]+)\b/)) {
      return 'variableName';
    }
    if (stream.match(/^c\[0x[0-9a-fA-F]+\]/)) {
      return 'atom';
    }
    if (stream.match(/^-?0x[0-9a-fA-F]+/) || stream.match(/^-?\d+(\.\d+)?(e[+-]?\d+)?/)) {
      return 'number';
    }
    if (stream.match(/^[A-Za-z_][\w]*/)) {
      return null;
    }
    stream.next();
    return null;
  },
  languageData: { commentTokens: { line: '//' } }
};

export function parserFor(language: string): StreamParser<any> | null {
  switch (language) {
    case 'mlir':
      return mlirParser;
    case 'llvm':
      return llvmParser;
    case 'ptx':
      return ptxParser;
    case 'sass':
      return sassParser;
    default:
      return null;
  }
}

export interface Token {
  text: string;
  type: string | null;
}

/** Run a stream parser over text outside an editor, calling `token` as CodeMirror does (tests, debugging). */
export function tokenize(parser: StreamParser<any>, text: string): Token[][] {
  const state = parser.startState ? parser.startState(2) : {};
  const out: Token[][] = [];
  for (const line of text.split('\n')) {
    const toks: Token[] = [];
    const stream = new StringStream(line, 4, 2);
    if (line.length === 0 && parser.blankLine) {
      parser.blankLine(state, 2);
    }
    const token = parser.token; // detached, as CodeMirror's StreamLanguage calls it
    while (!stream.eol()) {
      const type = token(stream, state);
      if (stream.pos === stream.start) {
        throw new Error(`parser ${parser.name} made no progress on: ${line}`);
      }
      toks.push({ text: line.slice(stream.start, stream.pos), type: type ?? null });
      stream.start = stream.pos;
    }
    out.push(toks);
  }
  return out;
}

/** True for a notebook cell whose first non-blank line is the `%%tlx` cell magic. */
export function isTlxCell(text: string): boolean {
  const m = /^\s*(\S[^\n]*)/.exec(text);
  return !!m && /^%%tlx(\s|$)/.test(m[1]);
}
